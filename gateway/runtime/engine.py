"""The service: one pipeline per route in a TaskGroup, a live summary, and a draining shutdown.

`request_stop()` (wired to SIGTERM/SIGINT by `xgate run`) stops every source;
each pipeline then lets its in-flight messages finish (up to the drain
timeout), acknowledges what was delivered, closes its adapters, and `run()`
returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from typing import Any, Callable, TextIO

from gateway.compiler import Ruleset
from gateway.runtime.pipeline import Pipeline
from gateway.runtime.routes import Route
from gateway.runtime.stats import GatewayStats
from protocol_adapters import registry
from protocol_adapters.base import EndpointConfig

log = logging.getLogger("xgate.engine")


class RulesetRef:
    """The one reference the hot path reads; a reload replaces `ruleset` in a single assignment."""

    def __init__(self, ruleset: Ruleset) -> None:
        self.ruleset = ruleset


class Engine:
    def __init__(self, routes: list[Route], ruleset: Ruleset, *, drain_timeout: float = 30.0,
                 summary_interval: float = 0.0, summary_stream: TextIO | None = None,
                 create_source: Callable[[EndpointConfig], Any] = registry.create_source,
                 create_sink: Callable[[EndpointConfig], Any] = registry.create_sink) -> None:
        self.ref = RulesetRef(ruleset)
        self.stats = GatewayStats()
        self.pipelines = [Pipeline(route, self.ref, self.stats.route(route.source.endpoint_id), create_source,
                                   create_sink, drain_timeout) for route in routes]
        self.summary_interval = summary_interval
        self.summary_stream = summary_stream or sys.stderr
        self._stop = asyncio.Event()
        self._started = time.monotonic()

    def request_stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        self._started = time.monotonic()
        async with asyncio.TaskGroup() as group:
            runs = [group.create_task(p.run()) for p in self.pipelines]
            summary = group.create_task(self._summary()) if self.summary_interval > 0 else None
            stopper = group.create_task(self._stop.wait())
            await asyncio.wait([stopper, *runs], return_when=asyncio.FIRST_COMPLETED)
            for pipeline in self.pipelines:
                await pipeline.stop()
            stopper.cancel()
            await asyncio.gather(*runs, return_exceptions=True)
            if summary is not None:
                summary.cancel()
        if self.summary_interval > 0:
            self._print_summary()

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
