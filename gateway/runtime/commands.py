"""`xgate run`, `xgate capture` and `xgate replay`: the service and its incident tools."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import logging
import os
import signal
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from aiohttp import web

from gateway.compiler import Ruleset, compile_registry
from gateway.errors import Diagnostic, EndpointMismatch, GatewayError, ObserverRefused, Severity
from gateway.loader import Snapshot, load_snapshot
from gateway.loader.fetch import fetcher_for
from gateway.loader.sources import RegistrySources
from gateway.metrics.server import MetricsServer
from gateway.recorded import RecordError, envelope_from_record, record_from_envelope
from gateway.registry_api import RegistryView
from gateway.registry_api.state import state_file
from gateway.runtime import heap
from gateway.runtime.credentials import credential_warnings
from gateway.runtime.endpoint_checks import endpoint_problems
from gateway.runtime.engine import STOP_GRACE, Engine
from gateway.runtime.registry_wiring import change_publisher, registry_writer
from gateway.runtime.reload import Reloader
from gateway.runtime.replay import replay
from gateway.runtime.routes import adapter_diagnostics, endpoint_config, resolve_routes, route_warnings
from gateway.runtime.shadow import load_shadow
from gateway.runtime.workers import Supervisor, worker_access
from gateway.settings import Settings, load_settings
from protocol_adapters import registry
from protocol_adapters.base import EndpointConfig

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
log = logging.getLogger("xgate")
# seconds past drain_timeout + STOP_GRACE after which a stop that still has not finished ends the process:
# nothing undelivered was acknowledged, so the brokers deliver it again
STOP_DEADLINE_MARGIN = 5.0


def _startup(config_dir: str, sources: RegistrySources | None = None,
             ) -> tuple[Snapshot, Ruleset, Settings, list[Diagnostic]]:
    """Load settings, then the documents with each gateway.yaml source fetched once (into `sources` when given,
    for the reloader to follow). A source that cannot be fetched is a warning: xgate starts with what it has."""
    settings, problems = load_settings(config_dir)  # first: its `remote` section says what may be fetched
    fetcher = fetcher_for(settings.remote)
    sources = sources if sources is not None else RegistrySources()
    sources.configure(settings.sources)
    problems = problems + sources.start(fetcher)
    snapshot = load_snapshot([config_dir], fetcher=fetcher, schemaregistries=settings.schemaregistries,
                             documents=sources.documents())
    ruleset = compile_registry(snapshot.registry, snapshot.digest, settings.runtime.limits)
    diagnostics = list(snapshot.diagnostics) + list(ruleset.diagnostics) + credential_warnings(snapshot.registry) \
        + problems
    return snapshot, ruleset, settings, diagnostics


def _report(diagnostics: list[Diagnostic]) -> int:
    errors = 0
    for diagnostic in diagnostics:
        if diagnostic.code == "duplicate" and diagnostic.severity is Severity.WARNING:
            continue
        errors += diagnostic.severity is Severity.ERROR
        print(diagnostic, file=sys.stderr)
    return errors


def cmd_run(args: argparse.Namespace) -> int:
    worker = "" if args.worker is None else f"[worker {args.worker}] "
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s {worker}%(name)s %(message)s")
    if args.workers is not None and args.workers < 1:
        print(f"xgate run: --workers must be at least 1, found {args.workers}", file=sys.stderr)
        return EXIT_USAGE
    sources = RegistrySources()
    snapshot, ruleset, settings, diagnostics = _startup(args.config, sources)
    routes, problems = resolve_routes(snapshot.registry, settings)
    interval = args.summary if args.summary is not None else settings.runtime.summary_interval
    create_source = registry.create_source
    if args.worker is not None:  # one of `--workers N`: share each source with the others
        create_source = functools.partial(_shared_source, args.worker)
    engine = Engine(routes, ruleset, drain_timeout=settings.runtime.drain_timeout, summary_interval=interval,
                    create_source=create_source)
    problems += adapter_diagnostics(engine.adapter_problems(routes), snapshot.registry)
    _report(diagnostics + problems + route_warnings(routes, snapshot.registry, settings))
    if problems or any(d.code == "settings" for d in diagnostics):
        print("xgate run: fix the settings and routes above first", file=sys.stderr)
        return EXIT_USAGE
    if not routes:
        print(f"xgate run: no routes: add `routes:` to {Path(args.config) / 'gateway.yaml'} or "
              "`xgate.route.*` labels to a source endpoint", file=sys.stderr)
        return EXIT_USAGE
    address = args.metrics_address if args.metrics_address is not None else settings.runtime.metrics_address
    workers = args.workers if args.workers is not None else settings.runtime.workers
    if args.worker is None and workers > 1:
        return _supervise(args, workers, address, settings)
    if args.worker is not None:  # a worker's metrics server answers only its supervisor
        settings = replace(settings, metrics=worker_access())
    engine.ref.shadow, shadow_problems = load_shadow(args.config, engine.metrics, settings.runtime.limits)
    for problem in shadow_problems:
        log.error("shadow candidate: %s", problem)
    if engine.ref.shadow is not None:
        log.info("shadow candidate: %d definitions from %s, judged beside the active rules (GET /shadow)",
                 engine.ref.shadow.ruleset.definition_count, engine.ref.shadow.source)
    # /registry on the metrics address: the registry as loaded, updated on every reload
    state = state_file(args.config, settings.registry.state_dir) if address else None
    view = RegistryView(snapshot, state) if address else None
    if not address and settings.registry.address:
        log.warning("registry.address %s is not served: the registry API runs beside the metrics server, which "
                    "runtime.metrics_address (or --metrics-address) turned off", settings.registry.address)
    reloader = Reloader(args.config, engine, snapshot, settings, settings.runtime.reload_debounce,
                        on_snapshot=view.update if view is not None else None, sources=sources)
    # issue 24: the registry's write side (gateway/runtime/registry_wiring.py)
    writer = registry_writer(args.config, view, settings, reloader, engine)
    try:
        publisher = change_publisher(view, snapshot, settings, state, primary=args.worker in (None, 0))
    except GatewayError as exc:
        print(f"xgate run: {exc}", file=sys.stderr)
        return EXIT_USAGE

    def on_stop_signal() -> None:
        if not engine.stopping:
            _exit_if_stop_hangs(settings.runtime.drain_timeout + STOP_GRACE + STOP_DEADLINE_MARGIN)
        engine.request_stop()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stop_watching = asyncio.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, on_stop_signal)
        background: set[asyncio.Task[Any]] = set()

        def on_sighup() -> None:
            task = loop.create_task(reloader.reload("SIGHUP"))
            background.add(task)
            task.add_done_callback(background.discard)
        loop.add_signal_handler(signal.SIGHUP, on_sighup)
        if args.duration:
            loop.call_later(args.duration, engine.request_stop)
        for route in routes:
            log.info("route %s -> conformant %s, nonconformant %s, unmatched %s (policy %s, inflight %d)",
                     route.source.endpoint_id, *(d.endpoint_id if d else "-" for d in
                                                 (route.conformant, route.nonconformant, route.unmatched)),
                     route.policy, route.inflight)
        async with contextlib.AsyncExitStack() as stack:
            if address:
                server = await stack.enter_async_context(
                    MetricsServer(engine.metrics.registry, engine.ready, address, settings.metrics, view,
                                  settings.registry, extra_routes=functools.partial(_add_shadow_route, engine),
                                  registry_writer=writer))
                log.info("metrics, health, readiness and registry on %s://%s:%d (/metrics /healthz /readyz "
                         "/registry)%s",
                         server.scheme, server.host, server.port,
                         ", basic auth required" if settings.metrics.username else "")
                if settings.registry.address:
                    log.info("registry API also at %s://%s:%d/", server.scheme, server.registry_host,
                             server.registry_port)
            watcher = loop.create_task(reloader.watch(stop_watching)) if not args.no_watch else None
            follower = loop.create_task(reloader.follow(stop_watching))  # idles while no source is listed
            announcer = None
            if publisher is not None:  # issue 24: change events, `source` = the registry's URL
                publisher.base = publisher.base or f"{server.scheme}://{server.host}:{server.port}/registry"
                announcer = loop.create_task(publisher.run(stop_watching))
            heap.settle()  # what startup built lives as long as the process (or until a reload)
            try:
                await engine.run()
            finally:
                stop_watching.set()
                for task in (watcher, follower, announcer):
                    if task is not None:
                        task.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await task

    try:
        asyncio.run(main())
    except GatewayError as exc:
        print(f"xgate run: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except BaseExceptionGroup as group:  # a route's adapter failed for good inside the engine's TaskGroup
        mismatches, rest = group.split(EndpointMismatch)
        if mismatches is None or rest is not None:
            raise
        for line in dict.fromkeys(str(exc) for exc in _leaves(mismatches)):
            print(f"xgate run: {line}", file=sys.stderr)
        return EXIT_USAGE  # the configuration contradicts the broker: fix one or the other
    if engine.fatal is not None:
        print(f"xgate run: {engine.fatal}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def _exit_if_stop_hangs(seconds: float) -> None:
    """The last resort behind the drain: a stop still running after `seconds` ends the process (exit 0)."""
    def expire() -> None:
        print(f"xgate run: stopping took more than {seconds:.0f} s; exiting without waiting further "
              "(undelivered messages were not acknowledged)", file=sys.stderr, flush=True)
        logging.shutdown()
        os._exit(EXIT_OK)
    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()


def _add_shadow_route(engine: Engine, app: web.Application) -> None:
    async def shadow(request: web.Request) -> web.Response:
        judge = engine.ref.shadow
        return web.json_response(judge.view() if judge is not None else {"candidate": None},
                                 dumps=lambda value: json.dumps(value, default=str))
    app.router.add_get("/shadow", shadow)


def _shared_source(worker: int, config: EndpointConfig) -> Any:
    return registry.create_source(registry.share_source(config, worker))


def _supervise(args: argparse.Namespace, workers: int, address: str, settings: Settings) -> int:
    """`--workers N`: the configuration was checked above; N worker processes run it (gateway/runtime/workers.py)."""
    passed: list[str] = []
    if args.summary is not None:
        passed += ["--summary", str(args.summary)]
    if args.no_watch:
        passed.append("--no-watch")
    supervisor = Supervisor(args.config, workers, passed, address, settings.metrics,
                            settings.runtime.drain_timeout, args.duration)
    try:
        return asyncio.run(supervisor.run())
    except GatewayError as exc:
        print(f"xgate run: {exc}", file=sys.stderr)
        return EXIT_FAILED


def _leaves(group: BaseExceptionGroup[Any]) -> list[BaseException]:
    found: list[BaseException] = []
    for exc in group.exceptions:
        found += _leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc]
    return found


def _endpoint(args: argparse.Namespace, command: str, role: str) -> EndpointConfig | None:
    """The endpoint a capture (role "source") or replay ("sink") talks to, or None after saying why it cannot:
    checked as `run` checks a route's endpoints, before connecting."""
    snapshot, _, settings, diagnostics = _startup(args.config)
    _report(diagnostics)
    if args.endpoint not in snapshot.registry.endpoints:
        print(f"xgate {command}: endpoint {args.endpoint!r} is not in the registry "
              f"(known: {', '.join(sorted(snapshot.registry.endpoints)) or 'none'})", file=sys.stderr)
        return None
    config = endpoint_config(snapshot.registry, args.endpoint, settings)
    problems = endpoint_problems(snapshot.registry, settings, config, role, f"the endpoint of xgate {command}")
    for problem in problems:
        print(problem, file=sys.stderr)
    return None if problems else config


def cmd_capture(args: argparse.Namespace) -> int:
    """Record live messages of one endpoint in the CONFORMANCE.md section 7 form, reading beside the gateway
    (an observer: never its consumer group, durable consumer or shared subscription) unless --destructive."""
    config = _endpoint(args, "capture", "source")
    if config is None:
        return EXIT_USAGE
    try:
        reader = registry.create_source(config) if args.destructive else registry.create_observer(config)
    except ObserverRefused as exc:
        print(f"xgate capture: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except GatewayError as exc:
        print(f"xgate capture: {exc}", file=sys.stderr)
        return EXIT_FAILED
    out = open(args.output, "w", encoding="utf-8") if args.output != "-" else sys.stdout

    async def main() -> int:
        count = 0
        async with reader as source:
            async def pump() -> None:
                nonlocal count
                async for envelope in source:
                    out.write(json.dumps(record_from_envelope(envelope)) + "\n")
                    out.flush()
                    await source.ack(envelope)
                    count += 1
                    if args.count and count >= args.count:
                        return
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(pump(), args.timeout or None)
        return count

    try:
        count = asyncio.run(main())
    except GatewayError as exc:  # e.g. a queue declared with other properties: one line, no traceback
        print(f"xgate capture: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        if out is not sys.stdout:
            out.close()
    print(f"xgate capture: {count} messages from {args.endpoint}", file=sys.stderr)
    return EXIT_OK


def cmd_replay(args: argparse.Namespace) -> int:
    """Publish recorded messages to one endpoint (re-mapped when they were recorded on another protocol)."""
    config = _endpoint(args, "replay", "sink")
    if config is None:
        return EXIT_USAGE
    source = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")
    envelopes = []
    skipped = 0
    with contextlib.ExitStack() as stack:
        if source is not sys.stdin:
            stack.callback(source.close)
        for number, line in enumerate(source, 1):
            if not line.strip():
                continue
            try:
                envelopes.append(envelope_from_record(json.loads(line), default_protocol=config.protocol))
            except (ValueError, RecordError) as exc:
                print(f"xgate replay: line {number} skipped: {exc}", file=sys.stderr)
                skipped += 1
    try:
        result = asyncio.run(replay(config, envelopes, registry.create_sink, inflight=args.inflight))
    except GatewayError as exc:
        print(f"xgate replay: {exc}", file=sys.stderr)
        return EXIT_FAILED
    for error in result.errors:
        print(f"xgate replay: {error}", file=sys.stderr)
    print(f"xgate replay: {result.sent} messages sent to {args.endpoint}"
          + (f", {result.refused} refused" if result.refused else "")
          + (f", {skipped} lines skipped" if skipped else ""), file=sys.stderr)
    return EXIT_OK if not (skipped or result.refused) else EXIT_FAILED


def add_commands(commands: Any) -> None:
    run = commands.add_parser("run", help="run the gateway: consume, validate, route")
    run.add_argument("--config", required=True, metavar="DIR", help="documents and gateway.yaml")
    run.add_argument("--summary", type=float, metavar="SECONDS", help="live summary on stderr every SECONDS")
    run.add_argument("--duration", type=float, metavar="SECONDS", help="stop (draining) after SECONDS")
    run.add_argument("--metrics-address", metavar="HOST:PORT",
                     help="where /metrics /healthz /readyz listen (default 127.0.0.1:9464; '' turns it off)")
    run.add_argument("--no-watch", action="store_true", help="do not reload when files change (SIGHUP still does)")
    run.add_argument("--workers", type=int, metavar="N",
                     help="processes, each a full gateway, sharing every source (default: runtime.workers, 1)")
    run.add_argument("--worker", type=int, help=argparse.SUPPRESS)  # set by the supervisor of --workers N
    run.set_defaults(handler=cmd_run)

    capture = commands.add_parser("capture", help="record live messages of an endpoint as recorded JSON lines")
    capture.add_argument("--config", required=True, metavar="DIR")
    capture.add_argument("--endpoint", required=True)
    capture.add_argument("--count", type=int, default=0, help="stop after N messages (0: no limit)")
    capture.add_argument("--timeout", type=float, default=0, help="stop after SECONDS (0: no limit)")
    capture.add_argument("-o", "--output", default="-")
    capture.add_argument("--destructive", action="store_true",
                         help="read as the gateway's own consumer (an AMQP queue has no other way): the messages "
                              "captured are taken from the gateway")
    capture.set_defaults(handler=cmd_capture)

    replay = commands.add_parser("replay", help="publish recorded messages to an endpoint")
    replay.add_argument("--config", required=True, metavar="DIR")
    replay.add_argument("--endpoint", required=True)
    replay.add_argument("--inflight", type=int, default=500, help="unconfirmed sends at once")
    replay.add_argument("input", nargs="?", default="-")
    replay.set_defaults(handler=cmd_replay)
