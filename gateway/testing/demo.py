"""`make demo`: the real service (the Engine of `xgate run`) between local brokers, sample traffic, a live summary.

    python -m gateway.testing.demo [--config config/demo] [--rate 200] [--duration 0] [--seed 7]
                                   [--metrics-address 127.0.0.1:9464]

Starts the brokers the routes of config/demo need through the scripts `make brokers` runs
(deploy/brokers/*.sh: each reuses a broker that already answers its protocol, and repairs one that only has
the port open, e.g. RabbitMQ without its AMQP 1.0 plugin); a broker that cannot be started is reported and its
routes shown with their error in the summary while the other routes flow.
the gateway's routes and its /metrics server, publishes seeded sample traffic into every source endpoint
(Kafka, HTTP, AMQP 1.0, MQTT 5, NATS) at --rate messages a second, reads the dead-letter destinations, and
redraws a summary every two seconds: throughput by verdict per route, the most frequent violations, and the
latest dead-lettered message with the reason it carries, and the last change event of the registry (a CI job
publishes a contract through the write API a few seconds in: demo_registry.py). Ctrl-C (or --duration seconds) stops the traffic,
drains the gateway (up to `runtime.drain_timeout` for the last messages to be judged and settled, then the engine's
own drain), stops the brokers this run started, and prints the totals; exit 0 when traffic flowed,
every route judged messages and every verdict (conformant, nonconformant, unmatched) was seen.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway.compiler import compile_registry
from gateway.console import console_sources
from gateway.console.app import add_console_routes
from gateway.envelope import Envelope
from gateway.exit_code import ExitCode
from gateway.loader import load_snapshot
from gateway.metrics.server import MetricsServer
from gateway.recorded import envelope_from_record
from gateway.routes.resolve import Route, endpoint_config, resolve_routes
from gateway.runtime.engine import Engine
from gateway.runtime.reload import Reloader
from gateway.runtime.replay import Replayer
from gateway.runtime.shadow import ShadowJudge, load_shadow
from gateway.settings import Settings, load_settings
from gateway.testing.demo_registry import DemoRegistry
from gateway.testing.traffic import records
from protocol_adapters import registry as adapters
from protocol_adapters.base import EndpointConfig

REPO = Path(__file__).resolve().parents[2]
# protocol family -> (broker script, the port it listens on by default, the variable that moves it)
BROKERS = {"KAFKA": ("kafka", 9092, "XGATE_KAFKA_PORT"), "MQTT": ("mosquitto", 1883, "XGATE_MQTT_PORT"),
           "AMQP": ("rabbitmq", 5672, "XGATE_RABBITMQ_PORT"), "NATS": ("nats", 4222, "XGATE_NATS_PORT")}
VERDICTS = ("conformant", "nonconformant", "unmatched")
TICK = 0.25  # seconds between traffic batches
BACKLOG_TICKS = 20  # batches an endpoint's publisher may fall behind before its oldest are not sent


# -- brokers ---------------------------------------------------------------------------------------------------
def _listening(port: int) -> bool:
    with contextlib.closing(socket.socket()) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


class LocalBrokers:
    """Starts the brokers the routes need; stops, on the way out, only those that were not already running."""

    def __init__(self, routes: list[Route]) -> None:
        families = {endpoint.protocol.split("/")[0] for route in routes
                    for endpoint in (route.source, route.conformant, route.nonconformant, route.unmatched)
                    if endpoint is not None}
        self.needed = [BROKERS[f] for f in sorted(families) if f in BROKERS]
        self.started: list[str] = []
        self.failed: dict[str, str] = {}  # broker script -> why it could not start (shown in the summary)

    def _script(self, name: str, action: str) -> None:
        done = subprocess.run(["bash", str(REPO / "deploy" / "brokers" / f"{name}.sh"), action], check=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=600)
        sys.stderr.write(done.stderr)  # what the script repaired or reused, e.g. a plugin it enabled

    def start(self) -> None:
        """Every broker through its script, as `make brokers` does: an open port is not a readiness check (the
        script checks that the protocol answers, and repairs or starts what does not)."""
        for name, port, variable in self.needed:
            was_running = _listening(int(os.environ.get(variable, port)))
            print(f"{'checking' if was_running else 'starting'} {name} (deploy/brokers/{name}.sh start) ...",
                  file=sys.stderr, flush=True)
            try:
                self._script(name, "start")
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
                detail = (exc.stderr or "").strip().splitlines() if isinstance(exc.stderr, str) else []
                self.failed[name] = detail[-1] if detail else str(exc)
                print(f"{name} is not usable: {self.failed[name]}; its routes will show the error",
                      file=sys.stderr, flush=True)
                continue
            if not was_running:
                self.started.append(name)

    def stop(self) -> None:
        for name in reversed(self.started):
            print(f"stopping {name}, which this demo started", file=sys.stderr, flush=True)
            with contextlib.suppress(subprocess.CalledProcessError):
                self._script(name, "stop")


# -- what the summary shows ---------------------------------------------------------------------------------
def _header(envelope: Envelope, name: str) -> str | None:
    """A dead-letter header in whatever shape the protocol keeps headers (pairs, or a dict of properties)."""
    for value in envelope.fields.values():
        found: Any = None
        if isinstance(value, dict):
            found = value.get(name)
        elif isinstance(value, list):
            found = next((v for k, v in value if isinstance(k, str) and k.lower() == name), None) \
                if all(isinstance(p, (list, tuple)) and len(p) == 2 for p in value) else None
        if isinstance(found, (bytes, bytearray)):
            found = bytes(found).decode("utf-8", "replace")
        if isinstance(found, str):
            return found
    return None


@dataclass
class DeadLetters:
    """What arrived at the dead-letter destinations: counts, violations by rule and path, the latest one."""

    count: int = 0
    violations: Counter[str] = field(default_factory=Counter)
    latest: tuple[str, Envelope] | None = None

    async def read(self, config: EndpointConfig) -> None:
        async with adapters.create_source(config) as source:
            async for envelope in source:
                self.count += 1
                self.latest = (config.endpoint_id, envelope)
                with contextlib.suppress(ValueError, TypeError):
                    for violation in json.loads(_header(envelope, "xgate-violations") or "[]"):
                        self.violations[f"{violation.get('rule')} at {violation.get('path')}"] += 1
                await source.ack(envelope)


def _explain_latest(dead: DeadLetters) -> list[str]:
    if dead.latest is None:
        return ["  (none yet)"]
    endpoint, envelope = dead.latest
    definition = "/".join(filter(None, (_header(envelope, "xgate-messagegroupid"), _header(envelope, "xgate-messageid"))))
    lines = [f"  at {endpoint}, from {_header(envelope, 'xgate-source-endpoint')} "
             f"({_header(envelope, 'xgate-source-address')}): verdict {_header(envelope, 'xgate-verdict')}"
             + (f", closest definition {definition}" if definition else "")]
    with contextlib.suppress(ValueError, TypeError):
        for violation in json.loads(_header(envelope, "xgate-violations") or "[]")[:4]:
            lines.append(f"  - {violation.get('rule')} at {violation.get('path')}: {violation.get('message')}")
    body = envelope.body[:100].decode("utf-8", "replace")
    lines.append(f"  body: {body}{'...' if len(envelope.body) > 100 else ''}")
    return lines


def _shadow_lines(shadow: ShadowJudge | None) -> list[str]:
    """The shadow candidate's panel: what promoting config/demo/shadow/ would change (GET /shadow in full)."""
    if shadow is None:
        return []
    lines = ["", f"shadow candidate ({shadow.source}, {shadow.ruleset.definition_count} definitions): "
                 f"{shadow.disagreements:,} of {shadow.judged:,} judged messages would get another verdict"]
    if shadow.latest:
        latest = shadow.latest[-1]
        active, candidate = latest["active"], latest["candidate"]
        reasons = "; ".join(f"{v['rule']} at {v['path']}" for v in candidate.get("violations", [])[:2])
        lines.append(f"  latest: {latest['endpoint']} {active['verdict']} -> {candidate['verdict']}"
                     f" {candidate.get('messageid') or ''} ({reasons})")
    return lines


class Summary:
    def __init__(self, engine: Engine, dead: DeadLetters, metrics_url: str, config: str) -> None:
        self.engine, self.dead, self.metrics_url, self.config = engine, dead, metrics_url, config
        self.started = time.monotonic()
        self.published = 0
        self.refused = 0
        self.held_back: Counter[str] = Counter()  # generated for an endpoint still busy with its previous batch
        self.publish_errors: dict[str, str] = {}  # source endpoint -> why publishing into it fails
        self.broker_failures: dict[str, str] = {}  # broker script -> why it could not start
        self.down_at_stop: dict[str, dict[str, str]] | None = None  # the engine's view, kept for the final summary
        self._last: tuple[float, dict[str, int]] = (self.started, {})
        self.registry: DemoRegistry | None = None  # the last change event of the registry (demo_registry.py)
        self.console: str | None = None  # the web console's address, when gateway.yaml turns it on

    def totals(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for stats in self.engine.stats.routes.values():
            total.update(stats.verdicts)
        return total

    def render(self) -> str:
        now = time.monotonic()
        then, previous = self._last
        routes = self.engine.stats.routes
        self._last = (now, {source: stats.received for source, stats in routes.items()})
        totals = self.totals()
        lines = [(f"xgate demo  {now - self.started:5.0f} s   config {self.config}   metrics {self.metrics_url}"
                 "   Ctrl-C stops"),
                 *([f"console {self.console}   (dead letters with their reasons marked in place, try a message)"]
                   if self.console else []),
                 f"published {self.published:,}" + (f" ({self.refused:,} refused: HTTP 422 from the rejecting route)"
                                                     if self.refused else "")
                 + f"   judged {sum(totals.values()):,}   dead-lettered {self.dead.count:,}", "",
                 (f"{'route (source endpoint)':<24}{'msg/s':>8}{'conformant':>12}{'nonconformant':>15}"
                 f"{'unmatched':>11}{'in flight':>11}")]
        for source, stats in routes.items():
            rate = (stats.received - previous.get(source, 0)) / max(now - then, 1e-9)
            lines.append(f"{source:<24}{rate:>8.0f}{stats.verdicts['conformant']:>12,}"
                         f"{stats.verdicts['nonconformant']:>15,}{stats.verdicts['unmatched']:>11,}"
                         f"{stats.inflight:>11,}")
        lines += self._problems()
        lines += ["", "most frequent violations (dead-lettered messages):"]
        lines += [f"  {count:>7,}  {what}" for what, count in self.dead.violations.most_common(5)] or ["  (none yet)"]
        lines += ["", "latest dead-lettered message, and the reason it carries in its xgate-* headers:"]
        lines += _explain_latest(self.dead)
        lines += _shadow_lines(self.engine.ref.shadow)
        lines += self.registry.lines() if self.registry is not None else []
        return "\n".join(lines)

    def _problems(self) -> list[str]:
        """What does not flow, and why: a broker that did not start, a destination down, a source not reachable."""
        lines = [f"  broker {name}: {why}" for name, why in self.broker_failures.items()]
        down_now = self.engine.destinations_down() if self.down_at_stop is None else self.down_at_stop
        for source, down in down_now.items():
            lines += [f"  route {source}: destination {destination} down: {error[:160]}"
                      for destination, error in down.items()]
        lines += [f"  publishing into {endpoint}: {error[:160]}" for endpoint, error in self.publish_errors.items()]
        lines += [f"  {endpoint}: {count:,} generated messages not sent (its publisher is {BACKLOG_TICKS} ticks "
                  "behind)" for endpoint, count in self.held_back.items()]
        return ["", "not flowing:"] + lines if lines else []


# -- the run -------------------------------------------------------------------------------------------------
async def _traffic(snapshot: Any, settings: Settings, rate: float, seed: int, summary: Summary,
                   stop: asyncio.Event) -> None:
    """Publish the sample traffic at `rate`, batch by batch, into each endpoint the message was recorded for.

    Each endpoint sends on its own: one that cannot be reached holds back its own batches (counted and shown),
    never the traffic of the others."""
    async with contextlib.AsyncExitStack() as stack:
        replayers: dict[str, Replayer] = {}
        sending: dict[str, asyncio.Task[None]] = {}
        backlog: dict[str, list[Envelope]] = defaultdict(list)
        source = records(seed)
        per_tick = max(1, round(rate * TICK))
        most = per_tick * BACKLOG_TICKS
        try:
            while not stop.is_set():
                started = time.monotonic()
                by_endpoint: dict[str, list[Envelope]] = defaultdict(list)
                for record in itertools.islice(source, per_tick):
                    by_endpoint[record["endpoint"]].append(envelope_from_record(record))
                for endpoint, batch in by_endpoint.items():
                    waiting = backlog[endpoint]
                    waiting += batch
                    if len(waiting) > most:  # a publisher this far behind cannot reach its endpoint: drop the oldest
                        summary.held_back[endpoint] += len(waiting) - most
                        del waiting[:len(waiting) - most]
                    busy = sending.get(endpoint)
                    if busy is not None and not busy.done():
                        continue
                    batch, backlog[endpoint] = waiting, []
                    if endpoint not in replayers:
                        config = endpoint_config(snapshot.registry, endpoint, settings)
                        replayers[endpoint] = await stack.enter_async_context(Replayer(config, adapters.create_sink))
                    sending[endpoint] = asyncio.create_task(replayers[endpoint].send_all(batch))
                    sending[endpoint].add_done_callback(functools.partial(_publish_failed, summary, endpoint))
                _count_published(summary, replayers)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(max(0.0, TICK - (time.monotonic() - started))):
                        await stop.wait()
            # what is on its way gets a few seconds; an endpoint that cannot be reached does not hold the stop
            pending = [task for task in sending.values() if not task.done()]
            if pending:
                await asyncio.wait(pending, timeout=5)
        finally:
            for task in sending.values():
                task.cancel()
            await asyncio.gather(*sending.values(), return_exceptions=True)
            _count_published(summary, replayers)


def _count_published(summary: Summary, replayers: dict[str, Replayer]) -> None:
    summary.published = sum(r.result.sent for r in replayers.values())
    summary.refused = sum(r.result.refused for r in replayers.values())
    for endpoint, replayer in replayers.items():
        # an endpoint that takes some messages flows: its refusals (HTTP 422 from a `reject` route) are counted above
        if replayer.result.errors and not replayer.result.sent:
            summary.publish_errors[endpoint] = replayer.result.errors[-1]


def _publish_failed(summary: Summary, endpoint: str, task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        summary.publish_errors[endpoint] = str(task.exception())


async def _wait_ready(engine: Engine, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if engine.ready()[0]:
            return True
        await asyncio.sleep(0.2)
    return False


async def run_demo(args: argparse.Namespace) -> int:
    snapshot = load_snapshot([args.config])
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    settings, problems = load_settings(args.config)
    routes, route_problems = resolve_routes(snapshot.registry, settings)
    for problem in [*snapshot.errors, *problems, *route_problems]:
        print(problem, file=sys.stderr)
    if not routes:
        return ExitCode.USAGE
    brokers = LocalBrokers(routes)
    brokers.start()
    try:
        return await _serve(args, snapshot, ruleset, settings, routes, brokers.failed)
    finally:
        brokers.stop()


async def _serve(args: argparse.Namespace, snapshot: Any, ruleset: Any, settings: Settings,
                 routes: list[Route], broker_failures: dict[str, str]) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    engine = Engine(routes, ruleset, drain_timeout=settings.runtime.drain_timeout)
    # config/demo/shadow/: a tightened copy
    engine.ref.shadow, problems = load_shadow(args.config, engine.metrics, named=settings.runtime.shadow_dir)
    for problem in problems:
        print(f"shadow candidate: {problem}", file=sys.stderr)
    dead = DeadLetters()
    interactive = sys.stdout.isatty()
    async with contextlib.AsyncExitStack() as stack:
        address = args.metrics_address
        host = address.rsplit(":", 1)[0]
        if _listening(int(address.rsplit(":", 1)[1])):
            address = f"{host}:0"  # taken (another gateway?): any free port
        registry_side = DemoRegistry(args.config, settings, engine)  # write API and change events (issue 24)
        stack.push_async_callback(registry_side.stop)
        console = None
        if settings.console is not None:  # the web console (issue 37), as `xgate run` serves it
            reloader = registry_side.reloader or Reloader(args.config, engine, snapshot, settings)
            console = console_sources(settings.console, engine, reloader, engine.metrics.registry, host,
                                      registry_side.publisher, registry_side.writer)
        server = await stack.enter_async_context(MetricsServer(
            engine.metrics.registry, engine.ready, address, None, registry_side.view, settings.registry,
            registry_writer=registry_side.writer,
            extra_routes=functools.partial(add_console_routes, sources=console) if console is not None else None))
        summary = Summary(engine, dead, f"http://{server.host}:{server.port}/metrics", args.config)
        summary.broker_failures = broker_failures
        summary.registry = registry_side
        service = asyncio.create_task(engine.run())
        print(f"gateway starting: {len(routes)} routes; /metrics, /healthz and /readyz on "
              f"http://{server.host}:{server.port}", file=sys.stderr, flush=True)
        if console is not None:
            summary.console = f"http://{server.host}:{server.port}/ui"
            print(f"console: {summary.console} (routes, dead letters with their reasons, registry, try a message)",
                  file=sys.stderr, flush=True)
        if not await _wait_ready(engine, 20 if broker_failures else 60):
            print(f"not every source connected within 60 s: {engine.ready()[1]}; sending anyway", file=sys.stderr)
        dead_letter_endpoints = {r.nonconformant.endpoint_id: r.nonconformant for r in routes if r.nonconformant}
        readers = [asyncio.create_task(dead.read(config)) for config in dead_letter_endpoints.values()]
        traffic = asyncio.create_task(_traffic(snapshot, settings, args.rate, args.seed, summary, stop))
        registry_side.start(f"http://{server.host}:{server.port}/registry")
        until = time.monotonic() + args.duration if args.duration > 0 else float("inf")
        next_plain = 0.0
        while not stop.is_set() and time.monotonic() < until and not traffic.done():
            if interactive:
                sys.stdout.write("\x1b[H\x1b[J" + summary.render() + "\n")
            elif time.monotonic() >= next_plain:  # a log, not a screen: a block every 5 s
                sys.stdout.write(summary.render() + "\n\n")
                next_plain = time.monotonic() + 5
            sys.stdout.flush()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(2.0):
                    await stop.wait()
        stop.set()
        await traffic  # a failure to publish surfaces here
        print("traffic stopped; draining the gateway ...", file=sys.stderr, flush=True)
        # what is still in flight gets the settings' drain_timeout to settle (a destination that is down keeps it)
        await _settle(engine, summary, timeout=settings.runtime.drain_timeout)
        await asyncio.sleep(1.0)  # the last dead letters on their way to the reader
        summary.down_at_stop = engine.destinations_down()
        engine.request_stop()
        await service
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
        print(summary.render(), flush=True)
    totals = summary.totals()
    print(f"\ndemo: published {summary.published:,}, judged {sum(totals.values()):,}: "
          + " ".join(f"{v}={totals[v]}" for v in VERDICTS) + f"; dead-lettered {dead.count:,}", flush=True)
    print(f"the same kind of traffic judged offline: python -m gateway.testing.traffic --count 2000 | "
          f"xgate check --registry {args.config} --format table", flush=True)
    missing = [v for v in VERDICTS if not totals[v]]
    idle = [source for source, stats in engine.stats.routes.items() if not stats.received]
    for source in idle:
        print(f"demo: route {source} judged nothing", file=sys.stderr)
    if missing or not summary.published:
        print(f"demo: no {', '.join(missing) or 'traffic'} seen", file=sys.stderr)
    return ExitCode.FAILED if missing or idle or not summary.published else ExitCode.OK


async def _settle(engine: Engine, summary: Summary, timeout: float) -> None:
    """Until every published message was judged and nothing is in flight (or `timeout`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        judged = sum(summary.totals().values())
        busy = sum(stats.inflight for stats in engine.stats.routes.values())
        if judged >= summary.published + summary.refused and not busy:
            return
        await asyncio.sleep(0.5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="config/demo")
    parser.add_argument("--rate", type=float, default=200.0, help="messages a second into the source endpoints")
    parser.add_argument("--duration", type=float, default=0.0, help="seconds to run (0: until Ctrl-C)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--metrics-address", default="127.0.0.1:9464")
    args = parser.parse_args(argv)
    return asyncio.run(run_demo(args))


if __name__ == "__main__":
    sys.exit(main())
