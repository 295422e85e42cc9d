"""`xgate proxy`: a Kafka wire-protocol proxy that judges produce requests (gateway/proxy/).

Started from the same config directory as `xgate run`: the documents say which topics are judged and by
which definitions, gateway.yaml's `proxy` section where the proxy listens and which cluster it fronts.
Everything that would stop it is reported before it listens (exit 2).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import ssl
import sys
from dataclasses import replace
from typing import Any

from gateway import logs
from gateway.commands.startup import report
from gateway.config_values import ValueProblem
from gateway.errors import GatewayError
from gateway.exit_code import ExitCode
from gateway.loader.sources import RegistrySources
from gateway.metrics.server import MetricsServer
from gateway.proxy.dead_letters import DeadLetters
from gateway.proxy.metrics import ProxyMetrics
from gateway.proxy.reload import Loaded, ProxyReloader, load_rules
from gateway.proxy.server import Judging, Proxy
from gateway.proxy.upstream import UpstreamWatch
from gateway.runtime import early_stop, heap
from gateway.runtime.workers import Supervisor, follow_supervisor, worker_access
from gateway.sections.proxy import ProxySettings, host_port
from gateway.settings import Settings

log = logging.getLogger("xgate")
DRAIN_SECONDS = 10.0  # on SIGTERM, what is in flight is answered within this


def cmd_proxy(args: argparse.Namespace) -> ExitCode:
    early_stop.catch()
    if args.worker is not None:
        follow_supervisor()
    try:
        logs.configure(args.log_level, args.log_format, args.worker)
    except ValueError as exc:
        print(f"xgate proxy: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    sources = RegistrySources()  # fetched once at start, then followed by the reloader
    loaded = load_rules(args.config, sources=sources)
    report(loaded.problems)  # a document's problems leave that document out, as for `xgate run`
    settings = _settings(args, loaded.section)
    if settings is None or loaded.judging is None:
        print(f"xgate proxy: fix the settings and topics above first ({args.config})", file=sys.stderr)
        return ExitCode.USAGE
    judging = loaded.judging
    if not judging.topics:
        log.warning("proxy: no KAFKA endpoint with definitions names a topic: every request passes unjudged")
    for topic, rule in sorted(judging.topics.items()):
        log.info("proxy: topic %s judged by %s (%s)", topic, rule.endpoint_id, rule.policy)
    runtime = loaded.settings
    address = args.metrics_address if args.metrics_address is not None else runtime.runtime.metrics_address
    if args.workers is not None and args.workers < 1:
        print(f"xgate proxy: --workers must be at least 1, found {args.workers}", file=sys.stderr)
        return ExitCode.USAGE
    if args.worker is None and (args.workers or 1) > 1:
        return asyncio.run(_supervise(args, address, runtime))
    if args.worker is not None:  # a worker's metrics server answers only its supervisor
        runtime = replace(runtime, metrics=worker_access())
    try:
        return asyncio.run(_serve(args, settings, judging, loaded, address, runtime, sources))
    except (OSError, ssl.SSLError, GatewayError) as exc:
        print(f"xgate proxy: {exc}", file=sys.stderr)
        return ExitCode.USAGE


def _settings(args: argparse.Namespace, section: ProxySettings | None) -> ProxySettings | None:
    """gateway.yaml's `proxy` section with the command line's --upstream and --listen over it."""
    try:
        upstream = tuple(host_port(s.strip(), "--upstream") for s in args.upstream.split(",")) if args.upstream \
            else None
        listen = host_port(args.listen, "--listen") if args.listen else None
    except ValueProblem as exc:
        print(f"xgate proxy: {exc}", file=sys.stderr)
        return None
    if section is None:
        if upstream is None:
            print(f"xgate proxy: no upstream cluster: give gateway.yaml a `proxy` section in {args.config} "
                  "or --upstream HOST:PORT", file=sys.stderr)
            return None
        host, port = listen or ("127.0.0.1", 19092)
        return ProxySettings(upstream, host, port, host)
    if upstream is not None:
        section = replace(section, upstream=upstream)
    if listen is not None:
        section = replace(section, listen_host=listen[0], listen_port=listen[1])
    return section


async def _serve(args: argparse.Namespace, settings: ProxySettings, judging: Judging, loaded: Loaded, address: str,
                 runtime: Settings, sources: RegistrySources) -> ExitCode:
    metrics = ProxyMetrics()
    metrics.endpoints({rule.endpoint_id for rule in judging.topics.values()}, judging.native.ruleset.definition_count)
    dead_letters = DeadLetters(metrics)
    proxy = Proxy(settings, judging, dead_letters.copy, metrics, shared=args.worker is not None)
    watch = UpstreamWatch(settings.upstream, metrics.upstream)
    reloader = ProxyReloader(args.config, proxy, metrics, loaded.digest, runtime.runtime.reload_debounce,
                             runtime.proxy, sources, loaded.fetcher)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    if early_stop.requested():
        log.info("proxy: SIGTERM during start-up: stopping before taking any request")
        stop.set()
    reloads: set[asyncio.Task[str]] = set()

    def hangup() -> None:
        task = asyncio.create_task(reloader.reload("SIGHUP"))
        reloads.add(task)  # held until done: the loop keeps only a weak reference to a task
        task.add_done_callback(reloads.discard)
    loop.add_signal_handler(signal.SIGHUP, hangup)

    def ready() -> tuple[bool, dict[str, bool]]:
        if reloader.watching is False:  # the config watch failed and is being started again
            return False, {"upstream": watch.up, "config-watch": False}
        return watch.up, {"upstream": watch.up}

    async with contextlib.AsyncExitStack() as stack:
        if address:
            server = await stack.enter_async_context(MetricsServer(metrics.metrics.registry, ready, address,
                                                                   runtime.metrics))
            log.info("proxy: /metrics /healthz /readyz on %s://%s:%d", server.scheme, server.host, server.port)
        await proxy.start()
        heap.settle()  # as `xgate run` does: the compiled rules out of the collector's full passes
        tasks = [asyncio.create_task(dead_letters.run()), asyncio.create_task(watch.run(stop)),
                 asyncio.create_task(reloader.follow(stop))]
        if not args.no_watch:
            tasks.append(asyncio.create_task(reloader.watch(stop)))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), args.duration)
        stop.set()
        log.info("proxy: stopping; draining connections")
        await proxy.close(DRAIN_SECONDS)
        dead_letters.close()
        await asyncio.gather(*tasks, return_exceptions=True)
    _summary(proxy, dead_letters)
    return ExitCode.OK


async def _supervise(args: argparse.Namespace, address: str, runtime: Settings) -> ExitCode:
    """`--workers N`: N proxy processes sharing every listener (SO_REUSEPORT: the kernel spreads connections),
    under run's supervisor (gateway/runtime/workers.py): their metrics combined, restarted when one exits,
    SIGTERM and SIGHUP passed on."""
    passed = ["--no-watch"] if args.no_watch else []
    for flag, value in (("--upstream", args.upstream), ("--listen", args.listen), ("--log-level", args.log_level),
                        ("--log-format", args.log_format)):
        if value is not None:
            passed += [flag, value]
    supervisor = Supervisor(args.config, args.workers, passed, address, runtime.metrics,
                            DRAIN_SECONDS, command="proxy")
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, supervisor.request_stop)
    loop.add_signal_handler(signal.SIGHUP, supervisor.signal_all, signal.SIGHUP)
    if early_stop.requested():
        supervisor.request_stop()
    if args.duration is not None:
        loop.call_later(args.duration, supervisor.request_stop)
    return await supervisor.run()


def _summary(proxy: Proxy, dead_letters: DeadLetters) -> None:
    s = proxy.stats
    log.info("proxy: %d connection(s), %d request(s); %d record(s) judged, %d refused in %d batch(es), %d observed "
             "(%d copied to dead-letter destinations, %d not); %d connection(s) closed on bad input",
             s.connections, s.requests, s.records_judged, s.records_refused, s.batches_refused, s.records_observed,
             dead_letters.sent, dead_letters.dropped, s.closed_bad_input)


def add_command(commands: Any) -> None:
    proxy = commands.add_parser("proxy", help="a Kafka wire proxy that refuses nonconformant produced records")
    proxy.add_argument("--config", required=True, metavar="DIR", help="documents and gateway.yaml (its `proxy`)")
    proxy.add_argument("--upstream", metavar="HOST:PORT[,...]", help="the cluster's bootstrap servers "
                       "(default: proxy.upstream)")
    proxy.add_argument("--listen", metavar="HOST:PORT", help="the bootstrap listener; broker N on port + 1 + N "
                       "(default: proxy.listen, else 127.0.0.1:19092)")
    proxy.add_argument("--duration", type=float, metavar="SECONDS", help="stop (draining) after SECONDS")
    proxy.add_argument("--metrics-address", metavar="HOST:PORT",
                       help="where /metrics /healthz /readyz listen (default: runtime.metrics_address; '' turns it off)")
    proxy.add_argument("--no-watch", action="store_true", help="do not reload when files change (SIGHUP still does)")
    proxy.add_argument("--workers", type=int, metavar="N",
                       help="processes sharing the listeners (SO_REUSEPORT), one supervisor (default 1)")
    proxy.add_argument("--worker", type=int, help=argparse.SUPPRESS)  # set by the supervisor of --workers N
    proxy.add_argument("--log-level", metavar="LEVEL", help=f"{', '.join(logs.LEVELS)} (default: ${logs.LEVEL_ENV}, "
                       "else info)")
    proxy.add_argument("--log-format", metavar="FORMAT", help="text or json (default: $XGATE_LOG_FORMAT, else text)")
    proxy.set_defaults(handler=cmd_proxy)
