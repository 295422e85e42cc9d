"""A Kafka to Kafka route's batches as records: issue 31's lean data path beside the general one (pipeline.py).

A batch arrives as the consumer's records (their (TopicPartition, record) handles) and goes to the native
core in one call as it came; where the source reads in place (protocol_adapters/kafka/in_place.py), as the
bytes of the record batches the broker sent, which the core reads and the sink's batch writer copies from:
no Python object is made for a record that conforms, a ConsumerRecord for the others only. Conformant
records go to their destination's producer batches unchanged (value, key, headers, timestamp; KafkaSink
`send_records`): no Envelope, Verdict, re-mapping or `xgate-*` header is made for them, and they are
counted once per batch by definition. Only the rest (nonconformant, unmatched,
and what the core leaves to the Python judge) become Envelopes and take the general path's deciding,
dead-letter headers and delivery; a Kafka destination still takes them as records with their headers
added (Judged `record`), not re-mapped from the Envelope. A batch that fully landed is acknowledged by its
handles in one call; anything else (a record the destination did not confirm, a judging error) is settled
message by message as the general path settles it, so retries, fallbacks and at-least-once are the
pipeline's own.

A route takes the lane when its source forwards records (a plain KafkaSource; an exactly-once one settles
transactions by Envelope) and conformant messages are forwarded to a sink that takes records (KafkaSink).
A batch goes the general path whole while shadow rules run beside the active ones or the core is not built.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import Counter as Tally
from collections.abc import Callable
from typing import Any

from gateway.envelope import Envelope
from gateway.errors import AdapterError
from gateway.metrics.instruments import observe_repeated
from gateway.runtime.judged import Judged, Landing
from gateway.runtime.router import Action, Kind

log = logging.getLogger("xgate.pipeline")
Handle = tuple[Any, Any]  # (TopicPartition, ConsumerRecord)
# the lane's `pipeline` is the Pipeline (pipeline.py) that built it, typed Any: that module imports this one
Pipeline = Any


class RecordLane:
    def __init__(self, pipeline: Pipeline, source: Any, sink: Any) -> None:
        self.pipeline = pipeline
        self.source = source
        self.sink = sink
        decision = pipeline.decisions[Kind.CONFORMANT]
        assert decision.destination is not None
        self.decision = decision
        self.destination = decision.destination

    @classmethod
    def of(cls, pipeline: Pipeline, source: Any) -> RecordLane | None:
        """The lane for this route and source, or None when the route takes the general path. Called before the
        source connects: a lane's source reads its plain batches in place where it can (KafkaSource.read_in_place)."""
        if not getattr(source, "forwards_records", False):
            return None
        decision = pipeline.decisions[Kind.CONFORMANT]
        if decision.action is not Action.FORWARD or decision.destination is None:
            return None
        sink = pipeline.sinks.get(decision.destination.endpoint_id)
        if getattr(sink, "send_records", None) is None:
            return None
        read_in_place = getattr(source, "read_in_place", None)
        if read_in_place is not None:
            read_in_place()
        return cls(pipeline, source, sink)

    async def release(self, handle: Handle) -> None:
        """Hand a record (or a batch read in place) back to the source unjudged (stopping)."""
        await self.source.nack_handle(handle)

    async def handle(self, source: Any, handles: list[Handle]) -> None:
        """One batch: judged at once, conformant records forwarded as they came, the rest the general way."""
        pipeline = self.pipeline
        pipeline.count_unreadable(source)
        holder = pipeline.holder
        endpoint = pipeline.route.source.endpoint_id
        native = holder.native
        position = native.endpoint_position(source.options.endpoint_id) if holder.shadow is None else None
        clock = time.perf_counter
        started = clock()
        batch: _Batch | None = None
        reads_in_place = getattr(source, "in_place", False)
        if position is not None and reads_in_place:
            try:
                batch = _InPlace.judged(native, position, handles)
            except Exception:  # a bug in the batch call: judged below record by record
                log.exception("route %s: the batches could not be judged in place", endpoint)
        if batch is None and reads_in_place:  # not all read in place, one the core does not read, or no core
            handles = source.expand(handles)
        if batch is not None:
            holder.recent.add_batches(endpoint, functools.partial(_sampled, source), handles, len(batch),
                                      sum([handle[1].end - handle[1].start for handle in handles]))
        else:
            holder.recent.add_records(endpoint, source.envelope, handles)
            if position is None:
                await pipeline.handle(source, [source.envelope(handle) for handle in handles])
                return
            try:
                batch = _Records(handles, native.judge_records(position, [handle[1] for handle in handles]))
            except Exception:  # a bug in the batch call: the general path judges each message alone
                log.exception("route %s: the batch could not be judged at once", endpoint)
                await pipeline.handle(source, [source.envelope(handle) for handle in handles])
                return
        count = len(batch)
        each = (clock() - started) / count
        stats, metrics = pipeline.stats, pipeline.metrics
        stats.inflight += count
        metrics.inflight.inc(count)
        items: list[Judged] | None = None  # every message as the general path holds it, once settled that way
        try:
            forwarded, others = self._split(source, batch, each)
            failed = await self._forward_and_deliver(source, batch, forwarded, others)
            if not failed and all(item.delivered and item.verdict is not None for item in others):
                await source.ack_handles(handles)
                for item in others:
                    item.settled = True
                pipeline.count_landed(others, Tally({Kind.CONFORMANT: len(forwarded)}) if forwarded else Tally())
                acked = count
            else:  # the rare case: each message settled as the general path settles it
                items = self._in_order(source, batch.each_record(source), batch.results, others, failed)
                acked = await pipeline.settle(source, items)
            observe_repeated(metrics.end_to_end, clock() - started, acked)
        except asyncio.CancelledError:
            # shutdown past the drain timeout: released (never acknowledged), so the broker delivers it again
            await self._release_unsettled(source, handles, items)
            raise
        except Exception:
            stats.delivery_failures += 1
            log.exception("route %s: messages could not be handled; released for redelivery", endpoint)
            await self._release_unsettled(source, handles, items)
        finally:
            stats.inflight -= count
            metrics.inflight.dec(count)

    def _split(self, source: Any, batch: _Batch, each: float) -> tuple[list[tuple[int, int]], list[Judged]]:
        """The conformant records (index in the batch, definition number), counted here; the rest decided and
        counted by the pipeline."""
        pipeline = self.pipeline
        native = pipeline.holder.native
        verdict_of = native.verdict
        forwarded: list[tuple[int, int]] = []
        rest: list[int] = []
        for index, result in enumerate(batch.results):
            if result.__class__ is int:
                forwarded.append((index, result))
            else:  # None: the Python judge decides it (pipeline.decide_all)
                rest.append(index)
        if forwarded:
            ids = native.ids
            named: Tally[tuple[str, str, Kind]] = Tally()
            for number, count in Tally(number for _, number in forwarded).items():
                group, message = ids[number]
                named[(group, message, Kind.CONFORMANT)] = count
            pipeline.count_verdicts(Tally({Kind.CONFORMANT: len(forwarded)}), named)
            observe_repeated(pipeline.metrics.validation, each, len(forwarded))
        if not rest:
            return forwarded, []
        handles = [batch.handle(index) for index in rest]
        results = batch.results
        verdicts = [None if results[index] is None else verdict_of(results[index]) for index in rest]
        others = pipeline.decide_all([source.envelope(handle) for handle in handles], verdicts, [each] * len(rest))
        for item, handle in zip(others, handles, strict=True):
            item.record = handle[1]  # sent as it came by a Kafka sink (Pipeline._deliver_share)
        return forwarded, others

    async def _forward_and_deliver(self, source: Any, batch: _Batch, forwarded: list[tuple[int, int]],
                                   others: list[Judged]) -> dict[int, Landing]:
        """`_forward` the conformant records and deliver the rest, concurrently when there are both (a task
        each); what `_forward` returns."""
        if not others:
            return await self._forward(source, batch, forwarded)
        if not forwarded:
            await self.pipeline.deliver_judged(others)
            return {}
        failed, _ = await asyncio.gather(self._forward(source, batch, forwarded),
                                         self.pipeline.deliver_judged(others))
        return failed

    async def _forward(self, source: Any, batch: _Batch, forwarded: list[tuple[int, int]]) -> dict[int, Landing]:
        """The conformant records to their destination in one call; any it did not confirm go through the
        pipeline's delivery (retries, fallback) alone. Returns those, by position in `forwarded`, with where
        they landed."""
        if not forwarded:
            return {}
        pipeline, destination = self.pipeline, self.destination
        try:
            failures: list[AdapterError | None] = await self.sink.send_records(
                batch.records([index for index, _ in forwarded], self.sink))
        except AdapterError as exc:
            failures = [exc] * len(forwarded)
        failed = [index for index, failure in enumerate(failures) if failure is not None]
        if not failed:
            return {}
        for index in failed:
            failure = failures[index]
            assert failure is not None
            pipeline.metrics.failures[(destination.endpoint_id, failure.retriable)].inc()
        if len(failed) < len(forwarded):
            pipeline.health.succeeded(destination.endpoint_id)
        conformant = pipeline.holder.native.conformant
        landings = await asyncio.gather(*(
            pipeline.deliver(destination, source.envelope(batch.handle(forwarded[index][0])), None,
                             conformant[forwarded[index][1]]) for index in failed))
        return dict(zip(failed, landings))

    def _in_order(self, source: Any, handles: list[Handle], results: list[Any], others: list[Judged],
                  failed: dict[int, Landing]) -> list[Judged]:
        """Every message of the batch as the general path holds it, in arrival order (`handles` one a record)."""
        conformant = self.pipeline.holder.native.conformant
        rest = iter(others)
        items: list[Judged] = []
        forwarded = 0
        for handle, result in zip(handles, results, strict=True):
            if result.__class__ is not int:
                items.append(next(rest))
                continue
            landing = failed.get(forwarded, Landing.SENT)
            items.append(Judged(source.envelope(handle), conformant[result], self.decision,
                                delivered=landing is not Landing.KEPT, landing=landing))
            forwarded += 1
        return items

    async def _release_unsettled(self, source: Any, handles: list[Handle], items: list[Judged] | None) -> None:
        """Release what a failed batch had not settled: all of it (by handle: a batch read in place whole),
        unless it was being settled message by message."""
        if items is None:
            await self.pipeline.release(source, handles, source.nack_handle)
        else:
            await self.pipeline.release(source, [item.envelope for item in items if not item.settled])


class _Records:
    """A batch of records as the consumer made them, with the core's result for each."""

    __slots__ = ("handles", "results")

    def __init__(self, handles: list[Handle], results: list[Any]) -> None:
        self.handles, self.results = handles, results

    def __len__(self) -> int:
        return len(self.handles)

    def handle(self, index: int) -> Handle:
        return self.handles[index]

    def records(self, indexes: list[int], sink: Any) -> list[Any]:
        handles = self.handles
        return [handles[index][1] for index in indexes]

    def each_record(self, source: Any) -> list[Handle]:
        return self.handles


class _InPlace:
    """Batches read in place (protocol_adapters/kafka/in_place.py) as the core read them (a `Fetched`), with its
    result for each record; a record's handle, and its ConsumerRecord, made only for the records that need one."""

    __slots__ = ("consumer_record", "fetched", "handles", "results", "tps")

    def __init__(self, handles: list[Handle], fetched: Any, results: list[Any],
                 consumer_record: Callable[[Any, tuple[Any, ...]], Any]) -> None:
        self.handles, self.fetched, self.results = handles, fetched, results
        self.consumer_record = consumer_record
        self.tps: list[Any] | None = None

    @classmethod
    def judged(cls, native: Any, position: int, handles: list[Handle]) -> _InPlace | None:
        """The handles' batches judged in one call; None unless every handle is a batch the core reads."""
        # imported here: this module loads where the Kafka client library is not installed
        from protocol_adapters.kafka.in_place import InPlaceBatch, consumer_record
        if not all(handle[1].__class__ is InPlaceBatch for handle in handles):
            return None
        judged = native.judge_fetched(position, [(tp.topic, tp.partition, batch.data, batch.start, batch.end)
                                                 for tp, batch in handles])
        if judged is None:
            return None
        fetched, results = judged
        return cls(handles, fetched, results, consumer_record)

    def __len__(self) -> int:
        return len(self.results)

    def handle(self, index: int) -> Handle:
        tps = self.tps
        if tps is None:  # each record's topic and partition, made once a record needs a handle
            tps = self.tps = []
            for tp, batch in self.handles:
                tps += [tp] * batch.count
        tp = tps[index]
        return (tp, self.consumer_record(tp, self.fetched.record(index)))

    def records(self, indexes: list[int], sink: Any) -> Any:
        """The records at `indexes` for `sink`: as the core read them where it takes them so, else ConsumerRecords."""
        if getattr(sink, "takes_fetched", None) is not None and sink.takes_fetched():
            return self.fetched.select(indexes)
        return [self.handle(index)[1] for index in indexes]

    def each_record(self, source: Any) -> list[Handle]:
        """Every record's handle in order, the source now tracking each by its own offset (KafkaSource.expand)."""
        return source.expand(self.handles)  # type: ignore[no-any-return]


_Batch = _Records | _InPlace


def _sampled(source: Any, handle: Handle) -> list[Envelope]:
    """A batch read in place as Envelopes (a sample of recent traffic asked for them)."""
    from protocol_adapters.kafka.in_place import records_of
    tp = handle[0]
    return [source.envelope((tp, record)) for record in records_of(tp, handle[1])]
