"""KafkaSink: produce each envelope to the sink's own topic and return once the broker confirmed it.

One AIOKafkaProducer per sink, acks=all and idempotent by default (a send the client retries
after a lost answer is written once, in order; a send the runtime retries is within at-least-once). Concurrent
`send` calls share the producer's batches (linger_ms); concurrent `send_many` calls share one open batch per
partition (outbox.py). Where the native core is built, those batches are its BatchWriter
(native/src/batch_writer.rs: the bytes aiokafka's builder would write), filled a partition at a time with no
Python step per record; a sink that adds default headers or compresses keeps aiokafka's builder. The
connection is made on the first `send`, so a gateway starts while its broker is down; every failure to reach
the broker is a retriable AdapterError and the next `send` tries again.

A send the producer did not confirm, unless the broker refused the record itself, retires that producer and
the next send starts a new one. An idempotent producer gives each batch of a partition the next sequence
number when it first leaves; aiokafka fails a batch that outlived `request_timeout_ms` while its partition had
no leader (a restarting broker) without taking its numbers back, and from then on the broker refuses every
later batch of that partition as out of order, for as long as the producer lives. The new producer has a new
producer id and starts its sequences afresh. The same holds after aiokafka's sender task died of an error.

In an exactly-once route (`options.transactional_id`) the sink produces into the route's transaction
(transaction.py), which its source commits together with the consumed offsets.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import random
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

from aiokafka import AIOKafkaProducer  # type: ignore[import-untyped]  # aiokafka ships no type information
from aiokafka.record.default_records import DefaultRecordBatchBuilder  # type: ignore[import-untyped]

from gateway.envelope import Envelope
from gateway.errors import AdapterError, MessageRefused, TransientAdapterError, adapter_failure
from protocol_adapters.base import EndpointConfig
from protocol_adapters.kafka import transaction as transactions
from protocol_adapters.kafka.errors import KafkaError, adapter_error, bootstrap_error
from protocol_adapters.kafka.mapping import OutgoingRecord, forwarded, forwarded_record, outgoing_record
from protocol_adapters.kafka.options import KafkaSinkOptions, sink_options
from protocol_adapters.kafka.outbox import Batch, Outbox
from protocol_adapters.kafka.partitioning import murmur2

try:  # the native core's batch writer (native/src/batch_writer.rs); aiokafka's builder without it
    import xgate_core
except ImportError:  # pragma: no cover - exercised where the extension is absent
    xgate_core = None  # type: ignore[assignment]

log = logging.getLogger("xgate.kafka")

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
        # the open batches every concurrent send_many shares (outbox.py), for the current producer
        self._outbox: Outbox | None = None
        # retired producers flushing what they hold and stopping (`_retire`); closing the sink waits for them
        self._retiring: set[asyncio.Task[None]] = set()

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
        outbox, self._outbox = self._outbox, None
        producer, self._producer = self._producer, None
        # closing: what the producer does not confirm is released by its callers for redelivery
        await self._wind_down(producer, outbox, asyncio.CancelledError())
        if self._retiring:
            await asyncio.gather(*self._retiring, return_exceptions=True)

    async def send(self, envelope: Envelope) -> None:
        options = self.options
        await self._send_one(outgoing_record(envelope, options.default_key, options.default_headers))

    async def _send_one(self, record: OutgoingRecord) -> None:
        if self._transaction is not None:
            await self._send_in_transaction([record])
            return
        producer = self._producer or await self._connect()
        options = self.options
        # aiokafka's `send` refuses a record with neither key nor value (its batches take one): such a
        # tombstone goes with an empty value
        value = b"" if record.value is None and record.key is None else record.value
        try:
            delivered = await producer.send(options.topic, value, key=record.key, partition=options.partition,
                                            timestamp_ms=record.timestamp_ms, headers=record.headers)
            await delivered
        except (TimeoutError, KafkaError, OSError) as exc:
            raise self._unconfirmed(producer, exc) from exc

    async def send_many(self, envelopes: list[Envelope]) -> list[AdapterError | None]:
        """Produce all, then wait once per partition batch; each envelope's failure, or None, in order."""
        options = self.options
        return await self._send_all([outgoing_record(e, options.default_key, options.default_headers)
                                     for e in envelopes])

    async def send_records(self, records: list[Any],
                           added: list[list[tuple[str, str]] | None] | None = None) -> list[AdapterError | None]:
        """`send_many` for aiokafka ConsumerRecords forwarded as they came (value, key, headers, timestamp), each
        with its `added` text headers if any: what a Kafka to Kafka route does with its conformant records and
        its dead letters (their `xgate-*` headers), no Envelope re-mapped for them."""
        if self._writes_natively():
            return await self._send_all(records, added)
        key, defaults = self.options.default_key, self.options.default_headers
        if added is None:
            return await self._send_all([forwarded_record(r, key, defaults) for r in records])
        return await self._send_all([forwarded_record(r, key, defaults, extra or ())
                                     for r, extra in zip(records, added, strict=True)])

    def takes_fetched(self) -> bool:
        """Whether `send_records` takes the native core's `Fetched` (records read in place, fetched.rs) as well as
        a list: where its batches are the core's BatchWriter, outside a transaction."""
        return self._writes_natively() and self._transaction is None

    def _writes_natively(self) -> bool:
        """Whether batches are the native core's BatchWriter, filled a partition at a time without a Python step
        per record: where the core is built and the sink adds no default headers and compresses nothing
        (aiokafka's builder does those)."""
        options = self.options
        return xgate_core is not None and not options.default_headers and options.compression_type is None

    async def _send_all(self, records: list[Any],
                        added: list[list[tuple[str, str]] | None] | None = None) -> list[AdapterError | None]:
        """Produce all, then wait once per partition batch; each record's failure, or None, in order.

        Each record joins the open batch of the partition the producer's own partitioner would choose, which
        concurrent calls share (outbox.py): one future per batch, not per record, and as few batches as the
        producer can take. A partition's records keep their call order. A record the producer would refuse for
        its size goes through `_send_one` alone, so that it fails by itself.

        `records` are OutgoingRecords, or, where the sink `_writes_natively`, ConsumerRecords too (with their
        `added` headers), which the native core reads as they are, or a `Fetched` (`takes_fetched`).
        """
        options = self.options
        if self._transaction is not None:
            await self._send_in_transaction([self._outgoing(records, added, index) for index in range(len(records))])
            return [None] * len(records)
        try:
            producer = self._producer or await self._connect()
            partitions = sorted(await producer.partitions_for(options.topic))
        except AdapterError as exc:
            return [exc] * len(records)
        except (TimeoutError, KafkaError, OSError) as exc:
            return [adapter_error(exc, f"produce to topic {options.topic!r}")] * len(records)
        outbox = self._outbox
        if outbox is None or outbox.producer is not producer:
            native = functools.partial(xgate_core.BatchWriter, options.max_batch_size)
            outbox = self._outbox = Outbox(producer, options.topic, native if self._writes_natively() else None)
        if self._writes_natively():
            joined, alone = self._join_natively(outbox, records, added, partitions)
        else:
            joined, alone = self._join(outbox, records, partitions)
        failures: list[AdapterError | None] = [None] * len(records)
        for index in alone:  # too large for a batch: refused (or sent) on its own
            try:
                await self._send_one(self._outgoing(records, added, index))
            except AdapterError as exc:
                failures[index] = exc
        if joined:
            # asyncio.wait, not gather: a caller cancelled while it waits must not cancel a batch other callers'
            # records share (wait leaves the futures alone), and it costs one waiter for all of them
            await asyncio.wait([batch.delivered for batch, _ in joined])
        for batch, indexes in joined:
            outcome = batch.delivered.exception()
            if isinstance(outcome, BaseException) and not isinstance(outcome, Exception):
                raise outcome  # cancelled: shutdown, not a failed delivery
            if isinstance(outcome, Exception):
                failed = self._unconfirmed(producer, outcome)
                for index in indexes:
                    failures[index] = failed
        return failures

    def _join(self, outbox: Outbox, records: list[OutgoingRecord],
              partitions: list[int]) -> tuple[list[tuple[Batch, list[int]]], list[int]]:
        """Each record into its partition's open batch, one by one: the batches joined (each with the indexes
        of the records in it) and the indexes of the records too large for any."""
        options = self.options
        partition_of = _partitioner(options, partitions)
        joined: dict[int, tuple[Batch, list[int]]] = {}  # by id(batch): the batch, this call's records in it
        alone: list[int] = []
        for index, record in enumerate(records):
            value, key, headers, _ = record
            if _estimated_size(key, value, headers) > options.max_request_size:
                alone.append(index)  # the producer refuses it: through `send`, to fail by itself
                continue
            batch = outbox.add(partition_of(key), record)
            entry = joined.get(id(batch))
            if entry is None:
                joined[id(batch)] = (batch, [index])
            else:
                entry[1].append(index)
        return list(joined.values()), alone

    def _join_natively(self, outbox: Outbox, records: list[Any], added: list[Any] | None,
                       partitions: list[int]) -> tuple[list[tuple[Batch, list[int]]], list[int]]:
        """`_join` in native calls: the partitioner and size check over all records at once (`partition_records`),
        then each partition's records into its batches (`Outbox.extend`, one call a batch)."""
        options = self.options
        keyless = random.choice(partitions)  # as _partitioner: one partition a call for keyless records
        groups, alone = xgate_core.partition_records(records, partitions, keyless, options.partition,
                                                     options.max_request_size, options.default_key, added)
        joined: list[tuple[Batch, list[int]]] = []
        for partition, indexes in groups:
            joined += outbox.extend(partition, records, indexes, options.default_key, added)
        return joined, alone

    def _outgoing(self, records: list[Any], added: list[Any] | None, index: int) -> OutgoingRecord:
        """Record `index` as an OutgoingRecord (a ConsumerRecord, or one of a `Fetched`, forwarded with its added
        headers, if any)."""
        options = self.options
        extra = (added[index] or ()) if added is not None else ()
        if not isinstance(records, list):  # a Fetched: its fields
            _, timestamp, _, key, value, headers = records.record(index)
            return forwarded(key, value, headers, timestamp, options.default_key, options.default_headers, extra)
        record = records[index]
        if isinstance(record, OutgoingRecord):
            return record
        return forwarded_record(record, options.default_key, options.default_headers, extra)

    def _unconfirmed(self, producer: Any, exc: BaseException) -> AdapterError:
        """The AdapterError for a send `producer` did not confirm; unless the broker refused the record itself,
        the producer is retired (module docstring: its sequence numbers may be spent)."""
        error = adapter_error(exc, f"produce to topic {self.options.topic!r}")
        if not isinstance(error, MessageRefused) and self._producer is producer:
            log.warning("Kafka sink %r: a send was not confirmed (%s); the next send starts a new producer",
                        self.options.endpoint_id, error)
            self._retire(producer)
        return error

    def _retire(self, producer: Any) -> None:
        """Stop using the current `producer`: the next send starts a new one. The old one hands back what it holds
        in the background; what it never answers fails as retriable."""
        outbox, self._producer, self._outbox = self._outbox, None, None
        retired = TransientAdapterError(f"Kafka: the producer for topic {self.options.topic!r} was replaced "
                                        "after a failed send; sent again by the next one")
        task = asyncio.create_task(self._wind_down(producer, outbox, retired))
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)

    async def _wind_down(self, producer: Any, outbox: Outbox | None, failure: BaseException) -> None:
        """Stop handing `outbox`'s batches over (the queued ones fail with `failure`), stop `producer` (it flushes
        what it took, bounded), then fail with `failure` whatever it took and never answered."""
        if outbox is not None:
            await outbox.close(failure)
        if producer is not None:
            await _stop(producer, self.options.connection.connect_timeout)
        if outbox is not None:
            outbox.abandon(failure)

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


def _partitioner(options: KafkaSinkOptions, partitions: list[int]) -> Callable[[bytes | None], int]:
    """The partition the producer's default partitioner picks for a key (murmur2, as Java's client); a record
    without a key goes to one partition per call, as a sticky partitioner would, unless the sink names one."""
    if options.partition is not None:
        fixed = options.partition
        return lambda key: fixed
    keyless = random.choice(partitions)
    count = len(partitions)
    return lambda key: keyless if key is None else partitions[(murmur2(key) & 0x7FFFFFFF) % count]


def create_sink(config: EndpointConfig) -> KafkaSink:
    return KafkaSink(sink_options(config))
