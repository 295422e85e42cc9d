"""Soak: `xgate run` for half an hour at half its maximum rate, with a fault every five minutes.

    python -m bench.soak [--minutes 30] [--fault-every 300] [--preload 20000] [--rate MSGS_PER_S]
    make soak

Not a CI test (it takes the whole --minutes, plus a minute or two around it); the one figure that fails it is
a lost message (exit 1).

Brokers: two private nats-server JetStream instances on free ports (deploy/brokers/nats.sh with
XGATE_NATS_PORT), their stores under a temporary XGATE_BROKER_STATE that is removed at the end: the source
endpoint `in` on one, the destinations `valid`, `dlq` and `unknown` on the other, so the faults never touch
the shared brokers. Both are stopped at the end, on Ctrl-C and on errors too. The registry and gateway.yaml
are the integration tests' (tests/integration/harness.py `prepare`: route in -> valid / dlq / unknown,
policy forward, drain_timeout 30, everything else at its default), and so is the way the gateway is started
(harness.Gateway: `python -m gateway.cli run --config DIR --summary 2 --metrics-address ...`).

Traffic: tests/integration/traffic.py messages, 80% conformant (binary and structured mode in turn), 20%
nonconformant, unknown or malformed; each carries the headers `bench-seq` (its number) and `bench-sent` (Unix
time of the publish attempt that succeeded), which the gateway forwards and dead-letters unchanged. This
process publishes with xgate's own NATS sink (awaits the PubAck) and reads the three destinations with xgate's
own NATS source (acking each message).

Max rate: --preload messages are published before the gateway starts; from the first message stored in a
destination stream until all are stored, the destination streams' message counts (asked of the broker, so
this process's reader cannot cap the figure) give the drain rate. The soak then publishes at half of it
(--rate overrides) on a fixed schedule: a producer held up by a source outage catches up afterwards, as an
upstream with a buffer would.

Faults, one every --fault-every seconds, in this order and cycling: destination broker restart, source broker
restart, gateway SIGKILL and a new gateway, destination broker down for 30 s, gateway SIGTERM (it drains)
and a new gateway. A fault lasts from its first action until its last one returned (broker port open again,
new gateway process spawned).

Accounting, per sequence number: sent (the source broker's PubAck came), delivered (arrived at a destination),
duplicated (arrived again as another message of a destination stream: the gateway published it twice; the
reader being handed the same stream message again, after an ack lost in a destination outage, is the
reader's redelivery and counted apart), lost (sent, never arrived), misrouted (first copy at another
destination than `Ruleset.classify` picks for its kind). A publish retried after a failure that may have
stored it (a PubAck timeout, say) can put a message twice into the source stream: those retries are counted
as uncertain, and duplicates of such messages are not the gateway's.

Samples every 5 s: the gateway's RSS (VmRSS of whichever gateway process is current), p50/p99 end-to-end
latency of the messages that arrived in the window (arrival here minus `bench-sent`, first copies only, so
it includes both brokers), arrivals and sends per second, xgate_inflight_messages, CPU of the gateway and of
this process. Per fault: recovery (fault end -> the first delivery after it), drained (fault end -> the last
message sent before the fault end has arrived: its backlog is through), duplicates among the messages that
arrived meanwhile, and latency from the fault's start until drained against the fault-free stretch before it.

Writes bench/results/soak.json, bench/results/soak.png (RSS, latency and rates over time, faults marked) and
bench/results/soak-gateway.log (the output of every gateway of the run).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nats
import numpy as np

from bench.results import RESULTS, save
from bench.soak_figures import (
    FAULTS,
    KINDS,
    OUTAGE_SECONDS,
    SAMPLE_SECONDS,
    Ledger,
    analyse,
    kind_index,
    plot,
    render,
)
from gateway.compiler import compile_registry
from gateway.envelope import Envelope
from gateway.errors import AdapterError
from gateway.loader import load_snapshot
from gateway.recorded import envelope_from_record
from gateway.runtime.router import kind_of
from protocol_adapters import registry as adapters
from protocol_adapters.base import SinkAdapter
from tests.conftest import free_port
from tests.integration.harness import (
    DESTINATION_OF,
    Gateway,
    Profile,
    World,
    prepare,
    restart_broker,
    rss_bytes,
    start_broker,
    stop_broker,
)
from tests.integration.profiles import private_nats
from tests.integration.traffic import message

SEND_INFLIGHT = 500  # publishes awaiting their PubAck at once (harness.publish uses 200; the soak rate is higher)
RETRY_SECONDS = 0.2  # between publish attempts while the source broker is away, as harness._send
STALL_SECONDS = 60.0  # stop waiting for the rest after this long without a new arrival
DRAIN_LIMIT = 600.0  # and after this long in any case
SIGTERM_WAIT = 60.0  # drain_timeout is 30 s
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
DESTINATIONS = ("valid", "dlq", "unknown")


def envelope(seq: int, sent: float) -> Envelope:
    """Message `seq` as the source sink publishes it, numbered and stamped with its send time."""
    out = envelope_from_record(message("NATS", seq, KINDS[int(kind_index(seq))]))
    out.fields["headers"] = [*out.fields["headers"], ("bench-seq", str(seq)), ("bench-sent", f"{sent:.6f}")]
    return out


def expected_destinations(world: World) -> np.ndarray:
    """Destination index (into DESTINATIONS) per kind, as the gateway's own compiler judges each kind."""
    snapshot = load_snapshot([world.config_dir])
    ruleset = compile_registry(snapshot.registry)
    where = np.full(len(KINDS), -1, np.int8)
    for seq in range(10 * len(KINDS)):  # every kind comes up within these
        verdict = ruleset.classify(envelope(seq, 0.0))
        where[int(kind_index(seq))] = DESTINATIONS.index(DESTINATION_OF[kind_of(verdict).value])
    assert (where >= 0).all(), where
    return where


# -- what was sent and what arrived ---------------------------------------------------------------------------


async def publish(sink: SinkAdapter, ledger: Ledger, seq: int) -> None:
    """One message, attempted until the source broker took it (each attempt stamped with its own time)."""
    while True:
        now = time.time()
        try:
            await sink.send(envelope(seq, now))
        except AdapterError as exc:
            if not exc.retriable:
                ledger.refused += 1
                return
            if "not connected" not in str(exc):  # the sink fails fast while reconnecting; anything else may be stored
                ledger.uncertain[seq] = True
            await asyncio.sleep(RETRY_SECONDS)
            continue
        ledger.sent_at[seq] = now
        return


async def produce(sink: SinkAdapter, ledger: Ledger, first: int, count: int, rate: float | None) -> None:
    """Publish [first, first + count): on a fixed schedule at `rate` a second, or as fast as the window allows."""
    slots = asyncio.Semaphore(SEND_INFLIGHT)
    tasks: set[asyncio.Task[None]] = set()

    async def one(seq: int) -> None:
        try:
            await publish(sink, ledger, seq)
        finally:
            slots.release()

    started = time.time()
    for offset in range(count):
        if rate is not None:
            ahead = started + offset / rate - time.time()
            if ahead > 0.005:  # sleep in steps of a few ms, not once a message
                await asyncio.sleep(ahead)
        await slots.acquire()
        task = asyncio.create_task(one(first + offset))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        ledger.window_sent += 1
    await asyncio.gather(*tasks)


async def read(world: World, ledger: Ledger, index: int) -> None:
    """One destination, acknowledged message by message; opened again should its source give up."""
    while True:
        try:
            async with adapters.create_source(world.config(DESTINATIONS[index])) as source:
                async for received in source:
                    stored = received.ack.metadata.timestamp.timestamp()  # the nats-py Msg: JetStream's own
                    ledger.arrive(index, received, stored, time.time())
                    await source.ack(received)
        except AdapterError as exc:
            ledger.reader_errors.append(f"{time.time():.1f} {DESTINATIONS[index]}: {exc}")
        await asyncio.sleep(1.0)


async def wait_arrived(ledger: Ledger, first: int, end: int, limit: float) -> int:
    """Until everything sent in [first, end) arrived, nothing arrived for STALL_SECONDS, or `limit`; the missing."""
    deadline, last, seen = time.time() + limit, time.time(), len(ledger.arrivals)
    while (missing := ledger.missing(first, end)) and time.time() < deadline and time.time() - last < STALL_SECONDS:
        await asyncio.sleep(0.5)
        if len(ledger.arrivals) != seen:
            last, seen = time.time(), len(ledger.arrivals)
    return missing


# -- the gateway, its rate, and the faults --------------------------------------------------------------------


class Gateways:
    """The gateway running now (faults replace it) and how the earlier ones ended."""

    def __init__(self, config_dir: Path) -> None:
        self.config_dir = config_dir
        self.current: Gateway | None = None
        self.started = 0

    def start(self) -> Gateway:
        self.current = Gateway(self.config_dir)
        self.started += 1
        return self.current

    def stop(self, timeout: float = SIGTERM_WAIT) -> int | None:
        """SIGTERM and wait for the drain; a gateway still there after `timeout` is killed (None)."""
        gateway = self.current
        if gateway is None:
            return None
        try:
            return gateway.stop(timeout)  # still `current` meanwhile: its RSS is sampled while it drains
        except Exception:
            gateway.kill()
            return None
        finally:
            self.current = None


async def measure_max_rate(world: World, gateways: Gateways, port: int, preload: int) -> dict[str, Any]:
    """Start the gateway on `preload` waiting messages; its drain rate as the destination broker counts it."""
    streams = [world.config(name).options["stream"] for name in DESTINATIONS]
    client = await nats.connect(f"nats://127.0.0.1:{port}")
    try:
        js = client.jetstream()
        spawned = now = last = time.time()
        gateways.start()
        first: tuple[float, int] | None = None
        count = 0
        while count < preload:
            await asyncio.sleep(0.1)
            now = time.time()
            stored = sum([(await js.stream_info(stream)).state.messages for stream in streams])
            if stored > count:
                count, last = stored, now
                first = first or (now, count)
            if now - last > STALL_SECONDS:
                raise RuntimeError(f"the gateway stalled at {count} of {preload} preloaded messages")
    finally:
        await client.close()
    assert first is not None
    return {"preload": preload, "first_delivery_after_start_s": round(first[0] - spawned, 2),
            "drain_s": round(now - first[0], 2), "max_rate": round((count - first[1]) / (now - first[0]), 1)}


@dataclasses.dataclass
class Brokers:
    source: dict[str, str]  # the broker script's environment for each
    destination: dict[str, str]

    def pids(self) -> list[int]:
        """The nats-servers running now, from the pid files deploy/brokers/nats.sh keeps."""
        pids = []
        for env in (self.source, self.destination):
            path = Path(env["XGATE_BROKER_STATE"]) / "nats" / f"nats-{env['XGATE_NATS_PORT']}.pid"
            with contextlib.suppress(OSError, ValueError):
                pids.append(int(path.read_text()))
        return pids


def inject(kind: int, gateways: Gateways, brokers: Brokers) -> dict[str, Any]:
    """Run one fault from start to end (blocking: called in a thread); what it found besides its times."""
    detail: dict[str, Any] = {}
    if kind == 0:
        restart_broker("nats", brokers.destination)
    elif kind == 1:
        restart_broker("nats", brokers.source)
    elif kind == 2:
        assert gateways.current is not None
        gateways.current.kill()
        detail["killed_pid"] = gateways.current.process.pid
        gateways.start()
    elif kind == 3:
        stop_broker("nats", brokers.destination)
        time.sleep(OUTAGE_SECONDS)
        start_broker("nats", brokers.destination)
    else:
        began = time.time()
        detail["exit_code"] = gateways.stop()
        detail["drain_s"] = round(time.time() - began, 2)
        gateways.start()
    return detail


async def faults(gateways: Gateways, brokers: Brokers, started: float, end: float, every: float) -> list[dict[str, Any]]:
    done: list[dict[str, Any]] = []
    while (at := started + every * (len(done) + 1)) < end:
        await asyncio.sleep(max(0.0, at - time.time()))
        kind = len(done) % len(FAULTS)
        print(f"  {at - started:7.1f} s  fault {len(done) + 1}: {FAULTS[kind]}", flush=True)
        began = time.time()
        detail = await asyncio.to_thread(inject, kind, gateways, brokers)
        done.append({"kind": kind, "name": FAULTS[kind], "start": began, "end": time.time(), **detail})
    return done


# -- sampling -------------------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rpartition(")")[2].split()  # after the command name: `state` first
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def metric_sum(text: str, name: str) -> float:
    pattern = re.compile(rf"^{name}(?:{{[^}}]*}})? ([0-9.e+-]+)$", re.MULTILINE)
    return sum(float(value) for value in pattern.findall(text))


async def scrape(gateway: Gateway | None) -> str | None:
    if gateway is None:
        return None
    with contextlib.suppress(OSError):
        status, text = await asyncio.to_thread(gateway.scrape)
        return text if status == 200 else None
    return None


class CpuMeter:
    """CPU used per window by processes that come and go (a restarted gateway or broker is a new pid)."""

    def __init__(self) -> None:
        self.last: dict[str, tuple[int, float]] = {}

    def percent(self, name: str, pid: int) -> float | None:
        try:
            cpu = cpu_seconds(pid)
        except OSError:
            return None
        before = self.last.get(name)
        self.last[name] = (pid, cpu)
        return round(100 * (cpu - (before[1] if before and before[0] == pid else 0.0)) / SAMPLE_SECONDS, 1)


def machine_busy() -> float:
    """Busy CPU seconds of the whole machine, every core, from /proc/stat."""
    with open("/proc/stat", encoding="ascii") as stat:
        ticks = [int(value) for value in stat.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / CLOCK_TICKS  # all but idle and iowait


async def sample(ledger: Ledger, gateways: Gateways, brokers: Brokers, started: float,
                 samples: list[dict[str, Any]]) -> None:
    """Every SAMPLE_SECONDS until cancelled: one row per window, appended to `samples`. CPU in % of one core;
    `machine_cpu_pct` (all cores) against the others shows when something outside the run took the machine."""
    meter, machine = CpuMeter(), machine_busy()
    meter.percent("bench", os.getpid())
    while True:
        await asyncio.sleep(max(0.0, started + SAMPLE_SECONDS * (len(samples) + 1) - time.time()))
        window, ledger.window = ledger.window, []
        sent, ledger.window_sent = ledger.window_sent, 0
        gateway = gateways.current
        # latency and delivered rate per window come from the ledger afterwards (by store time, see Ledger)
        row: dict[str, Any] = {"t": round(SAMPLE_SECONDS * (len(samples) + 1), 2), "sent_per_s": sent / SAMPLE_SECONDS,
                               "rss_mib": None, "gateway_cpu_pct": None, "inflight": None, "gateway_pid": None,
                               "reader_lag_p99_ms": round(float(np.percentile(window, 99)) * 1000, 1) if window else None}
        if gateway is not None:
            pid = row["gateway_pid"] = gateway.process.pid
            with contextlib.suppress(OSError, AssertionError):  # between a kill and its replacement
                row["rss_mib"] = round(rss_bytes(pid) / 2**20, 1)
            row["gateway_cpu_pct"] = meter.percent("gateway", pid)
            if (text := await scrape(gateway)) is not None:
                row["inflight"] = metric_sum(text, "xgate_inflight_messages")
        row["bench_cpu_pct"] = meter.percent("bench", os.getpid())
        row["nats_cpu_pct"] = sum(filter(None, (meter.percent(f"nats{i}", pid) for i, pid in enumerate(brokers.pids()))))
        busy = machine_busy()
        row["machine_cpu_pct"], machine = round(100 * (busy - machine) / SAMPLE_SECONDS, 1), busy
        samples.append(row)


# -- the run --------------------------------------------------------------------------------------------------


async def soak(world: World, gateways: Gateways, brokers: Brokers, args: argparse.Namespace) -> dict[str, Any]:
    ledger = Ledger(args.preload)
    readers = [asyncio.create_task(read(world, ledger, index)) for index in range(len(DESTINATIONS))]
    try:
        async with adapters.create_sink(world.config("in")) as sink:
            began = time.time()
            await produce(sink, ledger, 0, args.preload, None)
            print(f"preloaded {args.preload} messages in {time.time() - began:.1f} s", flush=True)
            port = int(brokers.destination["XGATE_NATS_PORT"])
            measured = await measure_max_rate(world, gateways, port, args.preload)
            rate = args.rate or measured["max_rate"] / 2
            print(f"max rate {measured['max_rate']:.0f} msg/s (first delivery {measured['first_delivery_after_start_s']}"
                  f" s after start, {args.preload} drained in {measured['drain_s']} s); soak rate {rate:.0f} msg/s",
                  flush=True)
            if missing := await wait_arrived(ledger, 0, args.preload, DRAIN_LIMIT):
                print(f"warning: {missing} preloaded messages have not arrived; going on", flush=True)
            seconds = args.minutes * 60
            count = int(rate * seconds)
            ledger.grow(args.preload + count)
            samples: list[dict[str, Any]] = []
            ledger.window_sent = 0
            started = time.time()
            sampler = asyncio.create_task(sample(ledger, gateways, brokers, started, samples))
            injector = asyncio.create_task(faults(gateways, brokers, started, started + seconds, args.fault_every))
            await produce(sink, ledger, args.preload, count, rate)
            produced = time.time()
            done = await injector
            print(f"  {produced - started:7.1f} s  sending done; waiting for the rest", flush=True)
            missing = await wait_arrived(ledger, 0, ledger.capacity, DRAIN_LIMIT)
            drained = time.time()
            sampler.cancel()
            final = await scrape(gateways.current)
            exit_code = gateways.stop()
    finally:
        for task in readers:
            task.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
    return analyse(ledger, samples, done, {
        "minutes": args.minutes, "fault_every_s": args.fault_every, "rate": round(rate, 1), **measured,
        "soak_start": started, "expected": args.expected, "sending_done_s": round(produced - started, 1), "end_s": round(drained - started, 1),
        "still_missing_at_end": missing, "gateways_started": gateways.started, "last_gateway_exit": exit_code,
        "final_gateway_metrics": None if final is None else {
            name: metric_sum(final, name) for name in ("xgate_adapter_reconnects_total",
                                                       "xgate_delivery_failures_total", "xgate_inflight_messages")},
        "reader_errors": ledger.reader_errors[-20:]})


def private_broker(state: Path) -> Profile:
    """A NATS JetStream server of the run's own, its store under `state` (removed afterwards)."""
    profile = private_nats(free_port())
    return dataclasses.replace(profile, broker_env={**profile.broker_env, "XGATE_BROKER_STATE": str(state)})


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="xgate-soak-"))
    source, destination = private_broker(work / "brokers"), private_broker(work / "brokers")
    while destination.broker_env["XGATE_NATS_PORT"] == source.broker_env["XGATE_NATS_PORT"]:
        destination = private_broker(work / "brokers")
    brokers = Brokers(source.broker_env, destination.broker_env)
    gateways: Gateways | None = None
    try:
        world = prepare(source, work, destination)  # config/ (registry + gateway.yaml); starts both brokers
        gateways = Gateways(world.config_dir)
        args.expected = expected_destinations(world)
        return asyncio.run(soak(world, gateways, brokers, args))
    finally:
        if gateways is not None and gateways.current is not None:
            gateways.current.kill()  # interrupted: nothing to drain for
        for env in (brokers.source, brokers.destination):
            with contextlib.suppress(Exception):
                stop_broker("nats", env)
        RESULTS.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            shutil.copyfile(work / "gateway.log", RESULTS / "soak-gateway.log")
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description="soak: xgate run at half its max rate with a fault every few minutes")
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--fault-every", type=float, default=300.0, help="seconds between faults")
    parser.add_argument("--preload", type=int, default=20000, help="messages for measuring the max rate")
    parser.add_argument("--rate", type=float, default=None, help="messages a second (default: half the max rate)")
    args = parser.parse_args()
    # Ctrl-C and SIGTERM stop the gateway and both brokers (run's finally), even when started in the background
    # (where SIGINT comes ignored)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.default_int_handler)
    try:
        result = run(args)
    except KeyboardInterrupt:
        print("interrupted: gateway and brokers stopped, nothing written", file=sys.stderr)
        return 130
    save("soak", result)
    plot(result, RESULTS / "soak.png")
    print(render(result))
    print(f"written: {RESULTS / 'soak.json'}, {RESULTS / 'soak.png'}, {RESULTS / 'soak-gateway.log'}")
    return 0 if result["messages"]["lost"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
