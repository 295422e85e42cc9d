"""The service `xgate run` starts, once its configuration is accepted: where everything that runs starts and stops.

One gateway process (`Gateway`): the metrics server (with /registry and /shadow) around one TaskGroup that holds
the engine (a pipeline per route), the reloader's file watcher and registry-source follower, and the reloads
SIGHUP asks for. `--workers N`: the supervisor of gateway/runtime/workers.py, which starts N such processes.

Signals are handled here and nowhere else. SIGTERM and SIGINT stop: the engine drains for `drain_timeout`
(a second signal stops at once), the supervisor passes the stop on to every worker. A gateway's stop that is still
running STOP_DEADLINE_MARGIN seconds past drain_timeout + STOP_GRACE ends the process: nothing undelivered was
acknowledged, so the brokers deliver it again. SIGHUP reloads (the supervisor passes it on).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from gateway.console import console_sources
from gateway.console.app import add_console_routes
from gateway.exit_code import ExitCode
from gateway.metrics.server import MetricsServer, parse_address
from gateway.registry_api import RegistryView
from gateway.registry_api.write import RegistryWriter
from gateway.routes.resolve import Route
from gateway.runtime import early_stop, heap
from gateway.runtime.change_events import ChangePublisher
from gateway.runtime.engine import STOP_GRACE, Engine
from gateway.runtime.reload import Reloader
from gateway.runtime.workers import Supervisor
from gateway.settings import Settings

log = logging.getLogger("xgate")
# seconds past drain_timeout + STOP_GRACE after which a stop that still has not finished ends the process
STOP_DEADLINE_MARGIN = 5.0
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@dataclass(frozen=True)
class ServiceOptions:
    """What `xgate run` decided from its flags and gateway.yaml."""

    metrics_address: str            # where /metrics /healthz /readyz /registry listen; "" runs no server
    watch: bool = True              # reload when files change (SIGHUP reloads either way)
    duration: float | None = None   # stop, draining, after this many seconds


@dataclass(frozen=True)
class Gateway:
    """What one gateway process runs."""

    engine: Engine
    reloader: Reloader
    routes: list[Route]
    settings: Settings
    view: RegistryView | None = None  # the registry as loaded, served on the metrics address
    writer: RegistryWriter | None = None  # the write API under /registry (`registry.write`)
    publisher: ChangePublisher | None = None  # the registry's change events (`registry.events`)


class Service:
    def __init__(self, runs: Gateway | Supervisor, options: ServiceOptions) -> None:
        self.runs = runs
        self.options = options
        self._group: asyncio.TaskGroup | None = None
        self._reloads: set[asyncio.Task[Any]] = set()

    async def run(self) -> ExitCode:
        """Run until stopped; a failure inside the gateway's TaskGroup is raised as the task raised it."""
        loop = asyncio.get_running_loop()
        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, self._on_stop_signal)
        loop.add_signal_handler(signal.SIGHUP, self._on_hangup)
        if early_stop.requested():
            log.info("SIGTERM during start-up: stopping before taking any message")
            self._request_stop()
        if self.options.duration:
            loop.call_later(self.options.duration, self._request_stop)
        try:
            if isinstance(self.runs, Supervisor):
                return await self.runs.run()
            await self._run_gateway(self.runs)
            return ExitCode.OK
        finally:
            for signum in (*STOP_SIGNALS, signal.SIGHUP):
                loop.remove_signal_handler(signum)

    # -- signals -------------------------------------------------------------------------------------
    def _request_stop(self) -> None:
        if isinstance(self.runs, Supervisor):
            self.runs.request_stop()
        else:
            self.runs.engine.request_stop()

    def _on_stop_signal(self) -> None:
        if isinstance(self.runs, Gateway) and not self.runs.engine.stopping:
            settings = self.runs.settings
            _exit_if_stop_hangs(settings.runtime.drain_timeout + STOP_GRACE + STOP_DEADLINE_MARGIN)
        self._request_stop()

    def _on_hangup(self) -> None:
        if isinstance(self.runs, Supervisor):
            self.runs.signal_all(signal.SIGHUP)
        elif self._group is not None and not self.runs.engine.stopping:
            task = self._group.create_task(_logged(self.runs.reloader.reload("SIGHUP"), "the SIGHUP reload"))
            self._reloads.add(task)
            task.add_done_callback(self._reloads.discard)

    # -- one gateway ---------------------------------------------------------------------------------
    async def _run_gateway(self, gateway: Gateway) -> None:
        for route in gateway.routes:
            log.info("route %s -> conformant %s, nonconformant %s, unmatched %s (policy %s, inflight %d)",
                     route.source.endpoint_id, *(d.endpoint_id if d else "-" for d in
                                                 (route.conformant, route.nonconformant, route.unmatched)),
                     route.policy, route.inflight)
        async with contextlib.AsyncExitStack() as stack:
            if self.options.metrics_address:
                server = await stack.enter_async_context(MetricsServer(
                    gateway.engine.metrics.registry, gateway.engine.ready, self.options.metrics_address,
                    gateway.settings.metrics, gateway.view, gateway.settings.registry,
                    extra_routes=functools.partial(_add_routes, gateway, self.options.metrics_address),
                    registry_writer=gateway.writer))
                _announce(server, gateway.settings.console is not None)
                if gateway.publisher is not None:  # change events name the registry's URL as their `source`
                    gateway.publisher.base = gateway.publisher.base or \
                        f"{server.scheme}://{server.host}:{server.port}/registry"
            try:
                await self._run_tasks(gateway)
            except BaseExceptionGroup as group:
                # this TaskGroup's layer says nothing: raise what the failing task raised (the engine's own group)
                if len(group.exceptions) == 1:
                    raise group.exceptions[0] from None
                raise

    async def _run_tasks(self, gateway: Gateway) -> None:
        """The engine, the watcher, the follower and the change-event publisher in one TaskGroup; when the engine
        has stopped, so do they."""
        stop_watching = asyncio.Event()
        async with asyncio.TaskGroup() as group:
            self._group = group
            watcher = group.create_task(_logged(gateway.reloader.watch(stop_watching), "the file watch")) \
                if self.options.watch else None
            # idles while gateway.yaml lists no source
            follower = group.create_task(_logged(gateway.reloader.follow(stop_watching), "the source follower"))
            announcer = group.create_task(_logged(gateway.publisher.run(stop_watching), "the change events")) \
                if gateway.publisher is not None else None
            heap.settle()  # what startup built lives as long as the process (or until a reload)
            try:
                await gateway.engine.run()
            finally:
                self._group = None
                stop_watching.set()
                for task in (watcher, follower, announcer, *self._reloads):
                    if task is not None:
                        task.cancel()


async def _logged(work: Coroutine[Any, Any, Any], what: str) -> None:
    """`work`, whose failure is logged instead of ending the TaskGroup: the routes go on with the rules in force."""
    try:
        await work
    except Exception:
        log.exception("%s failed; the routes go on with the rules in force", what)


def _announce(server: MetricsServer, console: bool) -> None:
    access = server.access
    log.info("metrics, health, readiness and registry on %s://%s:%d (/metrics /healthz /readyz /registry)%s",
             server.scheme, server.host, server.port, ", basic auth required" if access.username else "")
    if console:
        log.info("console on %s://%s:%d/ui", server.scheme, server.host, server.port)
    if server.registry_settings.address:
        log.info("registry API also at %s://%s:%d/", server.scheme, server.registry_host, server.registry_port)


def _add_routes(gateway: Gateway, address: str, app: web.Application) -> None:
    """Beside /metrics, /registry: /shadow, and the console under /ui when gateway.yaml turns it on."""
    _add_shadow_route(gateway.engine, app)
    settings = gateway.settings.console
    if settings is not None:
        host, _ = parse_address(address)
        add_console_routes(app, console_sources(settings, gateway.engine, gateway.reloader,
                                                gateway.engine.metrics.registry, host, gateway.publisher,
                                                gateway.writer))


def _add_shadow_route(engine: Engine, app: web.Application) -> None:
    async def shadow(request: web.Request) -> web.Response:
        judge = engine.ref.shadow
        return web.json_response(judge.view() if judge is not None else {"candidate": None},
                                 dumps=lambda value: json.dumps(value, default=str))
    app.router.add_get("/shadow", shadow)


def _exit_if_stop_hangs(seconds: float) -> None:
    """The last resort behind the drain: a stop still running after `seconds` ends the process (exit 0)."""
    def expire() -> None:
        print(f"xgate run: stopping took more than {seconds:.0f} s; exiting without waiting further "
              "(undelivered messages were not acknowledged)", file=sys.stderr, flush=True)
        logging.shutdown()
        os._exit(ExitCode.OK)
    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
