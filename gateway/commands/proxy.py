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
import sys
from dataclasses import replace
from typing import Any

from gateway import logs
from gateway.commands.startup import load_config, report
from gateway.compiler.core import NativeJudge
from gateway.config_values import ValueProblem
from gateway.exit_code import ExitCode
from gateway.proxy.dead_letters import DeadLetters
from gateway.proxy.judging import topic_rules
from gateway.proxy.server import Judging, Proxy
from gateway.sections.proxy import ProxySettings, host_port

log = logging.getLogger("xgate")


def cmd_proxy(args: argparse.Namespace) -> ExitCode:
    try:
        logs.configure(args.log_level, args.log_format, None)
    except ValueError as exc:
        print(f"xgate proxy: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    loaded = load_config(args.config)
    report(loaded.diagnostics)  # a document's problems leave that document out, as for `xgate run`
    settings = _settings(args, loaded.settings.proxy)
    if settings is None or any(d.code == "settings" for d in loaded.diagnostics):
        print("xgate proxy: fix the settings above first", file=sys.stderr)
        return ExitCode.USAGE
    ruleset = loaded.ruleset
    judged = {endpoint_id for endpoint_id, rules in ruleset.endpoints.items() if rules.definitions}
    topics, problems = topic_rules(loaded.snapshot.registry, loaded.settings, settings.policy, judged)
    if report(problems):
        print(f"xgate proxy: fix the topics above first ({args.config})", file=sys.stderr)
        return ExitCode.USAGE
    if not topics:
        log.warning("proxy: no KAFKA endpoint with definitions names a topic: every request passes unjudged")
    for topic, rule in sorted(topics.items()):
        log.info("proxy: topic %s judged by %s (%s)", topic, rule.endpoint_id, rule.policy)
    return asyncio.run(_serve(settings, Judging(NativeJudge(ruleset), topics), args.duration))


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


async def _serve(settings: ProxySettings, judging: Judging, duration: float | None) -> ExitCode:
    dead_letters = DeadLetters()
    copier = asyncio.create_task(dead_letters.run())
    proxy = Proxy(settings, judging, dead_letters.copy)
    try:
        await proxy.start()
    except OSError as exc:
        print(f"xgate proxy: cannot listen on {settings.listen_host}:{settings.listen_port}: {exc}", file=sys.stderr)
        dead_letters.close()
        await copier
        return ExitCode.USAGE
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), duration)
    log.info("proxy: stopping; draining connections")
    await proxy.close()
    dead_letters.close()
    await copier
    _summary(proxy, dead_letters)
    return ExitCode.OK


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
    proxy.add_argument("--log-level", metavar="LEVEL", help=f"{', '.join(logs.LEVELS)} (default: ${logs.LEVEL_ENV}, "
                       "else info)")
    proxy.add_argument("--log-format", metavar="FORMAT", help="text or json (default: $XGATE_LOG_FORMAT, else text)")
    proxy.set_defaults(handler=cmd_proxy)
