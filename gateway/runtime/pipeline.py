"""One route's hot loop: read, classify, route, deliver, and only then acknowledge at the source.

At-least-once: a message is acked after its destination confirmed (or after
a deliberate drop/reject); a failed delivery is retried with backoff while
the message stays unacknowledged. A bounded window of in-flight messages
gives backpressure: when the destination is slow or down the window fills
and the loop stops pulling from the source.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from typing import Any, Callable, Protocol

from gateway.compiler import Ruleset
from gateway.envelope import Envelope
from gateway.errors import AdapterError
from gateway.metrics.instruments import RouteMetrics
from gateway.runtime.remap import dead_letter_headers, outgoing
from gateway.runtime.router import Action, decide
from gateway.runtime.routes import Route
from gateway.runtime.stats import RouteStats
from gateway.verdict import Verdict
from protocol_adapters.base import Delivery, EndpointConfig

log = logging.getLogger("xgate.pipeline")
BACKOFF_INITIAL = 0.1
BACKOFF_MAX = 30.0


class RulesetHolder(Protocol):
    """One reference the hot path reads per message; a reload swaps it."""

    ruleset: Ruleset


def backoff_delays(initial: float = BACKOFF_INITIAL, ceiling: float = BACKOFF_MAX) -> Any:
    """Exponential backoff with full jitter, forever."""
    delay = initial
    while True:
        yield random.uniform(delay / 2, delay)
        delay = min(delay * 2, ceiling)


class Pipeline:
    def __init__(self, route: Route, holder: RulesetHolder, stats: RouteStats, metrics: RouteMetrics,
                 create_source: Callable[[EndpointConfig], Any], create_sink: Callable[[EndpointConfig], Any],
                 drain_timeout: float = 30.0) -> None:
        self.route = route
        self.holder = holder
        self.stats = stats
        self.metrics = metrics
        # True while the source adapter is connected (readiness)
        self.connected = False
        self._create_source = create_source
        self._create_sink = create_sink
        self.drain_timeout = drain_timeout
        self._source: Any = None
        self._sinks: dict[str, Any] = {}
        self._stopping = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()

    async def stop(self) -> None:
        self._stopping.set()
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
                self._sinks[endpoint_id] = await stack.enter_async_context(self._create_sink(config))
            self.metrics.up["sink"].set(1)
            source = await stack.enter_async_context(self._create_source(self.route.source))
            self._source = source
            self.connected = True
            self.metrics.up["source"].set(1)
            if self._stopping.is_set():
                await source.stop()
            window = asyncio.Semaphore(self.route.inflight)
            try:
                async for envelope in source:
                    await window.acquire()
                    # classify and hand to the sink in arrival order: sinks that batch keep that order
                    task = asyncio.create_task(self._handle(source, envelope))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
                    task.add_done_callback(lambda _: window.release())
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

    async def _handle(self, source: Any, envelope: Envelope) -> None:
        stats, metrics = self.stats, self.metrics
        stats.inflight += 1
        metrics.inflight.inc()
        received = time.perf_counter()
        try:
            verdict = self.holder.ruleset.classify(envelope)
            metrics.validation.observe(time.perf_counter() - received)
            decision = decide(self.route, verdict)
            kind = decision.kind.value
            stats.verdicts[kind] += 1
            metrics.verdicts[kind].inc()
            named = metrics.definitions.get((verdict.messagegroupid or "", verdict.messageid or "", kind))
            if named is not None:
                named.inc()
            for violation in verdict.violations:
                stats.rules[violation.rule.value] += 1
                metrics.rules[violation.rule.value].inc()
            if decision.destination is not None:
                headers = dead_letter_headers(envelope, verdict, self.route.source.endpoint_id) \
                    if decision.action is Action.DEAD_LETTER else None
                delivered = await self._deliver(decision.destination, envelope, headers, verdict)
                if not delivered:
                    await source.nack(envelope)
                    return
            await source.ack(envelope, Delivery(verdict, decision.destination is not None,
                                                decision.action is Action.REJECT))
            stats.actions[decision.action.value] += 1
            target = decision.destination.endpoint_id if decision.destination is not None else ""
            metrics.routed[(target, decision.action.value)].inc()
            metrics.end_to_end.observe(time.perf_counter() - received)
        except asyncio.CancelledError:
            raise  # shutdown past the drain timeout: unacknowledged, so the broker delivers it again
        except Exception:  # noqa: BLE001 - a bug must not lose the message: release it and say so
            stats.delivery_failures += 1
            log.exception("route %s: message could not be handled; released for redelivery",
                          self.route.source.endpoint_id)
            with contextlib.suppress(Exception):
                await source.nack(envelope)
        finally:
            stats.inflight -= 1
            metrics.inflight.dec()

    async def _deliver(self, destination: EndpointConfig, envelope: Envelope,
                       headers: list[tuple[str, str]] | None, verdict: Verdict) -> bool:
        """Send until confirmed; retriable failures back off and retry, a permanent one is dead-lettered once."""
        sink = self._sinks[destination.endpoint_id]
        message = outgoing(envelope, destination.protocol, headers)
        delays = backoff_delays()
        while True:
            try:
                await sink.send(message)
                return True
            except AdapterError as exc:
                self.metrics.failures[(destination.endpoint_id, exc.retriable)].inc()
                if exc.retriable:
                    self.stats.retries += 1
                    await asyncio.sleep(next(delays))
                    continue
                self.stats.delivery_failures += 1
                fallback = self.route.nonconformant
                if headers is None and fallback is not None and fallback.endpoint_id != destination.endpoint_id:
                    error = dead_letter_headers(envelope, verdict, self.route.source.endpoint_id)
                    error.append(("xgate-error", str(exc)[:512]))
                    return await self._deliver(fallback, envelope, error, verdict)
                # nowhere left to put it: leave it at the source, after a pause so it does not spin
                await asyncio.sleep(next(delays))
                return False
