"""A Kafka to Kafka route's batches as records: issue 31's lean data path beside the general one (pipeline.py).

A batch arrives as the consumer's records (their (TopicPartition, record) handles) and goes to the native
core in one call as it came; where the source reads in place (protocol_adapters/kafka/in_place.py), as the
bytes of the record batches the broker sent, which the core reads and the sink's batch writer copies from:
no Python object is made for a record that conforms. Conformant
records go to their destination's producer batches unchanged (value, key, headers, timestamp; KafkaSink
`send_records`): no Envelope, Verdict, re-mapping or `xgate-*` header is made for them, and they are
counted once per batch by definition. Records read in place that the core found nonconformant or
unmatched are decided and counted here too, their `xgate-*` headers written from the core's results
(remap.reason_headers, as the general path writes them from a Verdict), and copied to their destination
as read with those headers added, where every destination takes records read in place (the console,
when on, gets an Envelope and Verdict for the last few it keeps). Only the rest (what the core leaves to the Python judge, and dead letters of
batches not read in place or bound elsewhere) become Envelopes and take the general path's deciding,
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

from gateway.compiler.core import RULES
from gateway.envelope import Envelope
from gateway.errors import AdapterError
from gateway.metrics.instruments import observe_repeated
from gateway.runtime.judged import Judged, Landing
from gateway.runtime.remap import reason_headers
from gateway.runtime.router import Action, Kind
from gateway.verdict import Outcome

log = logging.getLogger("xgate.pipeline")
Handle = tuple[Any, Any]  # (TopicPartition, ConsumerRecord)
NONCONFORMANT = Outcome.NONCONFORMANT.value
# each rule's name by the number the core gives it (an Enum's `.value` is a property: read once here)
RULE_NAMES = tuple(rule.value for rule in RULES)
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
        self._reasons: tuple[Any, Any] | None = None  # (NativeJudge, its ReasonWriter)

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
                batch = _InPlace.judged(native, position, handles, self._reason_writer(native, endpoint))
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
            shares, others = self._split(source, batch, each)
            failed = await self._send_and_deliver(source, batch, shares, others)
            if not failed and all(item.delivered and item.verdict is not None for item in others):
                await source.ack_handles(handles)
                for item in others:
                    item.settled = True
                as_decided: Tally[Kind] = Tally()
                for share in shares:
                    share.count(as_decided, batch.results)
                pipeline.count_landed(others, as_decided)
                acked = count
            else:  # the rare case: each message settled as the general path settles it
                items = self._in_order(source, batch.each_record(source), batch.results, shares, others, failed)
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

    def _reason_writer(self, native: Any, endpoint: str) -> Any:
        """The core's writer of this route's dead-letter headers, for the ruleset `native` judges (made again after
        a reload)."""
        made = self._reasons
        if made is None or made[0] is not native:
            made = self._reasons = (native, native.reason_writer(endpoint))
        return made[1]

    def _split(self, source: Any, batch: _Batch, each: float) -> tuple[list[_Share], list[Judged]]:
        """What the lane sends itself, one share per destination: the conformant records (counted here) and,
        where it can (`_dead_letters`), the dead letters (counted here too); the rest decided and counted by
        the pipeline."""
        pipeline = self.pipeline
        native = pipeline.holder.native
        results = batch.results
        forwarded: list[int] = []
        rest: list[int] = []
        for index, result in enumerate(results):
            if result.__class__ is int:
                forwarded.append(index)
            else:  # None: the Python judge decides it (pipeline.decide_all)
                rest.append(index)
        shares: list[_Share] = []
        if forwarded:
            ids = native.ids
            named: Tally[tuple[str, str, Kind]] = Tally()
            for number, count in Tally([results[index] for index in forwarded]).items():
                group, message = ids[number]
                named[(group, message, Kind.CONFORMANT)] = count
            pipeline.count_verdicts(Tally({Kind.CONFORMANT: len(forwarded)}), named)
            observe_repeated(pipeline.metrics.validation, each, len(forwarded))
            shares.append(_Share(self.destination, self.sink, forwarded, None, {Kind.CONFORMANT: self.decision}))
        if not rest:
            return shares, []
        dead_letters = self._dead_letters(source, batch, rest, each)
        if dead_letters is not None:
            return shares + dead_letters, []
        handles = [batch.handle(index) for index in rest]
        verdict_of = native.verdict
        verdicts = [None if results[index] is None else verdict_of(results[index]) for index in rest]
        others = pipeline.decide_all([source.envelope(handle) for handle in handles], verdicts, [each] * len(rest))
        for item, handle in zip(others, handles, strict=True):
            item.record = handle[1]  # sent as it came by a Kafka sink (Pipeline._deliver_share)
        return shares, others

    def _dead_letters(self, source: Any, batch: _Batch, rest: list[int], each: float) -> list[_Share] | None:
        """The records at `rest` (none of them conformant) decided, counted and given their `xgate-*` headers here
        from the core's results, as Pipeline.decide_all would from Verdicts: one share per destination, sent as
        read in place; where the console keeps dead letters, an Envelope and Verdict made for the last few it
        takes. None, for decide_all to take them all, unless the batch was read in place, the core judged each
        of them and each destination takes records read in place (KafkaSink `takes_fetched`)."""
        pipeline = self.pipeline
        if not isinstance(batch, _InPlace):
            return None
        results = batch.results
        decisions = pipeline.decisions
        by_kind: dict[Kind, list[int]] = {}
        for index in rest:
            result = results[index]
            if result is None:
                return None
            by_kind.setdefault(_kind(result), []).append(index)
        sinks: dict[Kind, Any] = {}
        for kind in by_kind:
            destination = decisions[kind].destination
            sink = pipeline.sinks.get(destination.endpoint_id) if destination is not None else None
            if sink is None or getattr(sink, "takes_fetched", None) is None or not sink.takes_fetched():
                return None
            sinks[kind] = sink
        native = pipeline.holder.native
        ids = native.ids
        endpoint = pipeline.route.source.endpoint_id
        named: Tally[tuple[str, str, Kind]] = Tally()
        rules: Tally[str] = Tally()
        shares: dict[str, _Share] = {}
        written = batch.reason_headers
        for kind, indexes in by_kind.items():
            decision = decisions[kind]
            headed = kind in pipeline.dead_lettered
            numbers = [results[index][0] for index in indexes]
            for number, count in Tally(numbers).items():
                group, message = ids[number] if number is not None else ("", "")
                named[(group, message, kind)] += count
            rules.update([RULE_NAMES[violation[1]] for index in indexes for violation in results[index][1]])
            headers: list[list[tuple[str, str]] | None] = ([written[index] for index in indexes]
                                                             if headed and written is not None
                                                             else [None] * len(indexes))
            if headed and None in headers:  # what the core left to reason_headers (reasons.rs says which)
                left = [position for position, made in enumerate(headers) if made is None]
                for position, (tp, offset) in zip(left, batch.where([indexes[p] for p in left]), strict=True):
                    number = numbers[position]
                    group, message = ids[number] if number is not None else (None, None)
                    headers[position] = reason_headers(
                        NONCONFORMANT, group, message, native.violation_dicts(results[indexes[position]]),
                        endpoint, tp.topic, {"topic": tp.topic, "partition": tp.partition, "offset": offset})
            destination = decision.destination
            share = shares.get(destination.endpoint_id)
            if share is None:
                shares[destination.endpoint_id] = _Share(destination, sinks[kind], indexes, headers, {kind: decision})
            else:  # nonconformant and unmatched to one destination: one share, in batch order
                share.join(indexes, headers, kind, decision)
        pipeline.count_verdicts(Tally({kind: len(indexes) for kind, indexes in by_kind.items()}), named)
        pipeline.count_rules(rules)
        observe_repeated(pipeline.metrics.validation, each, len(rest))
        kept = pipeline.holder.dead_letters
        if kept is not None:  # the console's latest nonconformant and unmatched messages (dead_letter_ring.py)
            room = kept.room(endpoint)
            verdict_of = native.verdict
            kept.add_many(endpoint, [(source.envelope(batch.handle(index)), verdict_of(results[index]))
                                     for index in (rest[-room:] if room else [])], len(rest))
        return list(shares.values())

    async def _send_and_deliver(self, source: Any, batch: _Batch, shares: list[_Share],
                                others: list[Judged]) -> dict[int, Landing]:
        """`_send` each share and deliver the rest, concurrently (a task each); the records `_send` did not land at
        once, by index in the batch, with where they landed. A task even for a lone share: tasks start in the order
        they are made, so a batch's records join the sinks' open batches after those of the batch before it, even
        where that one had several shares and this one has one (sent inline, it went first)."""
        sent = [self._send(source, batch, share) for share in shares]
        outcomes = await asyncio.gather(*sent, *([self.pipeline.deliver_judged(others)] if others else []))
        failed: dict[int, Landing] = {}
        for outcome in outcomes[:len(sent)]:
            failed.update(outcome)
        return failed

    async def _send(self, source: Any, batch: _Batch, share: _Share) -> dict[int, Landing]:
        """A share's records to its destination in one call, as read, with their added headers; any it did not
        confirm go through the pipeline's delivery (retries, fallback) alone. Returns those, by index in the
        batch, with where they landed."""
        pipeline, destination, indexes = self.pipeline, share.destination, share.indexes
        try:
            failures: list[AdapterError | None] = await share.sink.send_records(
                batch.records(indexes, share.sink), share.headers)
        except AdapterError as exc:
            failures = [exc] * len(indexes)
        failed = [position for position, failure in enumerate(failures) if failure is not None]
        if not failed:
            return {}
        for position in failed:
            failure = failures[position]
            assert failure is not None
            pipeline.metrics.failures[(destination.endpoint_id, failure.retriable)].inc()
        if len(failed) < len(indexes):
            pipeline.health.succeeded(destination.endpoint_id)
        verdict_of, results, headers = pipeline.holder.native.verdict, batch.results, share.headers
        landings = await asyncio.gather(*(
            pipeline.deliver(destination, source.envelope(batch.handle(indexes[position])),
                             headers[position] if headers is not None else None, verdict_of(results[indexes[position]]))
            for position in failed))
        return {indexes[position]: landing for position, landing in zip(failed, landings, strict=True)}

    def _in_order(self, source: Any, handles: list[Handle], results: list[Any], shares: list[_Share],
                  others: list[Judged], failed: dict[int, Landing]) -> list[Judged]:
        """Every message of the batch as the general path holds it, in arrival order (`handles` one a record)."""
        verdict_of = self.pipeline.holder.native.verdict
        sent: dict[int, tuple[Any, list[tuple[str, str]] | None]] = {}  # by index: decision, added headers
        for share in shares:
            for position, index in enumerate(share.indexes):
                sent[index] = (share.decision_of(results[index]),
                               share.headers[position] if share.headers is not None else None)
        rest = iter(others)
        items: list[Judged] = []
        for index, (handle, result) in enumerate(zip(handles, results, strict=True)):
            if index not in sent:
                items.append(next(rest))
                continue
            decision, headers = sent[index]
            landing = failed.get(index, Landing.SENT)
            items.append(Judged(source.envelope(handle), verdict_of(result), decision, headers,
                                delivered=landing is not Landing.KEPT, landing=landing))
        return items

    async def _release_unsettled(self, source: Any, handles: list[Handle], items: list[Judged] | None) -> None:
        """Release what a failed batch had not settled: all of it (by handle: a batch read in place whole),
        unless it was being settled message by message."""
        if items is None:
            await self.pipeline.release(source, handles, source.nack_handle)
        else:
            await self.pipeline.release(source, [item.envelope for item in items if not item.settled])


def _kind(result: Any) -> Kind:
    """A raw result's kind, as router.kind_of gives a Verdict's: a nonconformant result names its closest
    definition, an unmatched one none."""
    if result.__class__ is int:
        return Kind.CONFORMANT
    return Kind.NONCONFORMANT if result[0] is not None else Kind.UNMATCHED


class _Share:
    """Records of a batch the lane sends itself to one destination: their indexes in the batch, in batch order,
    each one's added headers (`headers` None: none added to any), and the decision for each kind among them."""

    __slots__ = ("decisions", "destination", "headers", "indexes", "sink")

    def __init__(self, destination: Any, sink: Any, indexes: list[int],
                 headers: list[list[tuple[str, str]] | None] | None, decisions: dict[Kind, Any]) -> None:
        self.destination, self.sink, self.indexes, self.headers = destination, sink, indexes, headers
        self.decisions = decisions

    def join(self, indexes: list[int], headers: list[list[tuple[str, str]] | None], kind: Kind,
             decision: Any) -> None:
        """Records of another kind to the same destination, merged in batch order."""
        assert self.headers is not None
        merged = sorted(zip(self.indexes + indexes, self.headers + headers, strict=True), key=lambda pair: pair[0])
        self.indexes = [index for index, _ in merged]
        self.headers = [added for _, added in merged]
        self.decisions[kind] = decision

    def decision_of(self, result: Any) -> Any:
        return self.decisions[_kind(result)]

    def count(self, as_decided: Tally[Kind], results: list[Any]) -> None:
        """Add the share's records, by kind, to `as_decided` (they landed as decided)."""
        if len(self.decisions) == 1:
            (kind,) = self.decisions
            as_decided[kind] += len(self.indexes)
        else:
            as_decided.update([_kind(results[index]) for index in self.indexes])


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
    result for each record and the `xgate-*` headers it wrote for each nonconformant one (None where it left them
    to remap.reason_headers); a record's handle, and its ConsumerRecord, made only for the records that need one."""

    __slots__ = ("consumer_record", "fetched", "handles", "reason_headers", "results", "tps")

    def __init__(self, handles: list[Handle], fetched: Any, results: list[Any], reason_headers: list[Any],
                 consumer_record: Callable[[Any, tuple[Any, ...]], Any]) -> None:
        self.handles, self.fetched, self.results = handles, fetched, results
        self.reason_headers = reason_headers
        self.consumer_record = consumer_record
        self.tps: list[Any] | None = None

    @classmethod
    def judged(cls, native: Any, position: int, handles: list[Handle], reasons: Any) -> _InPlace | None:
        """The handles' batches judged in one call, dead letters' headers written by `reasons` (a ReasonWriter);
        None unless every handle is a batch the core reads."""
        # imported here: this module loads where the Kafka client library is not installed
        from protocol_adapters.kafka.in_place import InPlaceBatch, consumer_record
        if not all(handle[1].__class__ is InPlaceBatch for handle in handles):
            return None
        judged = native.judge_fetched(position, [(tp.topic, tp.partition, batch.data, batch.start, batch.end)
                                                 for tp, batch in handles], reasons)
        if judged is None:
            return None
        fetched, results, reason_headers = judged
        return cls(handles, fetched, results, reason_headers, consumer_record)

    def __len__(self) -> int:
        return len(self.results)

    def _tps(self) -> list[Any]:
        tps = self.tps
        if tps is None:  # each record's topic and partition, made once a record needs them
            tps = self.tps = []
            for tp, batch in self.handles:
                tps += [tp] * batch.count
        return tps

    def handle(self, index: int) -> Handle:
        tp = self._tps()[index]
        return (tp, self.consumer_record(tp, self.fetched.record(index)))

    def records(self, indexes: list[int], sink: Any) -> Any:
        """The records at `indexes` for `sink`: as the core read them where it takes them so, else ConsumerRecords."""
        if getattr(sink, "takes_fetched", None) is not None and sink.takes_fetched():
            return self.fetched.select(indexes)
        return [self.handle(index)[1] for index in indexes]

    def where(self, indexes: list[int]) -> list[tuple[Any, int]]:
        """Where the records at `indexes` were read: (TopicPartition, offset) each."""
        tps = self._tps()
        return [(tps[index], offset) for index, offset in zip(indexes, self.fetched.offsets(indexes), strict=True)]

    def each_record(self, source: Any) -> list[Handle]:
        """Every record's handle in order, the source now tracking each by its own offset (KafkaSource.expand)."""
        return source.expand(self.handles)  # type: ignore[no-any-return]


_Batch = _Records | _InPlace


def _sampled(source: Any, handle: Handle) -> list[Envelope]:
    """A batch read in place as Envelopes (a sample of recent traffic asked for them)."""
    from protocol_adapters.kafka.in_place import records_of
    tp = handle[0]
    return [source.envelope((tp, record)) for record in records_of(tp, handle[1])]
