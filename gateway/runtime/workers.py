"""`xgate run --workers N`: N worker processes, each a full gateway, under one supervisor.

Python runs one core per process, so the way to use every core is more
processes, each with its own event loop, pipelines and adapters. The
workers share each source by the protocol's own means
(`protocol_adapters.registry.share_source`: a Kafka consumer group, an MQTT
shared subscription, a NATS queue group or shared durable consumer,
competing AMQP receivers, SO_REUSEPORT for the webhook), so every message
reaches one worker and a worker that dies hands its share to the others
through the broker, as a second gateway in the same group would.

The supervisor judges nothing. It serves the operator's metrics address:
`/metrics` is every worker's exposition combined (gateway.metrics.merge),
`/readyz` is ready when every worker is (PROBE_MISSES below), `/registry` is answered by a ready
worker. Each worker serves those on a private loopback port, behind a
password made per run. A stop (SIGTERM/SIGINT, handled by
gateway/runtime/service.py) goes to every worker, each drains as one gateway
does; SIGHUP too (each worker also watches the config directory itself, so one
reload reaches all). A worker that exits while the gateway is not stopping is
started again, with backoff.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ctypes
import json
import logging
import os
import secrets
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web
from prometheus_client import CollectorRegistry

from gateway.exit_code import ExitCode
from gateway.metrics.merge import WorkerTotals, merge_families
from gateway.metrics.server import MetricsServer
from gateway.ports import ephemeral_port
from gateway.settings import MetricsSettings

log = logging.getLogger("xgate.workers")

WORKER_USER = "xgate-supervisor"
SECRET_ENV = "XGATE_WORKER_SECRET"  # the password of the workers' private servers, made per run
SUPERVISOR_ENV = "XGATE_SUPERVISOR_PID"  # a worker stops when the process of this id is no longer its parent
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
POLL_SECONDS = 1.0
# a live worker that did not answer this many probes in a row is not ready; fewer is a busy event loop on a
# loaded machine, not a verdict (a worker that answers 503 is not ready at once, one that exits at its exit)
PROBE_MISSES = 3
# a worker not ready this many probes after its start says why once (a transition alone would never say it)
SLOW_START_PROBES = 15
RESTART_MAX_SECONDS = 30.0
# past the drain timeout, what a worker is still doing is cut off: its unsettled messages stay at the source
STOP_GRACE_SECONDS = 10.0


def follow_supervisor() -> None:
    """In a worker: stop (SIGTERM, so it drains as any gateway does) when its supervisor is gone, however it
    went (SIGKILL too), so that no worker goes on consuming with no one to serve its metrics or stop it.
    Linux tells the worker itself (PR_SET_PDEATHSIG); elsewhere a thread looks at the parent every second."""
    expected = os.environ.get(SUPERVISOR_ENV)
    if not expected or not expected.isdigit():
        return
    told = False
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            told = ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM) == 0
    if not told:
        threading.Thread(target=_watch_parent, args=(int(expected),), name="xgate-supervisor-watch",
                         daemon=True).start()
    if os.getppid() != int(expected):  # it was gone before the request above took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _watch_parent(supervisor: int) -> None:
    while os.getppid() == supervisor:
        time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGTERM)


def worker_access() -> MetricsSettings:
    """The access rule of a worker's private server: only its supervisor, with this run's password."""
    return MetricsSettings(username=WORKER_USER, password=os.environ[SECRET_ENV], probes_need_auth=True)


@dataclass
class _Worker:
    index: int
    port: int = field(default_factory=ephemeral_port)
    process: asyncio.subprocess.Process | None = None
    ready: bool = False
    misses: int = 0  # probes in a row that got no answer
    unready: int = 0  # probes in a row not ready (whatever the answer), to say why a start takes long
    sources: dict[str, bool] = field(default_factory=dict)
    became_ready: bool = False  # at least once: an early exit 2 is a configuration the worker refuses
    exit_code: int | None = None
    totals: WorkerTotals = field(default_factory=WorkerTotals)  # its series across restarts and missed scrapes


class Supervisor:
    def __init__(self, config_dir: str, count: int, worker_args: list[str], address: str,
                 access: MetricsSettings, drain_timeout: float, command: str = "run") -> None:
        self.command = command  # the xgate command each worker runs: run, or proxy (its listeners shared)
        self.config_dir = config_dir
        self.workers = [_Worker(index) for index in range(count)]
        self.worker_args = worker_args
        self.address = address
        self.access = access
        self.drain_timeout = drain_timeout
        self._secret = secrets.token_urlsafe(24)
        self._auth = "Basic " + base64.b64encode(f"{WORKER_USER}:{self._secret}".encode()).decode()
        self._stopping = asyncio.Event()
        self._refused = False  # a worker refused the configuration at startup: stop them all, exit 2
        self._http: aiohttp.ClientSession | None = None

    # -- lifecycle -----------------------------------------------------------------------------------
    def request_stop(self) -> None:
        self._stopping.set()

    async def run(self) -> ExitCode:
        log.info("starting %d workers (private ports %s)", len(self.workers),
                 ", ".join(str(worker.port) for worker in self.workers))
        async with contextlib.AsyncExitStack() as stack:
            self._http = await stack.enter_async_context(aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=5), headers={"Authorization": self._auth}))
            if self.address:
                await stack.enter_async_context(MetricsServer(
                    CollectorRegistry(auto_describe=False), self._ready, self.address, self.access,
                    exposition=self._exposition, extra_routes=self._add_registry_proxy))
            async with asyncio.TaskGroup() as group:
                for worker in self.workers:
                    group.create_task(self._keep_running(worker))
                poller = group.create_task(self._poll())
                await self._stopping.wait()
                await self._stop_all()
                poller.cancel()
        if self._refused:
            return ExitCode.USAGE
        return ExitCode.OK if all(worker.exit_code == ExitCode.OK for worker in self.workers) else ExitCode.FAILED

    def signal_all(self, signum: int) -> None:
        for worker in self.workers:
            if worker.process is not None and worker.process.returncode is None:
                worker.process.send_signal(signum)

    async def _keep_running(self, worker: _Worker) -> None:
        """Start the worker, and start it again whenever it exits while the gateway is not stopping."""
        delay = 1.0
        while not self._stopping.is_set():
            worker.process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "gateway.cli", self.command, "--config", self.config_dir,
                "--worker", str(worker.index), "--metrics-address", f"127.0.0.1:{worker.port}", *self.worker_args,
                env={**os.environ, SECRET_ENV: self._secret, SUPERVISOR_ENV: str(os.getpid())})
            code = await worker.process.wait()
            worker.exit_code, worker.ready, worker.unready = code, False, 0
            worker.totals.ended()
            if self._stopping.is_set():
                return
            if code == ExitCode.USAGE and not worker.became_ready:
                log.error("worker %d refused the configuration (exit 2); stopping", worker.index)
                self._refused = True
                self._stopping.set()
                return
            # a port picked afresh: the one it had was free when picked, not necessarily when the worker bound it,
            # and another process may hold it now (the same port again would fail the same way on every restart)
            worker.port = ephemeral_port()
            log.warning("worker %d exited with code %s; starting it again in %.0f s on private port %d",
                        worker.index, code, delay, worker.port)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._stopping.wait()
            delay = min(delay * 2, RESTART_MAX_SECONDS)

    async def _stop_all(self) -> None:
        """SIGTERM to every worker; each drains within the drain timeout; one that outlives it is killed."""
        self.signal_all(signal.SIGTERM)
        running = [w.process for w in self.workers if w.process is not None and w.process.returncode is None]
        if not running:
            return
        _, pending = await asyncio.wait([asyncio.create_task(p.wait()) for p in running],
                                           timeout=self.drain_timeout + STOP_GRACE_SECONDS)
        for process in running:
            if process.returncode is None:
                log.error("worker pid %d did not stop in time; killed (its unsettled messages stay at the source)",
                          process.pid)
                process.kill()
        if pending:
            await asyncio.wait(pending)
        for worker in self.workers:
            if worker.process is not None:
                worker.exit_code = worker.process.returncode

    # -- what the operator's address serves ----------------------------------------------------------
    async def _get(self, worker: _Worker, path: str) -> tuple[int, bytes] | None:
        assert self._http is not None
        try:
            async with self._http.get(f"http://127.0.0.1:{worker.port}{path}") as response:
                return response.status, await response.read()
        except (TimeoutError, aiohttp.ClientError):
            return None

    async def _poll(self) -> None:
        """Readiness of every worker, once a second (what /readyz answers from)."""
        while True:
            for worker, answer in zip(self.workers, await asyncio.gather(
                    *(self._get(worker, "/readyz") for worker in self.workers))):
                self._probed(worker, answer)
            await asyncio.sleep(POLL_SECONDS)

    @staticmethod
    def _probed(worker: _Worker, answer: tuple[int, bytes] | None) -> None:
        """A worker's readiness from one probe's answer (None: none in time), saying when it changes and why."""
        was = worker.ready
        if answer is None:
            worker.misses += 1
            alive = worker.process is not None and worker.process.returncode is None
            worker.ready = worker.ready and alive and worker.misses < PROBE_MISSES
            reason = f"no answer to {worker.misses} readiness probes in a row"
        else:
            worker.misses = 0
            worker.ready = answer[0] == 200
            with contextlib.suppress(ValueError, TypeError, AttributeError, KeyError):
                worker.sources = json.loads(answer[1])["sources"]
            reason = f"/readyz answered {answer[0]} {answer[1][:300].decode(errors='replace')}"
        worker.became_ready |= worker.ready
        worker.unready = 0 if worker.ready else worker.unready + 1
        if was and not worker.ready:
            log.warning("worker %d is not ready: %s", worker.index, reason)
        elif worker.unready == SLOW_START_PROBES:
            log.warning("worker %d is still not ready after %d probes: %s", worker.index, worker.unready, reason)
        elif worker.ready and not was:
            log.info("worker %d is ready", worker.index)

    def _ready(self) -> tuple[bool, dict[str, bool]]:
        sources: dict[str, bool] = {}
        for worker in self.workers:
            for source, up in worker.sources.items():
                sources[source] = sources.get(source, True) and bool(up)
        return all(worker.ready for worker in self.workers), sources

    async def _exposition(self) -> bytes:
        """Every worker's series combined; a worker that does not answer counts with its last exposition, and
        one that restarted with what its earlier lives counted (merge.WorkerTotals): no combined count falls."""
        answers = await asyncio.gather(*(self._get(worker, "/metrics") for worker in self.workers))
        for worker, answer in zip(self.workers, answers):
            worker.totals.update(answer[1].decode() if answer is not None and answer[0] == 200 else None)
        return merge_families(worker.totals.families() for worker in self.workers)

    def _add_registry_proxy(self, app: web.Application) -> None:
        app.router.add_route("*", "/registry", self._proxy)
        app.router.add_route("*", "/registry/{tail:.*}", self._proxy)
        app.router.add_get("/shadow", self._proxy)  # one worker's latest disagreements; /metrics counts all
        # the console (when a worker serves it): one worker's pages, rates and dead letters, as /shadow is
        app.router.add_route("*", "/ui", self._proxy)
        app.router.add_route("*", "/ui/{tail:.*}", self._proxy)

    async def _proxy(self, request: web.Request) -> web.Response:
        """/registry from a ready worker (they all serve the same registry), keeping the client's Host."""
        assert self._http is not None
        for worker in sorted(self.workers, key=lambda w: not w.ready):
            headers: dict[str, Any] = {"Host": request.host}
            for name in ("Accept", "Content-Type"):  # a console form's POST keeps its encoding
                if name in request.headers:
                    headers[name] = request.headers[name]
            try:
                async with self._http.request(request.method, f"http://127.0.0.1:{worker.port}{request.path_qs}",
                                              headers=headers, data=await request.read()) as response:
                    body = await response.read()
                    kept = {k: v for k, v in response.headers.items()
                            if k.lower() not in ("content-length", "transfer-encoding", "connection", "date",
                                                 "server", "www-authenticate")}
                    return web.Response(status=response.status, body=body, headers=kept)
            except (TimeoutError, aiohttp.ClientError):
                continue
        return web.Response(status=503, text="no worker is answering\n")
