"""One route's hot loop: read, classify, route, deliver, and only then acknowledge at the source.

At-least-once: a message is acked after its destination confirmed (or after
a deliberate drop/reject); a failed delivery is retried with backoff while
the message stays unacknowledged. A bounded window of in-flight messages
gives backpressure: when the destination is slow or down the window fills
and the loop stops pulling from the source.

Batches: a source that fetches many messages at once (Kafka) offers the ones
it already holds through `take_ready(limit)`; they are handled as one batch
by one task, and a sink with `send_many` confirms a destination's share of
the batch with one call instead of one per message; a source with `ack_many`
(Kafka) settles a fully delivered batch with one call, and metrics are
counted once per batch. Every message is still judged, delivered, retried
and acknowledged on its own terms: a failure of one is handled for that one.

A Kafka to Kafka route hands its batches to the record lane (record_lane.py):
records, not Envelopes, for what conforms; this class's deciding, delivery and
settling for the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections import Counter as Tally
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from gateway import backoff
from gateway.compiler import Ruleset
from gateway.compiler.core import NativeJudge
from gateway.envelope import Envelope
from gateway.errors import AdapterError, MessageRefused
from gateway.metrics.instruments import RouteMetrics, observe_many, observe_repeated
from gateway.routes.resolve import Route
from gateway.runtime.dead_letter_ring import DeadLetters
from gateway.runtime.health import DestinationHealth
from gateway.runtime.judged import Judged, Landing
from gateway.runtime.recent import RecentTraffic
from gateway.runtime.record_lane import RecordLane
from gateway.runtime.remap import dead_letter_headers, outgoing
from gateway.runtime.router import Action, Kind, decide_kind, kind_of
from gateway.runtime.shadow import ShadowJudge
from gateway.runtime.stats import RouteStats
from gateway.verdict import Outcome, Rule, Verdict, Violation, truncate
from protocol_adapters.base import Delivery, EndpointConfig

log = logging.getLogger("xgate.pipeline")
BACKOFF_INITIAL = 0.1
BACKOFF_MAX = 30.0
# messages judged and delivered together at most (one task, one wait per destination). With 2000 (and a Kafka
# source's fetch of 2000, a window of 4000) a Kafka route at full rate moved 16-23% more than with 500 and
# 1000: fewer, larger producer batches, fewer tasks per message (docs/performance.md, twelfth sitting)
BATCH_MAX = 2000
# a message whose judging raised this many times is dead-lettered as undecodable instead of released again:
# a bug on one message must neither lose it nor stall its partition or queue forever
JUDGE_ATTEMPTS = 3
_FAILURES_KEPT = 10_000
# seconds a cancelled batch may spend releasing its unsettled messages at the source
RELEASE_TIMEOUT = 2.0


class RulesetHolder(Protocol):
    """One reference the hot path reads per message; a reload swaps it."""

    ruleset: Ruleset
    native: NativeJudge  # the ruleset's native core, swapped with it
    shadow: ShadowJudge | None
    recent: RecentTraffic  # what each endpoint received lately (a registry write's dry run judges it)
    dead_letters: DeadLetters | None  # the latest nonconformant and unmatched messages, while the console is on


def backoff_delays(initial: float = BACKOFF_INITIAL, ceiling: float = BACKOFF_MAX) -> Iterator[float]:
    """The route's retry delays (gateway/backoff.py), 0.1 s doubling to 30 s unless told otherwise."""
    return backoff.delays(initial, ceiling)


class Pipeline:
    def __init__(self, route: Route, holder: RulesetHolder, stats: RouteStats, metrics: RouteMetrics,
                 create_source: Callable[[EndpointConfig], Any], create_sink: Callable[[EndpointConfig], Any],
                 drain_timeout: float = 30.0) -> None:
        self.route = route
        self.holder = holder
        self.stats = stats
        self.metrics = metrics
        # True while the source adapter is connected (readiness); `connected_once` stays True after the first time
        self.connected = False
        self.connected_once = False
        self._create_source = create_source
        self._create_sink = create_sink
        self.drain_timeout = drain_timeout
        self._source: Any = None
        self.sinks: dict[str, Any] = {}
        self._stopping = asyncio.Event()
        self._window: _Window | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._judge_failures: dict[int, int] = {}  # message fingerprint -> times its judging raised
        self.health = DestinationHealth(route.source.endpoint_id, metrics.destination_up, metrics.up["sink"])
        # a verdict's decision depends on its kind alone: decided once per route, looked up per message
        self.decisions = {kind: decide_kind(route, kind) for kind in Kind}
        # the kinds whose messages carry dead-letter headers, and the (destination, action) a message of each
        # kind counts under once it landed as decided
        self.dead_lettered = {kind for kind, decision in self.decisions.items()
                              if decision.action is Action.DEAD_LETTER and decision.destination is not None}
        self._routed_as = {kind: (decision.destination.endpoint_id if decision.destination is not None else "",
                                  decision.action.value) for kind, decision in self.decisions.items()}

    @property
    def ready(self) -> bool:
        """The source is connected and no destination has been failing every send for seconds."""
        return self.connected and self.health.healthy()

    async def stop(self) -> None:
        self._stopping.set()
        self.health.close()
        if self._window is not None:
            self._window.close()  # a loop waiting for room in a full window sees the stop at once
        if self._source is not None:
            await self._source.stop()

    async def run(self) -> None:
        """Connect (retrying while brokers are unreachable), then pump until stopped, then drain."""
        delays = backoff_delays()
        attempts = 0
        while not self._stopping.is_set():
            try:
                if attempts:
                    self.metrics.reconnects["source"].inc()
                attempts += 1
                await self._run_connected()
                return
            except AdapterError as exc:
                if not exc.retriable:
                    raise
                log.warning("route %s: %s; connecting again", self.route.source.endpoint_id, exc)
                # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(next(delays)):
                        await self._stopping.wait()

    async def _run_connected(self) -> None:
        destinations = {d.endpoint_id: d for d in (self.route.conformant, self.route.nonconformant,
                                                   self.route.unmatched) if d is not None}
        async with contextlib.AsyncExitStack() as stack:
            stack.callback(self._disconnected)
            for endpoint_id, config in destinations.items():
                self.sinks[endpoint_id] = await stack.enter_async_context(self._create_sink(config))
            self.metrics.up["sink"].set(0 if self.health.down() else 1)
            created = self._create_source(self.route.source)
            # decided before the source connects: a lane's source hands out its plain batches whole
            lane = RecordLane.of(self, created)
            source = await stack.enter_async_context(created)
            self._source = source
            self.connected = self.connected_once = True
            self.metrics.up["source"].set(1)
            if self._stopping.is_set():
                await source.stop()
            window = self._window = _Window(self.route.inflight)
            if self._stopping.is_set():
                window.close()
            items: Any
            handle: Callable[[Any, list[Any]], Any]
            weigh: Callable[[Any], int] | None = None  # the messages an item stands for, when not one
            if lane is not None:  # Kafka to Kafka: records judged and forwarded as they came
                items, take_ready, handle = source.handles(), source.take_ready_handles, lane.handle
                release = lane.release
                weigh = source.weight if getattr(source, "in_place", False) else None
            else:
                items, take_ready, handle = source, getattr(source, "take_ready", None), self.handle
                release = source.nack
            try:
                async for item in items:
                    if not await window.take():
                        await release(item)  # stopping: released, the broker delivers it again
                        break
                    batch = [item]
                    size = 1
                    if weigh is not None:  # the window counts messages: a batch read in place takes its records
                        size = weigh(item)
                        window.free -= size - 1
                    if take_ready is not None and window.free > 0 and size < BATCH_MAX:
                        more = take_ready(min(window.free, BATCH_MAX - size))
                        taken = len(more) if weigh is None else sum(map(weigh, more))
                        window.free -= taken
                        size += taken
                        batch += more
                    # classify and hand to the sink in arrival order: sinks that batch keep that order
                    task = asyncio.create_task(handle(source, batch))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
                    task.add_done_callback(functools.partial(_release, window, size))
            finally:
                await self._drain()
                self._source = None

    def _disconnected(self) -> None:
        self.connected = False
        self.metrics.up["source"].set(0)
        self.metrics.up["sink"].set(0)

    async def _drain(self) -> None:
        """Let in-flight messages finish; what does not finish in time stays unacknowledged (redelivered)."""
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks), timeout=self.drain_timeout)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending)

    def count_unreadable(self, source: Any) -> None:
        """Records the source skipped because it could not read them (a Kafka source's unreadable batch)."""
        take = getattr(source, "take_unreadable", None)
        skipped = take() if take is not None else 0
        if skipped:
            self.metrics.undeliverable[("", "unreadable")].inc(skipped)

    async def handle(self, source: Any, batch: list[Envelope]) -> None:
        """One batch from source to sink: judge every message in one loop, deliver each destination's share
        with one call, settle at the source (with one call where it can), count once per batch."""
        self.count_unreadable(source)
        self.holder.recent.add_envelopes(self.route.source.endpoint_id, batch)
        stats, metrics = self.stats, self.metrics
        stats.inflight += len(batch)
        metrics.inflight.inc(len(batch))
        received = time.perf_counter()
        judged: list[Judged] = []  # one per message of the batch, in order, once judged
        try:
            judged = self._judge_all(batch)
            shadow = self.holder.shadow
            if shadow is not None:  # a candidate judged beside the active rules: counted, routes nothing
                shadow.judge(self.route.source.endpoint_id,
                             [(item.envelope, item.verdict) for item in judged if item.verdict is not None])
            await self.deliver_judged(judged)
            acked = await self.settle(source, judged)
            observe_repeated(metrics.end_to_end, time.perf_counter() - received, acked)
        except asyncio.CancelledError:
            # shutdown past the drain timeout: released (never acknowledged), so the broker delivers it again
            await self.release(source, _unsettled(batch, judged))
            raise
        except Exception:
            stats.delivery_failures += 1
            log.exception("route %s: messages could not be handled; released for redelivery",
                          self.route.source.endpoint_id)
            for envelope in _unsettled(batch, judged):
                with contextlib.suppress(Exception):
                    await source.nack(envelope)
        finally:
            stats.inflight -= len(batch)
            metrics.inflight.dec(len(batch))

    async def deliver_judged(self, judged: list[Judged]) -> None:
        """Each destination's share of the batch, in arrival order, delivered concurrently (a task each, even a lone
        share: tasks start in the order they are made, so a batch's messages reach a sink after those of the batch
        before it, even where that one had several shares and this one has one; sent inline, it went first)."""
        shares: dict[str, tuple[EndpointConfig, list[Judged]]] = {}
        for item in judged:
            destination = item.decision.destination if item.decision is not None else None
            if destination is not None:
                share = shares.get(destination.endpoint_id)
                if share is None:  # not setdefault: that would build a tuple and a list per message
                    share = shares[destination.endpoint_id] = (destination, [])
                share[1].append(item)
        await asyncio.gather(*(self._deliver_share(*share) for share in shares.values()))

    async def settle(self, source: Any, judged: list[Judged]) -> int:
        """Acknowledge what landed, release what did not, in batch order; count each action once per batch.
        Returns how many were acknowledged."""
        ack_many = getattr(source, "ack_many", None)
        if ack_many is not None and all(item.delivered and item.verdict is not None for item in judged):
            # the common case: everything landed, and the source needs no outcome per message (Kafka)
            await ack_many([item.envelope for item in judged])
            for item in judged:
                item.settled = True
            acked = judged
        else:
            acked = []
            for item in judged:
                item.settled = True  # before the call: a message is never settled twice
                verdict, decision = item.verdict, item.decision
                if verdict is None or decision is None or not item.delivered:
                    await source.nack(item.envelope)
                    continue
                await source.ack(item.envelope, Delivery(verdict, item.landing is not Landing.DROPPED
                                                         and decision.destination is not None,
                                                         decision.action is Action.REJECT))
                acked.append(item)
        self.count_landed(acked, Tally())
        return len(acked)

    def count_landed(self, acked: list[Judged], as_decided: Tally[Kind]) -> None:
        """Count where each acknowledged message landed, with `as_decided`: by kind, messages not in `acked`
        that landed as decided (a record lane's forwarded conformant records)."""
        stats, metrics, route = self.stats, self.metrics, self.route
        routed: Tally[tuple[str, str]] = Tally()
        dead_letters = route.nonconformant.endpoint_id if route.nonconformant is not None else None
        sent = Landing.SENT
        for item in acked:
            decision = item.decision
            assert decision is not None
            if item.landing is sent:
                as_decided[decision.kind] += 1
                continue
            target, action = self._routed_as[decision.kind]
            if item.landing is Landing.DEAD_LETTERED and dead_letters is not None:
                target, action = dead_letters, Action.DEAD_LETTER.value
            elif item.landing is Landing.DROPPED:
                action = Action.DROP.value
            routed[(target, action)] += 1
        for kind, count in as_decided.items():
            routed[self._routed_as[kind]] += count
        for (target, action), count in routed.items():
            stats.actions[action] += count
            metrics.routed[(target, action)].inc(count)

    async def release(self, source: Any, envelopes: list[Any], nack: Callable[[Any], Any] | None = None) -> None:
        """Nack what a cancelled batch had not settled (Envelopes, or handles with the source's `nack` for them);
        bounded, as the source may be unreachable too."""
        nack = source.nack if nack is None else nack
        with contextlib.suppress(Exception, TimeoutError):
            async with asyncio.timeout(RELEASE_TIMEOUT):
                for envelope in envelopes:
                    await nack(envelope)

    def _judge_all(self, batch: list[Envelope]) -> list[Judged]:
        """Classify and decide every message of a batch; a message whose judging raised (a bug) is left
        undecided and released. Counted once per batch."""
        clock = time.perf_counter
        started = clock()
        durations: list[float] = []
        try:  # the whole batch in one call: Kafka messages by the native core, the rest by the Python judge
            verdicts: list[Verdict | None] = self.holder.native.judge(batch)  # type: ignore[assignment]
            durations = [(clock() - started) / len(batch)] * len(batch) if batch else []
        except Exception:  # a bug in the batch call: each message is judged alone below, and only its own fails
            log.exception("route %s: the batch could not be judged at once", self.route.source.endpoint_id)
            verdicts = [None] * len(batch)
        return self.decide_all(batch, verdicts, durations)

    def decide_all(self, batch: list[Envelope], verdicts: list[Verdict | None],
                   durations: list[float]) -> list[Judged]:
        """Decide every message of a batch by its verdict (None: judged here by the Python judge), count the
        verdicts and their judging `durations` once per batch."""
        stats, metrics, route = self.stats, self.metrics, self.route
        classify = self.holder.ruleset.classify
        decisions = self.decisions
        clock = time.perf_counter
        dead_lettered = self.dead_lettered
        # the console's latest nonconformant and unmatched messages (dead_letter_ring.py), when it is on
        kept = self.holder.dead_letters
        keeping: list[tuple[Envelope, Verdict]] | None = [] if kept is not None else None
        judged: list[Judged] = []
        # counted by enum member (a member hashes as its text, where `.value` is a Python property call) and
        # named by text once per batch below
        kinds: Tally[Kind] = Tally()
        named: Tally[tuple[str, str, Kind]] = Tally()
        rules: Tally[Rule] = Tally()
        for envelope, verdict in zip(batch, verdicts):
            try:
                if verdict is None:
                    started = clock()
                    verdict = classify(envelope)
                    durations.append(clock() - started)
            except Exception as exc:
                stats.delivery_failures += 1
                failed = self._judging_failed(envelope, exc)
                if failed is None:
                    judged.append(Judged(envelope))
                    continue
                verdict = failed
            decision = decisions[kind_of(verdict)]
            item = Judged(envelope, verdict, decision)
            kind = decision.kind
            kinds[kind] += 1
            named[(verdict.messagegroupid or "", verdict.messageid or "", kind)] += 1
            for violation in verdict.violations:
                rules[violation.rule] += 1
            if kind in dead_lettered:
                item.headers = dead_letter_headers(envelope, verdict, route.source.endpoint_id)
            if keeping is not None and kind is not Kind.CONFORMANT:
                keeping.append((envelope, verdict))
            judged.append(item)
        observe_many(metrics.validation, durations)
        if keeping and kept is not None:
            kept.add_many(route.source.endpoint_id, keeping)
        self.count_verdicts(kinds, named)
        self.count_rules({rule.value: count for rule, count in rules.items()})
        return judged

    def count_verdicts(self, kinds: Tally[Kind], named: Tally[tuple[str, str, Kind]]) -> None:
        """Verdicts by kind, and by (group, message, kind), into the route's stats and metrics."""
        stats, metrics = self.stats, self.metrics
        for kind, count in kinds.items():
            stats.verdicts[kind.value] += count
            metrics.verdicts[kind.value].inc(count)
        for (group, message, kind), count in named.items():
            child = metrics.definitions.get((group, message, kind.value))
            if child is not None:
                child.inc(count)

    def count_rules(self, rules: dict[str, int]) -> None:
        """Violations by rule name into the route's stats and metrics."""
        stats, metrics = self.stats, self.metrics
        for rule, count in rules.items():
            stats.rules[rule] += count
            metrics.rules[rule].inc(count)

    def _judging_failed(self, envelope: Envelope, exc: Exception) -> Verdict | None:
        """None: release the message for another try; after JUDGE_ATTEMPTS, a `decode` verdict that says why."""
        fingerprint = hash((envelope.body, repr(sorted(envelope.fields.items(), key=lambda item: item[0]))))
        failures = self._judge_failures.pop(fingerprint, 0) + 1
        source = self.route.source.endpoint_id
        if failures < JUDGE_ATTEMPTS:
            self._judge_failures[fingerprint] = failures
            while len(self._judge_failures) > _FAILURES_KEPT:
                del self._judge_failures[next(iter(self._judge_failures))]
            log.exception("route %s: message could not be judged (attempt %d of %d); released for redelivery",
                          source, failures, JUDGE_ATTEMPTS)
            return None
        log.exception("route %s: message could not be judged %d times; routed as nonconformant", source, failures)
        return Verdict(Outcome.NONCONFORMANT, None, None, (Violation(
            "record", Rule.DECODE, "a message xgate can judge", truncate(envelope.body),
            f"xgate failed judging this message {failures} times ({type(exc).__name__}: {str(exc)[:200]}); "
            "please report it with this message"),))

    async def _deliver_share(self, destination: EndpointConfig, share: list[Judged]) -> None:
        """Deliver messages of one batch to their one destination: with one call when the sink can batch.

        A message the batched send did not confirm, or every message for a sink that cannot batch, goes
        through `deliver` (retries, fallback) on its own, concurrently and submitted in arrival order.
        """
        sink = self.sinks[destination.endpoint_id]
        send_many = getattr(sink, "send_many", None)
        pending = share
        # a share of one too: alone through `send`, a Kafka sink's record would wait out the producer's linger
        if send_many is not None:
            send_records = getattr(sink, "send_records", None)
            if send_records is not None and all(item.record is not None for item in share):
                # a record lane's Kafka records to a Kafka sink: as they came, with their dead-letter headers
                failures = await send_records([item.record for item in share], [item.headers for item in share])
            else:
                protocol = destination.protocol
                failures = await send_many([outgoing(item.envelope, protocol, item.headers) for item in share])
            pending = []
            for item, failure in zip(share, failures):
                if failure is not None:
                    self.metrics.failures[(destination.endpoint_id, failure.retriable)].inc()
                    pending.append(item)
        outcomes = await asyncio.gather(*(self.deliver(destination, item.envelope, item.headers, item.verdict)
                                          for item in pending))
        for item, landing in zip(pending, outcomes):
            item.landing = landing
            item.delivered = landing is not Landing.KEPT
        if send_many is not None and len(pending) < len(share):
            self.health.succeeded(destination.endpoint_id)

    async def deliver(self, destination: EndpointConfig, envelope: Envelope,
                       headers: list[tuple[str, str]] | None, verdict: Verdict | None,
                       last_resort: bool = False) -> Landing:
        """Send until confirmed; retriable failures back off and retry, a permanent one is dead-lettered once.

        A message the destination refuses for itself (MessageRefused: too large, refused by policy) that the
        dead-letter destination cannot hold either is dropped, counted and logged, then acknowledged: one
        message must not hold its route forever. Any other permanent failure leaves it at the source.
        """
        sink = self.sinks[destination.endpoint_id]
        message = outgoing(envelope, destination.protocol, headers)
        delays = backoff_delays()
        while True:
            try:
                await sink.send(message)
                self.health.succeeded(destination.endpoint_id)
                return Landing.SENT
            except AdapterError as exc:
                self.metrics.failures[(destination.endpoint_id, exc.retriable)].inc()
                if not isinstance(exc, MessageRefused):
                    self.health.failed(destination.endpoint_id, exc)
                if exc.retriable:
                    self.stats.retries += 1
                    await asyncio.sleep(next(delays))
                    continue
                self.stats.delivery_failures += 1
                fallback = self.route.nonconformant
                if not last_resort and fallback is not None and fallback.endpoint_id != destination.endpoint_id:
                    assert verdict is not None  # only judged messages are delivered
                    error = list(headers) if headers is not None else dead_letter_headers(
                        envelope, verdict, self.route.source.endpoint_id)
                    error.append(("xgate-error", str(exc)[:512]))
                    landing = await self.deliver(fallback, envelope, error, verdict, last_resort=True)
                    return Landing.DEAD_LETTERED if landing is Landing.SENT else landing
                if isinstance(exc, MessageRefused):
                    self._undeliverable(destination, envelope, exc)
                    return Landing.DROPPED
                # nowhere left to put it: leave it at the source, after a pause so it does not spin
                await asyncio.sleep(next(delays))
                return Landing.KEPT

    def _undeliverable(self, destination: EndpointConfig, envelope: Envelope, exc: MessageRefused) -> None:
        cause = exc.cause if (destination.endpoint_id, exc.cause) in self.metrics.undeliverable else "refused"
        self.metrics.undeliverable[(destination.endpoint_id, cause)].inc()
        log.warning("route %s: message of %d bytes dropped (%s): %s; no dead-letter destination can hold it",
                    self.route.source.endpoint_id, len(envelope.body), cause, exc)


def _unsettled(batch: list[Envelope], judged: list[Judged]) -> list[Envelope]:
    """What a failed batch must still release: all of it before it was judged, else what `settle` had not reached."""
    return [item.envelope for item in judged if not item.settled] if judged else batch


def _release(window: _Window, count: int, _: object) -> None:
    window.give(count)


class _Window:
    """Backpressure: at most `size` messages in flight; a batch takes what is free, at least one message."""

    def __init__(self, size: int) -> None:
        self.free = size
        self.closed = False
        self._room = asyncio.Event()
        self._room.set()

    async def take(self) -> bool:
        """Wait for room; False when the window is full and closed (stopping): nothing more fits before the drain."""
        while self.free <= 0:
            if self.closed:
                return False
            self._room.clear()
            await self._room.wait()
        self.free -= 1
        return True

    def close(self) -> None:
        self.closed = True
        self._room.set()

    def give(self, count: int) -> None:
        self.free += count
        self._room.set()
