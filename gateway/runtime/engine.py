"""The service: one pipeline per route in a TaskGroup, a live summary, reloads, and a draining shutdown.

`request_stop()` (wired to SIGTERM/SIGINT by `xgate run`) stops every source;
each pipeline then lets its in-flight messages finish (up to the drain
timeout), acknowledges what was delivered, releases the rest, closes its
adapters, and `run()` returns. Whatever still runs `STOP_GRACE` seconds after
the drain timeout (an adapter that hangs closing) is cancelled; a second
request does that at once. `apply()` swaps in a new ruleset with one
assignment and starts, stops (draining) or restarts only the routes that
changed. One route's failure never ends the others: a route that cannot
start at startup stops the gateway (`fatal`), one a reload started gives way
to the route it replaced, one that ran before starts again after a pause.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, TextIO

from gateway.compiler import Ruleset
from gateway.compiler.core import NativeJudge
from gateway.errors import AdapterError, EndpointMismatch
from gateway.metrics import names
from gateway.metrics.instruments import GatewayMetrics
from gateway.routes.resolve import Route
from gateway.runtime.dead_letter_ring import DeadLetters
from gateway.runtime.pipeline import Pipeline, backoff_delays
from gateway.runtime.recent import RecentTraffic
from gateway.runtime.shadow import ShadowJudge
from gateway.runtime.stats import GatewayStats
from protocol_adapters import registry
from protocol_adapters.base import EndpointConfig

log = logging.getLogger("xgate.engine")
# seconds past the drain timeout that a stop waits for adapters to close before cancelling what remains
STOP_GRACE = 5.0
# a route that failed after running is started again after this pause (doubling up to ROUTE_RETRY_MAX)
ROUTE_RETRY_INITIAL = 1.0
ROUTE_RETRY_MAX = 30.0


class RulesetRef:
    """The one reference the hot path reads; a reload replaces `ruleset` in a single assignment, which also
    builds its native core (`native`: lowered once per ruleset, never per message). `shadow` is the candidate
    judged beside it (gateway/runtime/shadow.py), None when there is none. `recent` keeps what the routes
    received lately, for a dry run."""

    def __init__(self, ruleset: Ruleset) -> None:
        self.ruleset = ruleset
        self.shadow: ShadowJudge | None = None
        # the last messages of each endpoint, for a registry write's dry run (recent.py)
        self.recent = RecentTraffic()
        # the latest nonconformant and unmatched messages per route, while the console is on (dead_letter_ring.py)
        self.dead_letters: DeadLetters | None = None

    @property
    def ruleset(self) -> Ruleset:
        return self.native.ruleset

    @ruleset.setter
    def ruleset(self, ruleset: Ruleset) -> None:
        self.native = NativeJudge(ruleset)  # one reference: the ruleset and its core swap together


@dataclass
class _Running:
    route: Route
    pipeline: Pipeline
    task: asyncio.Task[None] | None = None
    # started by a reload (its failure to start fails that reload), and the last good route it replaced
    reloaded: bool = False
    previous: Route | None = None
    halted: asyncio.Event = field(default_factory=asyncio.Event)  # set when the route is being stopped


def failure_text(exc: BaseException) -> str:
    """One line for an adapter or route failure: the adapter's own message, or the exception's type and text."""
    return str(exc) if isinstance(exc, AdapterError) else f"{type(exc).__name__}: {exc}"


class Engine:
    def __init__(self, routes: list[Route], ruleset: Ruleset, *, drain_timeout: float = 30.0,
                 summary_interval: float = 0.0, summary_stream: TextIO | None = None,
                 metrics: GatewayMetrics | None = None,
                 create_source: Callable[[EndpointConfig], Any] = registry.create_source,
                 create_sink: Callable[[EndpointConfig], Any] = registry.create_sink) -> None:
        self.ref = RulesetRef(ruleset)
        self.stats = GatewayStats()
        self.metrics = metrics if metrics is not None else GatewayMetrics()
        self.drain_timeout = drain_timeout
        self.summary_interval = summary_interval
        self.summary_stream = summary_stream or sys.stderr
        self._create_source = create_source
        self._create_sink = create_sink
        self._initial = routes
        self._running: dict[str, _Running] = {}
        self._group: asyncio.TaskGroup | None = None
        self._stop = asyncio.Event()
        self._force = asyncio.Event()
        # set when a route could not start at startup: `xgate run` reports it in one line and exits 2
        self.fatal: str | None = None
        # the config directory's watch (config_watch.py): None when there is none (--no-watch), False while a
        # failed watch waits to be started again (then /readyz is false)
        self.config_watch: bool | None = None
        self._started = time.monotonic()
        self.metrics[names.DEFINITIONS].set(ruleset.definition_count)
        self.metrics[names.LAST_RELOAD].set(time.time())  # the startup load counts as a successful load

    # -- lifecycle -----------------------------------------------------------------------------------
    def request_stop(self) -> None:
        """Stop, draining; asked again while stopping, stop now (what is in flight is released)."""
        if self._stop.is_set() and not self._force.is_set():
            log.warning("stop requested again: releasing what is in flight and stopping now")
            self._force.set()
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    async def run(self) -> None:
        self._started = time.monotonic()
        async with asyncio.TaskGroup() as group:
            self._group = group
            for route in self._initial:
                self._start(route)
            summary = group.create_task(self._summary()) if self.summary_interval > 0 else None
            await self._stop.wait()
            await self._shutdown()
            if summary is not None:
                summary.cancel()
        self._group = None
        if self.summary_interval > 0:
            self._print_summary()

    async def _shutdown(self) -> None:
        """Stop every route: drain for `drain_timeout`, then cancel what is left (at once on a second request)."""
        running = list(self._running.values())
        self._running.clear()
        self.metrics[names.ROUTES].set(0)
        for each in running:
            each.halted.set()
        tasks: set[asyncio.Future[Any]] = {r.task for r in running if r.task is not None}
        stoppers = {asyncio.ensure_future(r.pipeline.stop()) for r in running}
        force = asyncio.ensure_future(self._force.wait())
        deadline = time.monotonic() + self.drain_timeout + STOP_GRACE
        pending = tasks
        while pending and not self._force.is_set() and time.monotonic() < deadline:
            _, pending = await asyncio.wait(pending | {force}, timeout=deadline - time.monotonic(),
                                            return_when=asyncio.FIRST_COMPLETED)
            pending.discard(force)
        force.cancel()
        for task in stoppers:
            task.cancel()
        # a task that catches one cancellation and then waits on a dead broker again is cancelled again
        for _ in range(int(STOP_GRACE)):
            if not pending:
                return
            for left in pending:
                left.cancel()
            _, pending = await asyncio.wait(pending, timeout=1.0)
        log.error("%d routes did not stop after being cancelled", len(pending))

    def ready(self) -> tuple[bool, dict[str, bool]]:
        """Ready when a ruleset is loaded, every route's source adapter is connected, no destination is down
        and the config directory's watch, when there is one, is running."""
        connected = {source: running.pipeline.ready for source, running in self._running.items()}
        if self.config_watch is False:
            return False, {**connected, "config-watch": False}
        return bool(connected) and all(connected.values()), connected

    def running_routes(self) -> list[tuple[Route, Pipeline]]:
        """Each route running now with its pipeline (the console reads their stats, window and health)."""
        return [(running.route, running.pipeline) for running in self._running.values()]

    def destinations_down(self) -> dict[str, dict[str, str]]:
        """Per route (source endpoint): its destinations that failed every send for seconds, with the last error."""
        return {source: down for source, running in self._running.items() if (down := running.pipeline.health.down())}

    # -- routes ------------------------------------------------------------------------------------------
    def _start(self, route: Route, *, reloaded: bool = False, previous: Route | None = None) -> None:
        assert self._group is not None
        source = route.source.endpoint_id
        destinations = [d.endpoint_id for d in (route.conformant, route.nonconformant, route.unmatched) if d]
        metrics = self.metrics.route(source, destinations)
        self._bind(metrics, self.ref.ruleset)
        pipeline = Pipeline(route, self.ref, self.stats.route(source), metrics, self._create_source,
                            self._create_sink, self.drain_timeout)
        running = self._running[source] = _Running(route, pipeline, reloaded=reloaded, previous=previous)
        running.task = self._group.create_task(self._supervise(running))
        self.metrics[names.ROUTES].set(len(self._running))

    async def _supervise(self, running: _Running) -> None:
        """Run one route; its failure is handled here so that it never ends the other routes."""
        source = running.route.source.endpoint_id
        delays = backoff_delays(ROUTE_RETRY_INITIAL, ROUTE_RETRY_MAX)
        while True:
            try:
                await running.pipeline.run()
                return
            except Exception as exc:
                reason = failure_text(exc)
                # the configuration contradicts the broker (AMQP: a queue declared otherwise), found before any
                # message: restarting cannot help, so it is a route that could not start
                contradicted = isinstance(exc, EndpointMismatch) and running.pipeline.stats.received == 0
            if self._stop.is_set() or self._running.get(source) is not running:
                return  # stopped or replaced meanwhile
            if not running.pipeline.connected_once or contradicted:
                self._not_started(running, reason)
                return
            delay = next(delays)
            log.error("route %s failed: %s; starting it again in %.0f s", source, reason, delay)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await running.halted.wait()
            if running.halted.is_set():
                return

    def _not_started(self, running: _Running, reason: str) -> None:
        source = running.route.source.endpoint_id
        if running.reloaded:
            # started by a reload: that reload failed; the route it replaced (if any) runs again
            del self._running[source]
            self.metrics[names.ROUTES].set(len(self._running))
            self.metrics[names.RELOADS].labels("failed").inc()
            kept = "; its last good route runs again" if running.previous is not None else ""
            log.error("reload: route %s could not start: %s%s", source, reason, kept)
            if running.previous is not None:
                self._start(running.previous, reloaded=True)
            return
        self.fatal = f"route {source} could not start: {reason}"
        log.error("%s; stopping", self.fatal)
        self.request_stop()

    async def _stop_route(self, source: str) -> None:
        running = self._running.pop(source)
        running.halted.set()
        await running.pipeline.stop()
        if running.task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await running.task
        self.metrics[names.ROUTES].set(len(self._running))

    def _bind(self, metrics: Any, ruleset: Ruleset) -> None:
        metrics.definitions = self._children(metrics, ruleset)

    def _children(self, metrics: Any, ruleset: Ruleset) -> dict[tuple[str, str, str], Any]:
        """The route's per-definition counters for `ruleset` (every definition its endpoint can name)."""
        rules = ruleset.endpoints.get(metrics.endpoint)
        pairs = [(d.groupid, d.messageid) for d in rules.definitions] if rules is not None else []
        return self.metrics.definition_children(metrics.endpoint, pairs)

    def adapter_problems(self, routes: list[Route]) -> dict[str, str]:
        """Endpoint id -> why its adapter cannot be built (a bad option), for every endpoint the routes use.

        Adapters are only constructed here (options read), never entered: no connection is made."""
        problems: dict[str, str] = {}
        for route in routes:
            roles = [(route.source, self._create_source)]
            roles += [(d, self._create_sink) for d in (route.conformant, route.nonconformant, route.unmatched) if d]
            for config, create in roles:
                if config.endpoint_id in problems:
                    continue
                try:
                    create(config)
                except Exception as exc:
                    problems[config.endpoint_id] = failure_text(exc)
        return problems

    async def apply(self, routes: list[Route], ruleset: Ruleset, native: NativeJudge | None = None
                    ) -> dict[str, list[str]]:
        """Swap the ruleset, then start new routes, drain removed ones and restart changed ones. `native`: the
        ruleset's core, built beforehand off the event loop (lowering 5,000 definitions takes 0.7 s)."""
        if self._stop.is_set():  # a reload finishing during shutdown starts nothing
            return {"added": [], "removed": [], "restarted": []}
        # each running route's per-definition counters, made off the event loop (a large registry's take a
        # quarter of a second), then set together with the swap: no await between them
        running_metrics = [running.pipeline.metrics for running in self._running.values()]
        bound = await asyncio.to_thread(lambda: [self._children(metrics, ruleset) for metrics in running_metrics])
        if self._stop.is_set():
            return {"added": [], "removed": [], "restarted": []}
        # from the next message on, every pipeline judges with the new rules
        if native is not None and native.ruleset is ruleset:
            self.ref.native = native
        else:
            self.ref.ruleset = ruleset
        self.metrics[names.DEFINITIONS].set(ruleset.definition_count)
        for metrics, children in zip(running_metrics, bound):
            metrics.definitions = children
        wanted = {route.source.endpoint_id: route for route in routes}
        removed = [s for s in self._running if s not in wanted]
        changed = [s for s, r in wanted.items() if s in self._running and self._running[s].route != r]
        added = [s for s in wanted if s not in self._running]
        previous = {s: self._running[s].route for s in changed}
        await asyncio.gather(*(self._stop_route(s) for s in removed + changed))
        for source in changed + added:
            self._start(wanted[source], reloaded=True, previous=previous.get(source))
        return {"added": added, "removed": removed, "restarted": changed}

    # -- summary -----------------------------------------------------------------------------------------
    async def _summary(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            while True:
                await asyncio.sleep(self.summary_interval)
                self._print_summary()

    def _print_summary(self) -> None:
        text = self.stats.render()
        if not text:
            return
        elapsed = time.monotonic() - self._started
        judged = sum(route.received for route in self.stats.routes.values())
        self.summary_stream.write(f"-- xgate {elapsed:.0f}s: {judged} messages judged "
                                  f"({judged / max(elapsed, 1e-9):,.0f}/s) --\n{text}\n")
        self.summary_stream.flush()
