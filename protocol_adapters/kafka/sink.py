"""KafkaSink: produce each envelope to the sink's own topic and return once the broker confirmed it.

One AIOKafkaProducer per sink, acks=all and idempotent by default (a send the client retries
after a lost answer is written once, in order; a send the runtime retries is within at-least-once). Concurrent
`send` calls share the producer's batches (linger_ms). The connection is made on the first
`send`, so a gateway starts while its broker is down; every failure to reach the broker is a
retriable AdapterError and the next `send` tries again.

In an exactly-once route (`options.transactional_id`) the sink produces into the route's transaction
(transaction.py), which its source commits together with the consumed offsets.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from types import TracebackType
from typing import Any, Self

from aiokafka import AIOKafkaProducer  # type: ignore[import-untyped]  # aiokafka ships no type information
from aiokafka.record.default_records import DefaultRecordBatchBuilder  # type: ignore[import-untyped]

from gateway.envelope import Envelope
from gateway.errors import AdapterError, adapter_failure
from protocol_adapters.base import EndpointConfig
from protocol_adapters.kafka import transaction as transactions
from protocol_adapters.kafka.errors import KafkaError, adapter_error, bootstrap_error
from protocol_adapters.kafka.mapping import OutgoingRecord, forwarded_record, outgoing_record
from protocol_adapters.kafka.options import KafkaSinkOptions, sink_options
from protocol_adapters.kafka.partitioning import murmur2

# seconds during which a failed connection attempt answers every send without trying again
_RETRY_AFTER = 0.5
# the size the producer gives a record, as it checks it against max_request_size (looked up once, used per record)
_estimated_size = DefaultRecordBatchBuilder.estimate_size_in_bytes


class KafkaSink:
    def __init__(self, options: KafkaSinkOptions) -> None:
        self.options = options
        self._producer: Any = None
        self._kwargs: dict[str, Any] | None = None
        self._lock = asyncio.Lock()
        self._closed = False
        # the last failed connection attempt: concurrent senders share it instead of queueing attempts
        self._failure: tuple[float, AdapterError] | None = None
        self._transaction: transactions.KafkaTransaction | None = None

    async def __aenter__(self) -> Self:
        options = self.options
        try:
            # built here so that a bad TLS file fails at startup, not at the first message
            kwargs = options.connection.client_kwargs()
        except (OSError, ValueError) as exc:
            raise AdapterError(f"Kafka sink {options.endpoint_id!r}: bad TLS settings: {exc}") from exc
        kwargs.update(
            acks=options.acks,
            enable_idempotence=options.idempotent,
            linger_ms=options.linger_ms,
            max_batch_size=options.max_batch_size,
            max_request_size=options.max_request_size,
            compression_type=options.compression_type,
        )
        self._kwargs = kwargs
        self._closed = False
        if options.transactional_id is not None:
            self._transaction = transactions.acquire(options.transactional_id, {
                k: v for k, v in kwargs.items() if k not in ("acks", "enable_idempotence")})
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self._closed = True
        transaction, self._transaction = self._transaction, None
        if transaction is not None:
            await transactions.release(transaction, self.options.connection.connect_timeout)
        producer, self._producer = self._producer, None
        if producer is not None:
            await _stop(producer, self.options.connection.connect_timeout)

    async def send(self, envelope: Envelope) -> None:
        options = self.options
        await self._send_one(outgoing_record(envelope, options.default_key, options.default_headers))

    async def _send_one(self, record: OutgoingRecord) -> None:
        if self._transaction is not None:
            await self._send_in_transaction([record])
            return
        producer = self._producer or await self._connect()
        options = self.options
        try:
            delivered = await producer.send(options.topic, record.value, key=record.key, partition=options.partition,
                                            timestamp_ms=record.timestamp_ms, headers=record.headers)
            await delivered
        except (TimeoutError, KafkaError, OSError) as exc:
            raise adapter_error(exc, f"produce to topic {options.topic!r}") from exc

    async def send_many(self, envelopes: list[Envelope]) -> list[AdapterError | None]:
        """Produce all, then wait once per partition batch; each envelope's failure, or None, in order."""
        options = self.options
        return await self._send_all([outgoing_record(e, options.default_key, options.default_headers)
                                     for e in envelopes])

    async def send_records(self, records: list[Any]) -> list[AdapterError | None]:
        """`send_many` for aiokafka ConsumerRecords forwarded as they came (value, key, headers, timestamp):
        what a Kafka to Kafka route does with its conformant records, no Envelope made for them."""
        options = self.options
        return await self._send_all([forwarded_record(r, options.default_key, options.default_headers)
                                     for r in records])

    async def _send_all(self, records: list[OutgoingRecord]) -> list[AdapterError | None]:
        """Produce all, then wait once per partition batch; each record's failure, or None, in order.

        The records are grouped by the partition the producer's own partitioner would choose and handed over
        as one closed batch per partition (what a raw aiokafka pass-through does): one future per batch, not
        per record. Batches of one partition are queued in call order, so per-partition order is kept. A record
        the producer would refuse for its size goes through `_send_one` alone, so that it fails by itself.
        """
        options = self.options
        if self._transaction is not None:
            await self._send_in_transaction(records)
            return [None] * len(records)
        try:
            producer = self._producer or await self._connect()
            partitions = sorted(await producer.partitions_for(options.topic))
        except AdapterError as exc:
            return [exc] * len(records)
        except (TimeoutError, KafkaError, OSError) as exc:
            return [adapter_error(exc, f"produce to topic {options.topic!r}")] * len(records)
        plan = _BatchPlan(producer, options, partitions)
        for index, record in enumerate(records):
            plan.add(index, record)
        failures: list[AdapterError | None] = [None] * len(records)
        waits: list[tuple[list[int], Any]] = []
        for partition, batch, indexes in plan.batches():
            try:
                waits.append((indexes, await producer.send_batch(batch, options.topic, partition=partition)))
            except (TimeoutError, KafkaError, OSError) as exc:
                refused = adapter_error(exc, f"produce to topic {options.topic!r}")
                for index in indexes:
                    failures[index] = refused
        for index in plan.alone:  # too large for a batch: refused (or sent) on its own
            try:
                await self._send_one(records[index])
            except AdapterError as exc:
                failures[index] = exc
        outcomes = await asyncio.gather(*(wait for _, wait in waits), return_exceptions=True)
        for (indexes, _), outcome in zip(waits, outcomes):
            if isinstance(outcome, BaseException) and not isinstance(outcome, Exception):
                raise outcome  # cancelled: shutdown, not a failed delivery
            if isinstance(outcome, Exception):
                failed = adapter_error(outcome, f"produce to topic {options.topic!r}")
                for index in indexes:
                    failures[index] = failed
        return failures

    async def _send_in_transaction(self, outgoing: list[OutgoingRecord]) -> None:
        """Into the route's open transaction; a failure there aborts it and the source reads the records again."""
        assert self._transaction is not None
        options = self.options
        records: list[tuple[bytes | None, dict[str, Any]]] = [
            (record.value, {"key": record.key, "partition": options.partition, "timestamp_ms": record.timestamp_ms,
                            "headers": record.headers}) for record in outgoing]
        try:
            await self._transaction.send(options.topic, records)
        except (TimeoutError, KafkaError, OSError) as exc:  # the transaction could not even start
            raise adapter_error(exc, f"produce to topic {options.topic!r}") from exc

    async def _connect(self) -> Any:
        if self._kwargs is None or self._closed:
            raise AdapterError("Kafka sink used outside `async with`")
        loop = asyncio.get_running_loop()
        async with self._lock:
            if self._producer is not None:
                return self._producer
            if self._failure is not None and loop.time() - self._failure[0] < _RETRY_AFTER:
                failure = self._failure[1]
                raise adapter_failure(str(failure), retriable=failure.retriable)
            producer = AIOKafkaProducer(**self._kwargs)
            try:
                async with asyncio.timeout(self.options.connection.connect_timeout):
                    await producer.start()
            except (TimeoutError, KafkaError, OSError) as exc:
                await _stop(producer, self.options.connection.connect_timeout)
                servers = ",".join(self.options.connection.bootstrap_servers)
                error = await bootstrap_error(exc, self._kwargs, f"connect to {servers}")
                self._failure = (loop.time(), error)
                raise error from exc
            self._producer, self._failure = producer, None
            return producer


async def _stop(producer: Any, timeout: float) -> None:
    """Flush and close, bounded: a producer whose broker is gone would otherwise wait for every batch to expire."""
    with contextlib.suppress(KafkaError, OSError, TimeoutError):
        async with asyncio.timeout(timeout):
            await producer.stop()


class _BatchPlan:
    """One `send_many` call's records grouped into closed producer batches, one open batch per partition.

    The partition is the one the producer's default partitioner picks (murmur2 of the key, as Java's
    client; a record without a key joins one partition per call, as a sticky partitioner would), unless the
    sink names its partition.
    """

    def __init__(self, producer: Any, options: KafkaSinkOptions, partitions: list[int]) -> None:
        self._producer = producer
        self._max_request_size = options.max_request_size
        self._fixed = options.partition is not None
        self._partitions = partitions
        self._keyless = options.partition if options.partition is not None else \
            random.choice(partitions)
        self._open: dict[int, tuple[Any, list[int]]] = {}
        self._full: list[tuple[int, Any, list[int]]] = []
        self.alone: list[int] = []

    def add(self, index: int, record: OutgoingRecord) -> None:
        value, key, headers, timestamp_ms = record
        if _estimated_size(key, value, headers) > self._max_request_size:
            self.alone.append(index)  # the producer refuses it: through `send`, to fail by itself
            return
        if self._fixed or key is None:
            partition = self._keyless
        else:
            partitions = self._partitions
            partition = partitions[(murmur2(key) & 0x7FFFFFFF) % len(partitions)]
        entry = self._open.get(partition)
        if entry is None:
            entry = self._open[partition] = (self._producer.create_batch(), [])
        batch, indexes = entry
        if batch.append(timestamp=timestamp_ms, key=key, value=value, headers=headers) is None:
            # full: closed, a new one for the rest
            self._full.append((partition, batch, indexes))
            entry = self._open[partition] = (self._producer.create_batch(), [])
            batch, indexes = entry
            batch.append(timestamp=timestamp_ms, key=key, value=value, headers=headers)
        indexes.append(index)

    def batches(self) -> list[tuple[int, Any, list[int]]]:
        """Every batch, closed (nothing the producer's `send` adds may join it), full ones of a partition first."""
        done = self._full + [(partition, batch, indexes) for partition, (batch, indexes) in self._open.items()]
        for _, batch, _ in done:
            batch.close()
        return done


def create_sink(config: EndpointConfig) -> KafkaSink:
    return KafkaSink(sink_options(config))
