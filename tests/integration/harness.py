"""Run `xgate run` as a real process between real brokers and account for every message.

A Profile says how one protocol's endpoints are addressed; the harness writes
the registry and gateway.yaml, starts the broker script and the gateway,
publishes recorded traffic into the source endpoint with the protocol's own
sink adapter, reads every destination with the protocol's own source adapter,
and compares what arrived with where the traffic generator meant each message to go
(checking separately that `xgate check` agrees).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from gateway.check import judge_record
from gateway.compiler import compile_registry
from gateway.envelope import Envelope
from gateway.errors import AdapterError
from gateway.loader import load_snapshot
from gateway.recorded import envelope_from_record
from gateway.routes.resolve import endpoint_config
from gateway.runtime.router import kind_of
from gateway.settings import load_settings
from protocol_adapters import registry as adapters
from tests.conftest import free_port
from tests.integration.traffic import DESTINATION_OF_KIND, kind_of_record, message, mixed
from tests.integration.traffic import registry as registry_document

REPO = Path(__file__).resolve().parents[2]
DESTINATION_OF = {"conformant": "valid", "nonconformant": "dlq", "unmatched": "unknown"}
PROBE_SEQ = 10_000_000


@dataclass
class Profile:
    protocol: str
    broker: str | None                                  # deploy/brokers/<broker>.sh, None for HTTP
    options: Callable[[str], dict[str, dict[str, Any]]]  # run id -> endpoint name -> protocoloptions (+ "uris")
    settings: dict[str, Any] = field(default_factory=dict)  # gateway.yaml `endpoints:` section
    broker_env: dict[str, str] = field(default_factory=dict)  # e.g. a private port for the broker script


def start_broker(name: str | None, env: dict[str, str] | None = None) -> None:
    if name is not None:
        subprocess.run(["bash", str(REPO / "deploy" / "brokers" / f"{name}.sh"), "start"], check=True,
                       env={**os.environ, **(env or {})})


def restart_broker(name: str, env: dict[str, str] | None = None) -> None:
    subprocess.run(["bash", str(REPO / "deploy" / "brokers" / f"{name}.sh"), "restart"], check=True,
                   env={**os.environ, **(env or {})})


def stop_broker(name: str, env: dict[str, str] | None = None) -> None:
    subprocess.run(["bash", str(REPO / "deploy" / "brokers" / f"{name}.sh"), "stop"], check=True,
                   env={**os.environ, **(env or {})})


class Gateway:
    """`xgate run --config DIR` as a child process."""

    def __init__(self, config_dir: Path, *extra: str) -> None:
        self.config_dir = config_dir
        self.metrics_port = free_port()
        self.log_file = config_dir.parent / "gateway.log"  # outside the watched config folder
        self.log = open(self.log_file, "a")
        self.process = subprocess.Popen([sys.executable, "-m", "gateway.cli", "run", "--config", str(config_dir),
                                         "--summary", "2", "--metrics-address", f"127.0.0.1:{self.metrics_port}",
                                         *extra], stdout=self.log, stderr=subprocess.STDOUT, cwd=REPO,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"})

    def scrape(self, path: str = "/metrics") -> tuple[int, str]:
        import urllib.error
        import urllib.request
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}{path}", timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def stop(self, timeout: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        finally:
            self.log.close()

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        self.log.close()

    def output(self) -> str:
        return self.log_file.read_text()


@dataclass
class World:
    profile: Profile
    config_dir: Path
    run_id: str
    _configs: dict[str, Any] = field(default_factory=dict)
    fault_started: float | None = None  # time.monotonic() when the injected fault began; set by `during`
    fault_ended: float | None = None  # time.monotonic() when the injected fault was over; set by `during`
    reconnected: bool | None = None  # the gateway opened a new connection to the faulted broker; set by `during`

    def config(self, name: str) -> Any:
        """The endpoint's adapter config, remembered (a test may break the documents on purpose later)."""
        if name not in self._configs:
            snapshot = load_snapshot([self.config_dir])
            settings, _ = load_settings(self.config_dir)
            self._configs[name] = endpoint_config(snapshot.registry, name, settings)
        return self._configs[name]

    def expected(self, records: list[dict[str, Any]], policy: str = "forward",
                 now: dict[str, str] | None = None) -> dict[str, collections.Counter[bytes]]:
        """Where each message must arrive, as bodies per destination (`observe`: all to valid).

        The destination comes from what the traffic generator made the message to be (its kind), not from
        the compiler under test; `now` overrides kinds whose destination a test changed by editing the
        documents. Separately, `xgate check` (judge_record) must agree on every message."""
        snapshot = load_snapshot([self.config_dir])
        ruleset = compile_registry(snapshot.registry)
        destinations = {**DESTINATION_OF_KIND, **(now or {})}
        out: dict[str, collections.Counter[bytes]] = {d: collections.Counter() for d in DESTINATION_OF.values()}
        disagreements = []
        for record in records:
            kind = kind_of_record(record)
            judged = DESTINATION_OF[kind_of(judge_record(ruleset, record)).value]
            if judged != destinations[kind]:
                disagreements.append(f"{kind} made for {destinations[kind]}, judged for {judged}")
            out["valid" if policy == "observe" else destinations[kind]][envelope_from_record(record).body] += 1
        assert not disagreements, f"judge_record disagrees with the generator: {disagreements[:5]}"
        return out


def prepare(profile: Profile, tmp_path: Path, destination: Profile | None = None, policy: str = "forward",
            runtime: dict[str, Any] | None = None) -> World:
    """Write the registry and gateway.yaml (source of `profile`, destinations of `destination` or the same;
    `runtime` merged over the gateway.yaml `runtime:` section)."""
    run_id = uuid.uuid4().hex[:8]
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    out = destination or profile
    document = registry_document(profile.protocol, profile.options(run_id), out.protocol,
                                 out.options(run_id + "o") if destination else None)
    (config_dir / "registry.json").write_text(json.dumps(document))
    settings = {"in": profile.settings.get("in", {})} if destination else dict(profile.settings)
    if destination:
        settings.update({n: v for n, v in out.settings.items() if n != "in"})
    gateway_yaml = {"routes": [{"source": "in", "conformant": "valid", "nonconformant": "dlq",
                                "unmatched": "unknown", "policy": policy}],
                    "endpoints": {k: v for k, v in settings.items() if v},
                    "runtime": {"drain_timeout": 30, **(runtime or {})}}
    (config_dir / "gateway.yaml").write_text(yaml.safe_dump(gateway_yaml))
    start_broker(profile.broker, profile.broker_env)
    if destination:
        start_broker(out.broker, out.broker_env)
    return World(profile, config_dir, run_id)


async def _send(sink: Any, envelope: Envelope, deadline: float = 120) -> None:
    """A producer that retries what the broker (or the gateway's HTTP ingress) could not take yet."""
    until = time.monotonic() + deadline
    while True:
        try:
            await sink.send(envelope)
            return
        except AdapterError as exc:
            if not exc.retriable or time.monotonic() > until:
                raise
            await asyncio.sleep(0.2)


async def publish(world: World, records: list[dict[str, Any]], inflight: int = 200,
                  rate: float | None = None) -> None:
    """Send every record, at most `rate` a second when given (load that lasts through an injected fault)."""
    config = world.config("in")
    started = time.monotonic()
    async with adapters.create_sink(config) as sink:
        pending: set[asyncio.Task[None]] = set()
        for number, record in enumerate(records):
            if rate is not None:
                ahead = started + number / rate - time.monotonic()
                if ahead > 0:
                    await asyncio.sleep(ahead)
            pending.add(asyncio.create_task(_send(sink, envelope_from_record(record))))
            if len(pending) >= inflight:
                _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        if pending:
            await asyncio.gather(*pending)


class Collector:
    """Reads every destination with the protocol's own source adapter, acknowledging as it goes."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.bodies: dict[str, collections.Counter[bytes]] = {d: collections.Counter() for d in DESTINATION_OF.values()}
        self.envelopes: dict[str, list[Envelope]] = {d: [] for d in DESTINATION_OF.values()}
        self.arrivals: list[tuple[float, bytes]] = []  # (time.monotonic(), body) of everything read, in order
        self._stacks: list[contextlib.AsyncExitStack] = []  # one a source: they are closed side by side
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> Collector:
        for name in DESTINATION_OF.values():
            self._stacks.append(contextlib.AsyncExitStack())
            source = await self._stacks[-1].enter_async_context(adapters.create_source(self.world.config(name)))
            self._tasks.append(asyncio.create_task(self._read(name, source)))
        return self

    async def _read(self, name: str, source: Any) -> None:
        async for envelope in source:
            self.bodies[name][envelope.body] += 1
            self.envelopes[name].append(envelope)
            self.arrivals.append((time.monotonic(), envelope.body))
            await source.ack(envelope)

    async def wait_for(self, expected: dict[str, collections.Counter[bytes]], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(not (expected[d] - self.bodies[d]) for d in expected):
                return
            await asyncio.sleep(0.2)

    async def __aexit__(self, *exc: Any) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        # concurrently: closing a source may wait out a fetch in progress (a JetStream fetchtimeout, say)
        closed = await asyncio.gather(*(stack.aclose() for stack in self._stacks), return_exceptions=True)
        for outcome in closed:
            if isinstance(outcome, BaseException):
                raise outcome


async def wait_until_live(world: World, collector: Collector, timeout: float = 60) -> set[bytes]:
    """Send probes until one comes out at `valid`: the gateway is subscribed and routing. Returns probe bodies."""
    probes: set[bytes] = set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = message(world.profile.protocol, PROBE_SEQ + len(probes), "ok-structured")
        await publish(world, [record])
        body = envelope_from_record(record).body
        probes.add(body)
        for _ in range(20):
            if collector.bodies["valid"][body]:
                return probes
            await asyncio.sleep(0.1)
    raise AssertionError("the gateway never routed a probe message to `valid`")


def account(expected: dict[str, collections.Counter[bytes]], collector: Collector,
            probes: set[bytes]) -> dict[str, Any]:
    """Missing (lost), unexpected and duplicated messages per destination; probes are left out."""
    report: dict[str, Any] = {}
    for destination, wanted in expected.items():
        got = collections.Counter({b: n for b, n in collector.bodies[destination].items() if b not in probes})
        report[destination] = {"missing": sum((wanted - got).values()), "unexpected": sum(n for b, n in got.items() if b not in wanted),
                               "duplicates": sum(n - 1 for b, n in got.items() if b in wanted and n > 1),
                               "arrived": sum(got.values()), "expected": sum(wanted.values())}
    return report


def recovery_seconds(world: World, collector: Collector, probes: set[bytes]) -> float | None:
    """From the end of the fault to the first message delivered after it (None: no fault, or nothing after)."""
    if world.fault_ended is None:
        return None
    after = (at for at, body in collector.arrivals if at >= world.fault_ended and body not in probes)
    first = next(after, None)
    return None if first is None else round(first - world.fault_ended, 2)


def broker_connections(pid: int, port: int) -> set[int]:
    """Socket inodes of the established TCP connections process `pid` holds to 127.0.0.1:`port`."""
    sockets = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                sockets.add(int(target[8:-1]))
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                remote_port, state, inode = int(fields[2].rsplit(":", 1)[1], 16), fields[3], int(fields[9])
                if remote_port == port and state == "01" and inode in sockets:
                    found.add(inode)
    return found


def await_reconnect(pid: int, port: int, before: set[int], timeout: float = 120) -> bool:
    """Whether process `pid` opens a connection to `port` that it did not hold before the fault (polled)."""
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        if broker_connections(pid, port) - before:
            return True
        time.sleep(0.2)
    return False


def fault_report(world: World, collector: Collector, probes: set[bytes], published: tuple[float, float]) -> dict[str, Any]:
    """When the fault struck relative to the traffic, and whether the gateway reconnected."""
    if world.fault_started is None:
        return {}
    started = world.fault_started
    return {"published_before_fault_s": round(started - published[0], 2),
            "published_after_fault_s": round(published[1] - started, 2),
            "arrived_before_fault": sum(1 for at, body in collector.arrivals if at < started and body not in probes),
            "reconnected": world.reconnected}


def rss_bytes(pid: int) -> int:
    """Resident memory of a process, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


def run_scenario(profile: Profile, tmp_path: Path, count: int, *, destination: Profile | None = None,
                 policy: str = "forward",
                 during: Callable[[World, Gateway], Gateway | None] | None = None,
                 timeout: float = 240, rate: float | None = None,
                 runtime: dict[str, Any] | None = None) -> dict[str, Any]:
    """Publish `count` mixed messages (at most `rate` a second) through a live gateway; `during` runs (in a
    thread) while they flow and may return a replacement gateway (after killing the first). `runtime`: extra
    gateway.yaml `runtime:` settings (the window, say)."""
    world = prepare(profile, tmp_path, destination, policy, runtime)
    records = mixed(profile.protocol, count)
    expected = world.expected(records, policy)

    async def main() -> tuple[dict[str, Any], int]:
        async with Collector(world) as collector:
            gateway = Gateway(world.config_dir)
            try:
                probes = await wait_until_live(world, collector)
                side = asyncio.create_task(asyncio.to_thread(during, world, gateway)) if during else None
                published = time.monotonic()
                await publish(world, records, rate=rate)
                published_window = (published, time.monotonic())
                if side is not None:
                    gateway = await side or gateway
                await collector.wait_for(expected, timeout)
            finally:
                code = gateway.stop()
            report = account(expected, collector, probes)
            report["recovery_seconds"] = recovery_seconds(world, collector, probes)
            report["fault"] = fault_report(world, collector, probes, published_window)
            report["gateway_exit"] = code
            report["gateway_log_tail"] = gateway.output()[-3000:]
            return report, code
    report, _ = asyncio.run(main())
    return report
