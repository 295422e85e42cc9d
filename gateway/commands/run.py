"""`xgate run`: parse, load, report, then run the Service (gateway/runtime/service.py).

Everything that would stop the gateway is reported before anything connects: the documents' and gateway.yaml's
problems, the routes', and each routed endpoint as its adapter reads it; any of them is exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from gateway import logs
from gateway.commands.startup import Loaded, connecting_diagnostics, load_config, report
from gateway.errors import EndpointMismatch, GatewayError
from gateway.exit_code import ExitCode
from gateway.loader.sources import RegistrySources
from gateway.registry_api import RegistryView
from gateway.registry_api.state import state_file
from gateway.routes.resolve import Route, adapter_diagnostics, resolve_routes, route_warnings
from gateway.runtime import early_stop
from gateway.runtime.engine import Engine
from gateway.runtime.registry_wiring import change_publisher, registry_writer
from gateway.runtime.reload import Reloader
from gateway.runtime.service import Gateway, Service, ServiceOptions
from gateway.runtime.shadow import load_shadow
from gateway.runtime.workers import Supervisor, follow_supervisor, worker_access
from protocol_adapters import registry
from protocol_adapters.base import EndpointConfig

log = logging.getLogger("xgate")


def cmd_run(args: argparse.Namespace) -> ExitCode:
    early_stop.catch()
    if args.worker is not None:
        follow_supervisor()
    try:
        logs.configure(args.log_level, args.log_format, args.worker)
    except ValueError as exc:
        print(f"xgate run: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    if args.workers is not None and args.workers < 1:
        print(f"xgate run: --workers must be at least 1, found {args.workers}", file=sys.stderr)
        return ExitCode.USAGE
    sources = RegistrySources()  # fetched once at startup, then followed by the reloader
    loaded = load_config(args.config, sources)
    accepted = _accepted(args, loaded)
    if accepted is None:
        return ExitCode.USAGE
    routes, engine = accepted
    settings = loaded.settings
    address = args.metrics_address if args.metrics_address is not None else settings.runtime.metrics_address
    options = ServiceOptions(address, watch=not args.no_watch, duration=args.duration)
    workers = args.workers if args.workers is not None else settings.runtime.workers
    if args.worker is None and workers > 1:  # the configuration was checked above; N worker processes run it
        return _serve(Service(_supervisor(args, workers, address, loaded), options))
    try:
        gateway = _gateway(args, loaded, sources, routes, engine, address)
    except GatewayError as exc:  # e.g. `registry.events` naming no endpoint of the documents
        print(f"xgate run: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    return _serve(Service(gateway, options))


def _accepted(args: argparse.Namespace, loaded: Loaded) -> tuple[list[Route], Engine] | None:
    """The routes and the engine to run them, or None once every reason `run` refuses the configuration is said."""
    settings, registry_model = loaded.settings, loaded.snapshot.registry
    routes, problems = resolve_routes(registry_model, settings)
    interval = args.summary if args.summary is not None else settings.runtime.summary_interval
    create_source = registry.create_source
    if args.worker is not None:  # one of `--workers N`: share each source with the others
        create_source = functools.partial(_shared_source, args.worker)
    engine = Engine(routes, loaded.ruleset, drain_timeout=settings.runtime.drain_timeout, summary_interval=interval,
                    create_source=create_source)
    problems += adapter_diagnostics(engine.adapter_problems(routes), registry_model)
    report([*connecting_diagnostics(loaded), *problems, *route_warnings(routes, registry_model, settings)])
    if problems or any(d.code == "settings" for d in loaded.diagnostics):
        print("xgate run: fix the settings and routes above first", file=sys.stderr)
        return None
    if not routes:
        print(f"xgate run: no routes: add `routes:` to {Path(args.config) / 'gateway.yaml'} or "
              "`xgate.route.*` labels to a source endpoint", file=sys.stderr)
        return None
    return routes, engine


def _gateway(args: argparse.Namespace, loaded: Loaded, sources: RegistrySources, routes: list[Route],
             engine: Engine, address: str) -> Gateway:
    """One gateway process: the engine, its shadow candidate, the registry view, the reloader."""
    settings = loaded.settings
    if args.worker is not None:  # a worker's metrics server answers only its supervisor
        settings = replace(settings, metrics=worker_access())
    engine.ref.shadow, shadow_problems = load_shadow(args.config, engine.metrics, settings.runtime.limits,
                                                     settings.runtime.shadow_dir)
    for problem in shadow_problems:
        log.error("shadow candidate: %s", problem)
    if engine.ref.shadow is not None:
        log.info("shadow candidate: %d definitions from %s, judged beside the active rules (GET /shadow)",
                 engine.ref.shadow.ruleset.definition_count, engine.ref.shadow.source)
    # /registry on the metrics address: the registry as loaded, updated on every reload
    state = state_file(args.config, settings.registry.state_dir) if address else None
    # the view takes the loaded registry only once the change publisher listens (below): what changed since the
    # last saved state (a write the last process made and died before announcing) is announced then
    view = RegistryView(None, state) if address else None
    if not address and settings.registry.address:
        log.warning("registry.address %s is not served: the registry API runs beside the metrics server, which "
                    "runtime.metrics_address (or --metrics-address) turned off", settings.registry.address)
    reloader = Reloader(args.config, engine, loaded.snapshot, settings, settings.runtime.reload_debounce,
                        on_snapshot=view.update if view is not None else None, sources=sources)
    # the registry's write side and its change events (gateway/runtime/registry_wiring.py); with --workers,
    # the first worker alone publishes
    writer = registry_writer(args.config, view, settings, reloader, engine)
    publisher = change_publisher(view, loaded.snapshot, settings, state, primary=args.worker in (None, 0))
    if view is not None:
        view.update(loaded.snapshot)
    return Gateway(engine, reloader, routes, settings, view, writer, publisher)


def _supervisor(args: argparse.Namespace, workers: int, address: str, loaded: Loaded) -> Supervisor:
    """`--workers N`: N processes, each `xgate run --worker I` with the flags that reach a worker."""
    passed: list[str] = []
    if args.summary is not None:
        passed += ["--summary", str(args.summary)]
    if args.no_watch:
        passed.append("--no-watch")
    for flag, value in (("--log-level", args.log_level), ("--log-format", args.log_format)):
        if value is not None:  # (the environment's values reach the workers by themselves)
            passed += [flag, value]
    settings = loaded.settings
    return Supervisor(args.config, workers, passed, address, settings.metrics, settings.runtime.drain_timeout)


def _shared_source(worker: int, config: EndpointConfig) -> Any:
    return registry.create_source(registry.share_source(config, worker))


def _serve(service: Service) -> ExitCode:
    """Run the service to its end; what ended it as one line on stderr and the exit code."""
    try:
        code = asyncio.run(service.run())
    except GatewayError as exc:
        print(f"xgate run: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    except BaseExceptionGroup as group:  # a route's adapter failed for good inside the engine's TaskGroup
        mismatches, rest = group.split(EndpointMismatch)
        if mismatches is None or rest is not None:
            raise
        for line in dict.fromkeys(str(exc) for exc in _leaves(mismatches)):
            print(f"xgate run: {line}", file=sys.stderr)
        return ExitCode.USAGE  # the configuration contradicts the broker: fix one or the other
    fatal = service.runs.engine.fatal if isinstance(service.runs, Gateway) else None
    if fatal is not None:  # a route could not start
        print(f"xgate run: {fatal}", file=sys.stderr)
        return ExitCode.USAGE
    return code


def _leaves(group: BaseExceptionGroup[Any]) -> list[BaseException]:
    found: list[BaseException] = []
    for exc in group.exceptions:
        found += _leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc]
    return found


def add_command(commands: Any) -> None:
    run = commands.add_parser("run", help="run the gateway: consume, validate, route")
    run.add_argument("--config", required=True, metavar="DIR", help="documents and gateway.yaml")
    run.add_argument("--summary", type=float, metavar="SECONDS", help="live summary on stderr every SECONDS")
    run.add_argument("--duration", type=float, metavar="SECONDS", help="stop (draining) after SECONDS")
    run.add_argument("--metrics-address", metavar="HOST:PORT",
                     help="where /metrics /healthz /readyz listen (default 127.0.0.1:9464; '' turns it off)")
    run.add_argument("--no-watch", action="store_true", help="do not reload when files change (SIGHUP still does)")
    run.add_argument("--workers", type=int, metavar="N",
                     help="processes, each a full gateway, sharing every source (default: runtime.workers, 1)")
    run.add_argument("--log-level", metavar="LEVEL", help=f"{', '.join(logs.LEVELS)} (default: ${logs.LEVEL_ENV}, "
                     "else info)")
    run.add_argument("--log-format", metavar="FORMAT", help=f"text: a line a record; json: an object a line "
                     f"(default: ${logs.FORMAT_ENV}, else text)")
    run.add_argument("--worker", type=int, help=argparse.SUPPRESS)  # set by the supervisor of --workers N
    run.set_defaults(handler=cmd_run)
