"""A Kafka to Kafka route's batches as records: issue 31's lean data path beside the general one (pipeline.py).

A batch arrives as the consumer's records (their (TopicPartition, record) handles) and goes to the native
core in one call as it came. Conformant records go to their destination's producer batches unchanged (value,
key, headers, timestamp; KafkaSink `send_records`): no Envelope, Verdict, re-mapping or `xgate-*` header is
made for them, and they are counted once per batch by definition. Only the rest (nonconformant, unmatched,
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
import contextlib
import logging
import time
from collections import Counter as Tally
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
        """The lane for this route and source, or None when the route takes the general path."""
        if not getattr(source, "forwards_records", False):
            return None
        decision = pipeline.decisions[Kind.CONFORMANT]
        if decision.action is not Action.FORWARD or decision.destination is None:
            return None
        sink = pipeline.sinks.get(decision.destination.endpoint_id)
        if getattr(sink, "send_records", None) is None:
            return None
        return cls(pipeline, source, sink)

    async def release(self, handle: Handle) -> None:
        """Hand a record back to the source unjudged (stopping)."""
        await self.source.nack(self.source.envelope(handle))

    async def handle(self, source: Any, handles: list[Handle]) -> None:
        """One batch: judged at once, conformant records forwarded as they came, the rest the general way."""
        pipeline = self.pipeline
        pipeline.count_unreadable(source)
        holder = pipeline.holder
        holder.recent.add_records(pipeline.route.source.endpoint_id, source.envelope, handles)
        native = holder.native
        position = native.endpoint_position(source.options.endpoint_id) if holder.shadow is None else None
        if position is None:
            await pipeline.handle(source, [source.envelope(handle) for handle in handles])
            return
        clock = time.perf_counter
        started = clock()
        try:
            results = native.judge_records(position, [handle[1] for handle in handles])
        except Exception:  # a bug in the batch call: the general path judges each message alone
            log.exception("route %s: the batch could not be judged at once", pipeline.route.source.endpoint_id)
            await pipeline.handle(source, [source.envelope(handle) for handle in handles])
            return
        each = (clock() - started) / len(handles)
        stats, metrics = pipeline.stats, pipeline.metrics
        stats.inflight += len(handles)
        metrics.inflight.inc(len(handles))
        items: list[Judged] | None = None  # every message as the general path holds it, once settled that way
        try:
            forwarded, others = self._split(source, handles, results, each)
            failed = await self._forward_and_deliver(source, forwarded, others)
            if not failed and all(item.delivered and item.verdict is not None for item in others):
                await source.ack_handles(handles)
                for item in others:
                    item.settled = True
                pipeline.count_landed(others, Tally({Kind.CONFORMANT: len(forwarded)}) if forwarded else Tally())
                acked = len(handles)
            else:  # the rare case: each message settled as the general path settles it
                items = self._in_order(source, handles, results, others, failed)
                acked = await pipeline.settle(source, items)
            observe_repeated(metrics.end_to_end, clock() - started, acked)
        except asyncio.CancelledError:
            # shutdown past the drain timeout: released (never acknowledged), so the broker delivers it again
            await pipeline.release(source, self._unsettled(source, handles, items))
            raise
        except Exception:
            stats.delivery_failures += 1
            log.exception("route %s: messages could not be handled; released for redelivery",
                          pipeline.route.source.endpoint_id)
            for envelope in self._unsettled(source, handles, items):
                with contextlib.suppress(Exception):
                    await source.nack(envelope)
        finally:
            stats.inflight -= len(handles)
            metrics.inflight.dec(len(handles))

    def _split(self, source: Any, handles: list[Handle], results: list[Any],
               each: float) -> tuple[list[tuple[Handle, int]], list[Judged]]:
        """The conformant records (with their definition's number), counted here; the rest decided and
        counted by the pipeline."""
        pipeline = self.pipeline
        native = pipeline.holder.native
        verdict_of, envelope_of = native.verdict, source.envelope
        forwarded: list[tuple[Handle, int]] = []
        envelopes: list[Envelope] = []
        verdicts: list[Any] = []
        records: list[Any] = []
        for handle, result in zip(handles, results):
            if result.__class__ is int:
                forwarded.append((handle, result))
            else:  # None: the Python judge decides it (pipeline.decide_all)
                envelopes.append(envelope_of(handle))
                verdicts.append(None if result is None else verdict_of(result))
                records.append(handle[1])
        if forwarded:
            ids = native.ids
            named: Tally[tuple[str, str, Kind]] = Tally()
            for number, count in Tally(number for _, number in forwarded).items():
                group, message = ids[number]
                named[(group, message, Kind.CONFORMANT)] = count
            pipeline.count_verdicts(Tally({Kind.CONFORMANT: len(forwarded)}), named)
            observe_repeated(pipeline.metrics.validation, each, len(forwarded))
        if not envelopes:
            return forwarded, []
        others = pipeline.decide_all(envelopes, verdicts, [each] * len(envelopes))
        for item, record in zip(others, records, strict=True):
            item.record = record  # sent as it came by a Kafka sink (Pipeline._deliver_share)
        return forwarded, others

    async def _forward_and_deliver(self, source: Any, forwarded: list[tuple[Handle, int]],
                                   others: list[Judged]) -> dict[int, Landing]:
        """`_forward` the conformant records and deliver the rest, concurrently when there are both (a task
        each); what `_forward` returns."""
        if not others:
            return await self._forward(source, forwarded)
        if not forwarded:
            await self.pipeline.deliver_judged(others)
            return {}
        failed, _ = await asyncio.gather(self._forward(source, forwarded), self.pipeline.deliver_judged(others))
        return failed

    async def _forward(self, source: Any, forwarded: list[tuple[Handle, int]]) -> dict[int, Landing]:
        """The conformant records to their destination in one call; any it did not confirm go through the
        pipeline's delivery (retries, fallback) alone. Returns those, by position in `forwarded`, with where
        they landed."""
        if not forwarded:
            return {}
        pipeline, destination = self.pipeline, self.destination
        try:
            failures: list[AdapterError | None] = await self.sink.send_records([h[1] for h, _ in forwarded])
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
            pipeline.deliver(destination, source.envelope(forwarded[index][0]), None,
                             conformant[forwarded[index][1]]) for index in failed))
        return dict(zip(failed, landings))

    def _in_order(self, source: Any, handles: list[Handle], results: list[Any], others: list[Judged],
                  failed: dict[int, Landing]) -> list[Judged]:
        """Every message of the batch as the general path holds it, in arrival order."""
        conformant = self.pipeline.holder.native.conformant
        rest = iter(others)
        items: list[Judged] = []
        forwarded = 0
        for handle, result in zip(handles, results):
            if result.__class__ is not int:
                items.append(next(rest))
                continue
            landing = failed.get(forwarded, Landing.SENT)
            items.append(Judged(source.envelope(handle), conformant[result], self.decision,
                                delivered=landing is not Landing.KEPT, landing=landing))
            forwarded += 1
        return items

    @staticmethod
    def _unsettled(source: Any, handles: list[Handle], items: list[Judged] | None) -> list[Envelope]:
        """What a failed batch must still release: all of it, unless it was being settled message by message."""
        if items is None:
            return [source.envelope(handle) for handle in handles]
        return [item.envelope for item in items if not item.settled]
