"""KafkaSource: a consumer-group member that commits only offsets whose messages were acknowledged.

Offsets are tracked per partition in the order the records were handed out. `ack` marks one;
the committable offset is one past the longest acknowledged prefix (acks for 5, 6 and 8 with 7
outstanding commit 7), so nothing after an unacknowledged record is ever committed. Commits go
out every `commit_interval_ms`, after `commit_every` acks, on partition revocation and on close.
`nack` hands the record out again (from memory, ahead of new ones); it keeps holding its
partition's commit point until acknowledged, so a revocation or close in between leaves it to be
read again from the broker. When `max_unacked` records are outstanding the partitions are paused
(backpressure) while the consumer keeps polling so it stays in its group. aiokafka reconnects
by itself after a broker restart; fetch errors it raises are retried with exponential backoff.

A batch the client cannot read (a codec it lacks, a bad CRC) would fail every fetch from its offset on,
forever. Its partition is found, the batch stepped over offset by offset to the first record the client
can read, and the skipped offsets count as delivered (committed once what came before is acknowledged),
logged with their range and counted (`unreadable`, taken by the pipeline into
`xgate_undeliverable_messages_total{cause="unreadable"}`): the route goes on (issue 35, item 3).

A source that reads in place (`read_in_place`, a Kafka to Kafka route's: gateway/runtime/record_lane.py)
hands out each plain batch of a fetch whole, as an InPlaceBatch (in_place.py), tracked by its last offset and
counted as the messages it holds; `expand` turns one back into its records where it must be settled one by one.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Any, Self

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener  # type: ignore[import-untyped]  # untyped library
from aiokafka.errors import CorruptRecordException, UnsupportedCodecError  # type: ignore[import-untyped]

from gateway import backoff
from gateway.envelope import Envelope
from gateway.errors import AdapterError
from protocol_adapters.base import Delivery
from protocol_adapters.kafka import in_place
from protocol_adapters.kafka.errors import KafkaError, adapter_error, bootstrap_error, is_retriable
from protocol_adapters.kafka.fetch_pacing import FetchPacing
from protocol_adapters.kafka.in_place import InPlaceBatch
from protocol_adapters.kafka.mapping import record_envelope
from protocol_adapters.kafka.offsets import PartitionOffsets
from protocol_adapters.kafka.options import KafkaSourceOptions

_POLL_MS = 200
# how long a probe for the partition of an unreadable batch waits for that partition's records
_PROBE_MS = 1000
# what the client raises for a batch it cannot read: it would raise it again on every fetch from there
UNREADABLE = (CorruptRecordException, UnsupportedCodecError)
log = logging.getLogger("xgate.kafka")
# longest a revocation waits for records already handed out to be delivered before it commits
_SETTLE_SECONDS = 5.0
# a record's bytes in its batch beyond its key and value (lengths, deltas, attributes), about
_RECORD_FRAMING = 16


class KafkaSource:
    # its records may be judged and forwarded as they came (gateway/runtime/record_lane.py): acknowledged by
    # their (TopicPartition, record) handles, no Envelope made for them
    forwards_records = True

    def __init__(self, options: KafkaSourceOptions) -> None:
        self.options = options
        self._consumer: Any = None
        self._parts: dict[Any, PartitionOffsets] = {}
        # (TopicPartition, record) fetched and not yet handed out
        self._ready: collections.deque[tuple[Any, Any]] = collections.deque()
        self._stopping = asyncio.Event()
        self._acked = asyncio.Event()
        self._commit_now = asyncio.Event()
        self._commit_lock = asyncio.Lock()
        self._acks_since_commit = 0
        self._committer: asyncio.Task[None] | None = None
        self.unreadable = 0  # records skipped as unreadable, not yet taken (take_unreadable)
        self.in_place = False  # plain batches handed out whole (read_in_place)
        self._pacing: FetchPacing | None = None  # the fetch minimum following the rate (fetch_pacing.py)

    def read_in_place(self) -> bool:
        """Hand out plain batches whole from the next connection on (module docstring), where the native core
        is built and the source reads uncommitted records (a committed read leaves aborted ones to aiokafka);
        whether it will."""
        self.in_place = in_place.available() and self.consumer_settings().get("isolation_level") == "read_uncommitted"
        if self.in_place:
            in_place.install()
        return self.in_place

    async def __aenter__(self) -> Self:
        options = self.options
        try:
            kwargs = options.connection.client_kwargs()
        except (OSError, ValueError) as exc:
            raise AdapterError(f"Kafka source {options.endpoint_id!r}: bad TLS settings: {exc}") from exc
        consumer = AIOKafkaConsumer(
            group_id=options.group_id,
            group_instance_id=options.group_instance_id,
            enable_auto_commit=False,
            auto_offset_reset=options.auto_offset_reset,
            session_timeout_ms=options.session_timeout_ms,
            heartbeat_interval_ms=options.heartbeat_interval_ms,
            rebalance_timeout_ms=options.rebalance_timeout_ms,
            max_poll_interval_ms=options.max_poll_interval_ms,
            max_partition_fetch_bytes=options.max_partition_fetch_bytes,
            fetch_max_wait_ms=options.fetch_max_wait_ms,
            fetch_min_bytes=options.fetch_min_bytes,
            retry_backoff_ms=100,
            value_deserializer=in_place.read_in_place if self.in_place else None,
            **self.consumer_settings(),
            **kwargs,
        )
        consumer.subscribe(list(options.topics), listener=_Rebalance(self))
        try:
            async with asyncio.timeout(options.connection.connect_timeout):
                await consumer.start()
        except (TimeoutError, KafkaError, OSError) as exc:
            with contextlib.suppress(KafkaError, OSError, TimeoutError):
                async with asyncio.timeout(options.connection.connect_timeout):
                    await consumer.stop()
            servers = ",".join(options.connection.bootstrap_servers)
            raise await bootstrap_error(exc, kwargs, f"connect to {servers}") from exc
        self._consumer = consumer
        self._pacing = FetchPacing.attach(consumer, options.fetch_pacing_ms, options.max_partition_fetch_bytes)
        self._stopping.clear()
        self._committer = asyncio.create_task(self._commit_loop(), name=f"kafka-commit-{options.endpoint_id}")
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self._stopping.set()
        consumer, self._consumer = self._consumer, None
        if self._committer is not None:
            self._committer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._committer
            self._committer = None
        if consumer is None:
            return
        timeout = self.options.connection.connect_timeout
        with contextlib.suppress(KafkaError, OSError, TimeoutError):
            async with asyncio.timeout(timeout):
                await self._commit(consumer)
        with contextlib.suppress(KafkaError, OSError, TimeoutError):
            async with asyncio.timeout(timeout):
                await consumer.stop()
        # whatever was handed out and not acknowledged is read again by the next member
        self._parts.clear()
        self._ready.clear()

    def consumer_settings(self) -> dict[str, Any]:
        """More AIOKafkaConsumer settings (a transactional source reads committed records only)."""
        return {"isolation_level": self.options.isolation_level}

    def envelope(self, handle: tuple[Any, Any]) -> Envelope:
        """The envelope of a fetched record; its ack handle is (TopicPartition, record)."""
        return record_envelope(handle[1], self.options.endpoint_id, handle)

    async def __aiter__(self) -> AsyncIterator[Envelope]:
        envelope = self.envelope
        async for handle in self.handles():
            yield envelope(handle)

    async def handles(self) -> AsyncIterator[tuple[Any, Any]]:
        """Each record as its (TopicPartition, record) handle, fetching (with backoff) as needed, until stopped."""
        ready = self._ready
        failures = 0  # in a row: the next retry waits longer
        while True:
            while ready:
                yield ready.popleft()
            consumer = self._consumer
            if consumer is None or self._stopping.is_set():
                return
            try:
                await self._fetch(consumer)
                failures = 0
            except UNREADABLE as exc:
                await self._skip_unreadable(consumer, exc)
            except (TimeoutError, KafkaError, OSError) as exc:
                if not is_retriable(exc):
                    raise adapter_error(exc, f"consume from {', '.join(self.options.topics)}") from exc
                await self._sleep(backoff.delay_at(failures, 0.1, self.options.backoff_max))
                failures += 1

    def take_ready(self, limit: int) -> list[Envelope]:
        """Records already fetched, without waiting: the pipeline judges and delivers them as one batch."""
        envelope = self.envelope
        return [envelope(handle) for handle in self.take_ready_handles(limit)]

    def take_ready_handles(self, limit: int) -> list[tuple[Any, Any]]:
        """`take_ready` as the records' handles (gateway/runtime/record_lane.py takes them so): up to `limit`
        messages, a batch read in place counted as the messages it holds."""
        if self._stopping.is_set():
            return []
        ready = self._ready
        take = ready.popleft
        if not self.in_place:
            return [take() for _ in range(min(limit, len(ready)))]
        taken: list[tuple[Any, Any]] = []
        while ready and limit > 0:
            weight = self.weight(ready[0])
            if weight > limit and taken:
                break
            taken.append(take())
            limit -= weight
        return taken

    @staticmethod
    def weight(handle: tuple[Any, Any]) -> int:
        """The messages a handle stands for: a batch read in place its records, a record one."""
        item = handle[1]
        return item.count if item.__class__ is InPlaceBatch else 1

    def expand(self, handles: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
        """`handles` with each batch read in place replaced by its records' handles, tracked from now on by their
        own offsets (to be settled one by one); the same list when none is."""
        if not any(handle[1].__class__ is InPlaceBatch for handle in handles):
            return handles
        out: list[tuple[Any, Any]] = []
        for handle in handles:
            tp, item = handle[0], handle[1]
            if item.__class__ is not InPlaceBatch:
                out.append(handle)
                continue
            records = in_place.records_of(tp, item)
            part = self._parts.get(tp)
            if part is not None and part.pending(item.offset):
                part.expand(item.offset, [record.offset for record in records])
            out += [(tp, record) for record in records]
        return out

    async def ack(self, envelope: Envelope, delivery: Delivery | None = None) -> None:
        self._acknowledge(envelope)
        self._acked.set()

    async def ack_many(self, envelopes: list[Envelope]) -> None:
        """A batch delivered: its offsets acknowledged in one call (the delivery outcome means nothing here)."""
        acknowledge = self._acknowledge
        for envelope in envelopes:
            acknowledge(envelope)
        self._acked.set()

    async def ack_handles(self, handles: list[tuple[Any, Any]]) -> None:
        """`ack_many` by the records' handles, each partition's offsets in one step."""
        offsets: dict[Any, list[int]] = {}
        for handle in handles:  # a transactional source's handle carries an epoch too
            tp = handle[0]
            mine = offsets.get(tp)
            if mine is None:
                mine = offsets[tp] = []
            mine.append(handle[1].offset)
        for tp, mine in offsets.items():
            part = self._parts.get(tp)
            if part is not None and part.ack_many(mine):
                self._acks_since_commit += len(mine)
        if self._acks_since_commit >= self.options.commit_every > 0:
            self._commit_now.set()
        self._acked.set()

    def _acknowledge(self, envelope: Envelope) -> None:
        self._acknowledge_handle(envelope.ack)

    def _acknowledge_handle(self, handle: tuple[Any, ...]) -> None:
        tp, record = handle[0], handle[1]  # a transactional source's handle carries an epoch too
        part = self._parts.get(tp)
        if part is not None and part.ack(record.offset):
            self._acks_since_commit += 1
            if self._acks_since_commit >= self.options.commit_every > 0:
                self._commit_now.set()

    async def nack(self, envelope: Envelope) -> None:
        await self.nack_handle(envelope.ack)

    async def nack_handle(self, handle: tuple[Any, ...]) -> None:
        """`nack` by the record's (or batch's) handle."""
        tp, record = handle[0], handle[1]
        part = self._parts.get(tp)
        # handed out again from memory, first: it stays uncommitted (and so blocks the commit point of its
        # partition) until acknowledged; if the partition is revoked first, its next owner reads it from the broker
        if part is not None and self._consumer is not None and part.pending(record.offset):
            self._ready.appendleft((tp, record))
            self._acked.set()

    async def stop(self) -> None:
        self._stopping.set()
        self._acked.set()

    async def _fetch(self, consumer: Any) -> None:
        """One poll: hand the records to the ready queue, or pause everything while too much is unacknowledged."""
        options = self.options
        room = options.max_unacked - sum(part.messages for part in self._parts.values())
        if room <= 0:
            consumer.pause(*consumer.assignment())
            self._acked.clear()
            # keep polling (nothing comes back while paused) so the group does not drop this member
            await consumer.getmany(timeout_ms=0)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_POLL_MS / 1000):
                    await self._acked.wait()
            return
        if consumer.paused():
            consumer.resume(*consumer.paused())
        batches = await consumer.getmany(timeout_ms=_POLL_MS, max_records=min(room, options.fetch_max_records))
        self._take(batches)
        if self._pacing is not None:
            self._pacing.fetched(_wire_bytes(batches))

    async def _skip_unreadable(self, consumer: Any, error: Exception) -> None:
        """Find the partition whose records cannot be read and step past the batch (module docstring).

        A fetch fails whole when one of its batches cannot be read, so the readable records before that
        batch are read one at a time and handed out as usual; the first offset that cannot be read is then
        stepped over, one offset a fetch, until a record can be read again."""
        for tp in sorted(consumer.assignment()):
            for _ in range(self.options.fetch_max_records):  # one fetch's worth: past it, not this partition
                try:
                    found = await consumer.getmany(tp, timeout_ms=_PROBE_MS, max_records=1)
                except UNREADABLE:
                    await self._step_over(consumer, tp, error)
                    return
                if not found:
                    break
                self._take(found)
        log.warning("Kafka source %r: a fetch could not be read (%s), but no partition failed again",
                    self.options.endpoint_id, error)

    async def _step_over(self, consumer: Any, tp: Any, error: Exception) -> None:
        start = offset = await consumer.position(tp)
        while True:
            offset += 1
            consumer.seek(tp, offset)
            try:
                found = await consumer.getmany(tp, timeout_ms=_PROBE_MS, max_records=1)
            except UNREADABLE:
                continue
            break
        first = _first(found[tp][0]) if found else offset  # nothing more yet: the log ends past the batch
        self._parts.setdefault(tp, PartitionOffsets()).skip_to(first)
        self.unreadable += first - start
        log.error("Kafka source %r: %s[%d] offsets %d-%d cannot be read (%s); skipped, counted and committed past",
                  self.options.endpoint_id, tp.topic, tp.partition, start, first - 1, error)
        self._take(found)

    def _take(self, batches: dict[Any, list[Any]]) -> None:
        """Fetched records to the ready queue, each tracked on its partition."""
        ready = self._ready
        for tp, records in batches.items():
            part = self._parts.get(tp)
            if part is None or (part.order and _first(records[0]) <= part.order[-1]):
                # new, or the position went back without a nack (offsets reset, e.g. a broker that lost its log)
                part = self._parts[tp] = PartitionOffsets()
            offsets = [record.offset for record in records]
            if self.in_place:
                part.track_many(offsets, {record.offset: record.count - 1 for record in records
                                          if record.__class__ is InPlaceBatch and record.count > 1})
            else:
                part.track_many(offsets)
            ready.extend([(tp, record) for record in records])

    def take_unreadable(self) -> int:
        """Records skipped as unreadable since the last call."""
        count, self.unreadable = self.unreadable, 0
        return count

    async def _commit_loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.options.commit_interval):
                    await self._commit_now.wait()
            self._commit_now.clear()
            consumer = self._consumer
            if consumer is not None:
                with contextlib.suppress(KafkaError, OSError):
                    await self._commit(consumer)

    async def _commit(self, consumer: Any, partitions: Any = None) -> None:
        """Commit the acknowledged prefix of `partitions` (all by default); a failed commit is retried later."""
        if not self.options.commit:
            return
        async with self._commit_lock:
            assigned = consumer.assignment()
            offsets = {tp: offset for tp, part in self._parts.items()
                       if (partitions is None or tp in partitions) and tp in assigned
                       and (offset := part.pending_commit()) is not None}
            if not offsets:
                return
            self._acks_since_commit = 0
            await consumer.commit(offsets)
            for tp, offset in offsets.items():
                part = self._parts.get(tp)
                if part is not None:
                    part.committed = offset

    async def _revoked(self, revoked: Any) -> None:
        lost = set(revoked)
        # not handed out yet: the next owner reads them; what was handed out may still be delivered, and
        # committing it first spares the next owner reading it again (a bounded wait: a rebalance waits on it)
        _drop_ready(self._ready, lambda item: item[0] in lost)
        consumer = self._consumer
        if consumer is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(_SETTLE_SECONDS, self.options.rebalance_timeout_ms / 2000)):
                    await self._settled(lost)
            with contextlib.suppress(KafkaError, OSError, TimeoutError):
                async with asyncio.timeout(self.options.connection.connect_timeout):
                    await self._commit(consumer, lost)
        # another member may own these now: what was not acknowledged is its to read again
        for tp in lost:
            self._parts.pop(tp, None)
        _drop_ready(self._ready, lambda item: item[0] in lost)

    async def _settled(self, partitions: set[Any]) -> None:
        """Until every record handed out from `partitions` was acknowledged."""
        while any(part.open for tp in partitions if (part := self._parts.get(tp)) is not None):
            self._acked.clear()
            await self._acked.wait()

    def _assigned(self, assigned: Any) -> None:
        for tp in assigned:
            self._parts.setdefault(tp, PartitionOffsets())

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._stopping.wait()


class _Rebalance(ConsumerRebalanceListener):  # type: ignore[misc]  # base class from an untyped library
    def __init__(self, source: KafkaSource) -> None:
        self.source = source

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self.source._revoked(revoked)

    async def on_partitions_assigned(self, assigned: Any) -> None:
        self.source._assigned(assigned)


def _wire_bytes(batches: dict[Any, list[Any]]) -> int:
    """About the bytes a poll's records took on the wire (what fetch pacing counts): a batch read in place its
    span, a ConsumerRecord its key and value (a missing one is -1) and some framing."""
    size = 0
    for records in batches.values():
        for record in records:
            if record.__class__ is InPlaceBatch:
                size += record.end - record.start
            else:
                size += max(record.serialized_key_size, 0) + max(record.serialized_value_size, 0) + _RECORD_FRAMING
    return size


def _first(record: Any) -> int:
    """The first offset of a record or of a batch read in place."""
    return record.first if record.__class__ is InPlaceBatch else record.offset


def _drop_ready(ready: collections.deque[tuple[Any, Any]], dropped: Callable[[tuple[Any, Any]], bool]) -> None:
    """Remove items in place: the iterator holds a reference to this deque."""
    kept = [item for item in ready if not dropped(item)]
    ready.clear()
    ready.extend(kept)
