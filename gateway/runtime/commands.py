"""`xgate run`, `xgate capture` and `xgate replay`: the service and its incident tools."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from gateway.compiler import Ruleset, compile_registry
from gateway.errors import Diagnostic, GatewayError, Severity
from gateway.loader import Snapshot, load_snapshot
from gateway.loader.fetch import fetcher_for
from gateway.loader.sources import RegistrySources
from gateway.metrics.server import MetricsServer
from gateway.recorded import RecordError, envelope_from_record, record_from_envelope
from gateway.registry_api import RegistryView
from gateway.runtime import heap
from gateway.runtime.credentials import credential_warnings
from gateway.runtime.engine import STOP_GRACE, Engine
from gateway.runtime.reload import Reloader
from gateway.runtime.replay import replay
from gateway.runtime.routes import adapter_diagnostics, endpoint_config, resolve_routes, route_warnings
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
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    sources = RegistrySources()
    snapshot, ruleset, settings, diagnostics = _startup(args.config, sources)
    routes, problems = resolve_routes(snapshot.registry, settings)
    interval = args.summary if args.summary is not None else settings.runtime.summary_interval
    engine = Engine(routes, ruleset, drain_timeout=settings.runtime.drain_timeout, summary_interval=interval)
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
    # /registry on the metrics address: the registry as loaded, updated on every reload
    view = RegistryView(snapshot) if address else None
    reloader = Reloader(args.config, engine, snapshot, settings, settings.runtime.reload_debounce,
                        on_snapshot=view.update if view is not None else None, sources=sources)

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
                    MetricsServer(engine.metrics.registry, engine.ready, address, settings.metrics, view))
                log.info("metrics, health, readiness and registry on %s://%s:%d (/metrics /healthz /readyz "
                         "/registry)%s",
                         server.scheme, server.host, server.port,
                         ", basic auth required" if settings.metrics.username else "")
            watcher = loop.create_task(reloader.watch(stop_watching)) if not args.no_watch else None
            follower = loop.create_task(reloader.follow(stop_watching))  # idles while no source is listed
            heap.settle()  # what startup built lives as long as the process (or until a reload)
            try:
                await engine.run()
            finally:
                stop_watching.set()
                for task in (watcher, follower):
                    if task is not None:
                        task.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await task

    try:
        asyncio.run(main())
    except GatewayError as exc:
        print(f"xgate run: {exc}", file=sys.stderr)
        return EXIT_FAILED
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


def _endpoint(args: argparse.Namespace, command: str) -> EndpointConfig | None:
    """The endpoint a capture or replay talks to, or None after saying why it cannot."""
    snapshot, _, settings, diagnostics = _startup(args.config)
    _report(diagnostics)
    if args.endpoint not in snapshot.registry.endpoints:
        print(f"xgate {command}: endpoint {args.endpoint!r} is not in the registry "
              f"(known: {', '.join(sorted(snapshot.registry.endpoints)) or 'none'})", file=sys.stderr)
        return None
    return endpoint_config(snapshot.registry, args.endpoint, settings)


def cmd_capture(args: argparse.Namespace) -> int:
    """Record live messages of one endpoint in the CONFORMANCE.md section 7 form (consumes them)."""
    config = _endpoint(args, "capture")
    if config is None:
        return EXIT_USAGE
    if config.protocol == "KAFKA" and "consumergroup" not in config.options:
        # its own group, so capturing does not take messages away from the running gateway
        config = replace(config, options={**config.options, "consumergroup": f"xgate-capture-{config.endpoint_id}"})
    out = open(args.output, "w", encoding="utf-8") if args.output != "-" else sys.stdout

    async def main() -> int:
        count = 0
        async with registry.create_source(config) as source:
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
    finally:
        if out is not sys.stdout:
            out.close()
    print(f"xgate capture: {count} messages from {args.endpoint}", file=sys.stderr)
    return EXIT_OK


def cmd_replay(args: argparse.Namespace) -> int:
    """Publish recorded messages to one endpoint (re-mapped when they were recorded on another protocol)."""
    config = _endpoint(args, "replay")
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
    run.set_defaults(handler=cmd_run)

    capture = commands.add_parser("capture", help="record live messages of an endpoint as recorded JSON lines")
    capture.add_argument("--config", required=True, metavar="DIR")
    capture.add_argument("--endpoint", required=True)
    capture.add_argument("--count", type=int, default=0, help="stop after N messages (0: no limit)")
    capture.add_argument("--timeout", type=float, default=0, help="stop after SECONDS (0: no limit)")
    capture.add_argument("-o", "--output", default="-")
    capture.set_defaults(handler=cmd_capture)

    replay = commands.add_parser("replay", help="publish recorded messages to an endpoint")
    replay.add_argument("--config", required=True, metavar="DIR")
    replay.add_argument("--endpoint", required=True)
    replay.add_argument("--inflight", type=int, default=500, help="unconfirmed sends at once")
    replay.add_argument("input", nargs="?", default="-")
    replay.set_defaults(handler=cmd_replay)
