"""The service: one pipeline per route in a TaskGroup, a live summary, reloads, and a draining shutdown.

`request_stop()` (wired to SIGTERM/SIGINT by `xgate run`) stops every source;
each pipeline then lets its in-flight messages finish (up to the drain
timeout), acknowledges what was delivered, closes its adapters, and `run()`
returns. `apply()` swaps in a new ruleset with one assignment and starts,
stops (draining) or restarts only the routes that changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, TextIO

from gateway.compiler import Ruleset
from gateway.metrics import names
from gateway.metrics.instruments import GatewayMetrics
from gateway.runtime.pipeline import Pipeline
from gateway.runtime.routes import Route
from gateway.runtime.shadow import ShadowJudge
from gateway.runtime.stats import GatewayStats
from protocol_adapters import registry
from protocol_adapters.base import EndpointConfig

log = logging.getLogger("xgate.engine")


class RulesetRef:
    """The one reference the hot path reads; a reload replaces `ruleset` in a single assignment. `shadow` is the
    candidate judged beside it (gateway/runtime/shadow.py), None when there is none."""

    def __init__(self, ruleset: Ruleset) -> None:
        self.ruleset = ruleset
        self.shadow: ShadowJudge | None = None


@dataclass
class _Running:
    route: Route
    pipeline: Pipeline
    task: asyncio.Task[None]


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
        self._started = time.monotonic()
        self.metrics[names.DEFINITIONS].set(ruleset.definition_count)
        self.metrics[names.LAST_RELOAD].set(time.time())  # the startup load counts as a successful load

    # -- lifecycle -----------------------------------------------------------------------------------
    def request_stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        self._started = time.monotonic()
        async with asyncio.TaskGroup() as group:
            self._group = group
            for route in self._initial:
                self._start(route)
            summary = group.create_task(self._summary()) if self.summary_interval > 0 else None
            await self._stop.wait()
            await asyncio.gather(*(self._stop_route(source) for source in list(self._running)))
            if summary is not None:
                summary.cancel()
        self._group = None
        if self.summary_interval > 0:
            self._print_summary()

    def ready(self) -> tuple[bool, dict[str, bool]]:
        """Ready when a ruleset is loaded, every route's source adapter is connected and no destination is down."""
        connected = {source: running.pipeline.ready for source, running in self._running.items()}
        return bool(connected) and all(connected.values()), connected

    def destinations_down(self) -> dict[str, dict[str, str]]:
        """Per route (source endpoint): its destinations that failed every send for seconds, with the last error."""
        return {source: down for source, running in self._running.items() if (down := running.pipeline.health.down())}

    # -- routes ------------------------------------------------------------------------------------------
    def _start(self, route: Route) -> None:
        assert self._group is not None
        source = route.source.endpoint_id
        destinations = [d.endpoint_id for d in (route.conformant, route.nonconformant, route.unmatched) if d]
        metrics = self.metrics.route(source, destinations)
        self._bind(metrics, self.ref.ruleset)
        pipeline = Pipeline(route, self.ref, self.stats.route(source), metrics, self._create_source,
                            self._create_sink, self.drain_timeout)
        self._running[source] = _Running(route, pipeline, self._group.create_task(pipeline.run()))
        self.metrics[names.ROUTES].set(len(self._running))

    async def _stop_route(self, source: str) -> None:
        running = self._running.pop(source)
        await running.pipeline.stop()
        with contextlib.suppress(asyncio.CancelledError):
            await running.task
        self.metrics[names.ROUTES].set(len(self._running))

    def _bind(self, metrics: Any, ruleset: Ruleset) -> None:
        rules = ruleset.endpoints.get(metrics.endpoint)
        pairs = [(d.groupid, d.messageid) for d in rules.definitions] if rules is not None else []
        self.metrics.bind_definitions(metrics, pairs)

    async def apply(self, routes: list[Route], ruleset: Ruleset) -> dict[str, list[str]]:
        """Swap the ruleset, then start new routes, drain removed ones and restart changed ones."""
        self.ref.ruleset = ruleset  # from the next message on, every pipeline judges with the new rules
        self.metrics[names.DEFINITIONS].set(ruleset.definition_count)
        for running in self._running.values():
            self._bind(running.pipeline.metrics, ruleset)
        wanted = {route.source.endpoint_id: route for route in routes}
        removed = [s for s in self._running if s not in wanted]
        changed = [s for s, r in wanted.items() if s in self._running and self._running[s].route != r]
        added = [s for s in wanted if s not in self._running]
        await asyncio.gather(*(self._stop_route(s) for s in removed + changed))
        for source in changed + added:
            self._start(wanted[source])
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
