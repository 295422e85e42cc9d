"""TransactionalKafkaSource: the source of an exactly-once Kafka-to-Kafka route.

Its Kafka sinks produce into the route's transaction (transaction.py). Where the plain source commits
offsets, this one ends a transaction at a barrier: it stops handing out records, waits until every record
handed out was acknowledged (its outputs confirmed by the broker), then commits the transaction with the
acknowledged offsets in it, so outputs and offsets become visible together. A released record (nack) or
a failed produce aborts the transaction instead, and every assigned partition is read again from its last
committed offset: a `read_committed` consumer of the destinations sees each source record once, across
crashes (the next holder of the transactional id aborts what a killed gateway left open).
Records handed out before an abort carry the old epoch; their late acknowledgements are ignored.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, Self

from aiokafka.errors import ProducerFenced  # type: ignore[import-untyped]

from gateway.envelope import Envelope
from gateway.errors import AdapterError
from protocol_adapters.kafka import transaction as transactions
from protocol_adapters.kafka.errors import KafkaError, bootstrap_error
from protocol_adapters.kafka.mapping import record_envelope
from protocol_adapters.kafka.offsets import PartitionOffsets
from protocol_adapters.kafka.options import KafkaSourceOptions
from protocol_adapters.kafka.source import KafkaSource


class TransactionalKafkaSource(KafkaSource):
    # its acknowledgements settle transactions (by Envelope): records go through the general pipeline
    forwards_records = False

    def __init__(self, options: KafkaSourceOptions) -> None:
        super().__init__(options)
        assert options.transactional_id is not None
        self._transaction: transactions.KafkaTransaction | None = None
        self._unsettled = 0  # records handed out in this epoch and not yet acknowledged or released
        self._rewind = False  # a record was released: the open transaction must abort
        self._open = asyncio.Event()  # cleared while a barrier holds records back
        self._open.set()
        self._fenced: AdapterError | None = None  # another gateway took the transactional id over

    def consumer_settings(self) -> dict[str, Any]:
        return {"isolation_level": "read_committed"}  # never read what an upstream transaction may abort

    async def __aenter__(self) -> Self:
        options = self.options
        try:
            kwargs = options.connection.client_kwargs()
        except (OSError, ValueError) as exc:
            raise AdapterError(f"Kafka source {options.endpoint_id!r}: bad TLS settings: {exc}") from exc
        transaction = transactions.acquire(str(options.transactional_id), {**kwargs, "linger_ms": 5})
        transaction.on_failure = self._failed
        try:
            async with asyncio.timeout(options.connection.connect_timeout):
                await transaction.start()
            entered = await super().__aenter__()
        except (TimeoutError, KafkaError, OSError) as exc:
            await transactions.release(transaction, options.connection.connect_timeout)
            servers = ",".join(options.connection.bootstrap_servers)
            raise await bootstrap_error(exc, kwargs, f"start a transaction on {servers}") from exc
        except BaseException:
            await transactions.release(transaction, options.connection.connect_timeout)
            raise
        self._transaction = transaction
        return entered

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        try:
            await super().__aexit__(exc_type, exc, tb)  # its last commit ends the open transaction
        finally:
            transaction, self._transaction = self._transaction, None
            if transaction is not None:
                await transactions.release(transaction, self.options.connection.connect_timeout)

    async def __aiter__(self) -> AsyncIterator[Envelope]:
        async for envelope in super().__aiter__():
            await self._open.wait()
            if self._fenced is not None:
                raise self._fenced
            if envelope.ack[2] != self._epoch():
                continue  # fetched before an abort: read again from the last commit
            self._unsettled += 1
            yield envelope
        if self._fenced is not None:
            raise self._fenced

    def take_ready(self, limit: int) -> list[Envelope]:
        if not self._open.is_set():
            return []
        taken = super().take_ready(limit)
        self._unsettled += len(taken)
        return taken

    def envelope(self, handle: tuple[Any, Any]) -> Envelope:
        return record_envelope(handle[1], self.options.endpoint_id, (*handle, self._epoch()))

    def _acknowledge(self, envelope: Envelope) -> None:
        if envelope.ack[2] != self._epoch():
            return  # read under a transaction that was aborted since: its next reading is acknowledged instead
        self._unsettled -= 1
        super()._acknowledge(envelope)

    async def nack(self, envelope: Envelope) -> None:
        if envelope.ack[2] != self._epoch():
            return
        self._unsettled -= 1
        self._rewind = True
        self._commit_now.set()
        self._acked.set()

    def _failed(self) -> None:
        self._commit_now.set()
        self._acked.set()

    def _epoch(self) -> int:
        return self._transaction.epoch if self._transaction is not None else 0

    async def _commit(self, consumer: Any, partitions: Any = None) -> None:
        """The barrier: hold records back, let the handed-out ones settle, then commit or abort-and-rewind."""
        transaction = self._transaction
        if transaction is None:
            return
        async with self._commit_lock:
            self._open.clear()
            try:
                while self._unsettled > 0 and transaction.failed is None:
                    self._acked.clear()
                    await self._acked.wait()
                if isinstance(transaction.failed, ProducerFenced):
                    self._fence(transaction.failed)
                if transaction.failed is not None or self._rewind:
                    try:
                        await self._abort_and_rewind(consumer, transaction)
                    except ProducerFenced as exc:
                        self._fence(exc)
                    return
                offsets = {tp: offset for tp, part in self._parts.items()
                           if tp in consumer.assignment() and (offset := part.pending_commit()) is not None}
                if not offsets:
                    return
                try:
                    await transaction.commit(offsets, self.options.group_id)
                except ProducerFenced as exc:
                    self._fence(exc)
                    return
                except (KafkaError, OSError, TimeoutError):
                    self._rewind = True  # the next barrier aborts it and reads again
                    raise
                self._acks_since_commit = 0
                for tp, offset in offsets.items():
                    self._parts[tp].committed = offset
            finally:
                self._open.set()

    def _fence(self, exc: BaseException) -> None:
        """Another process holds the transactional id now: stop this route instead of fighting over it."""
        self._fenced = AdapterError(
            f"Kafka source {self.options.endpoint_id!r}: transactional id {self.options.transactional_id!r} was taken "
            f"over by another gateway ({exc}); an exactly-once route runs in one gateway at a time")
        self._stopping.set()
        self._acked.set()

    async def _abort_and_rewind(self, consumer: Any, transaction: transactions.KafkaTransaction) -> None:
        await transaction.abort()
        self._rewind, self._unsettled = False, 0
        self._ready.clear()
        for tp in consumer.assignment():
            self._parts[tp] = PartitionOffsets()
            committed = await consumer.committed(tp)
            if committed is not None:
                consumer.seek(tp, committed)
            elif self.options.auto_offset_reset == "latest":
                await consumer.seek_to_end(tp)
            else:
                await consumer.seek_to_beginning(tp)

