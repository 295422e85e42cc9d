"""NATS JetStream and MQTT 5 end to end: `xgate run` against a raw client pass-through on the same broker.

    python -m bench.broker_e2e [--protocol nats mqtt] [--count 20000] [--rounds 5] [--workers 1 2]

Candidates, each a subprocess of this interpreter, each measured by the same counting subscriber here:
  raw     the protocol's own client without validation (`--forward`, below), with the same guarantee as
          xgate's route: NATS: a pull consumer on a durable of the input stream fetches up to 256 messages,
          publishes each to the output subject and waits for every PubAck of the fetch before acking the
          inputs. MQTT 5: a persistent session subscribed with QoS 1 republishes each message with QoS 1
          and lets paho acknowledge the input once the publish is handed over (aiomqtt acks on arrival: the
          raw path is at-most-once across a crash, so it is the cheaper one).
  xgate   `xgate run --config DIR [--workers N]`: the reference workload's registry (bench/workload.py, 50
          definitions, rewritten for the protocol) routing conformant messages to `valid`, the rest to `dlq`.
Messages are bench.workload records mapped to the protocol as xgate's own re-mapping maps them
(gateway.runtime.remap.outgoing: binary mode as `ce-` headers or user properties), with a `bench-seq`
header naming the record. Every run checks that each record arrived once or more on an output (lost and
duplicated are counted).

Each round preloads N messages where the candidate will find them (NATS: a fresh input stream; MQTT: the
candidate's persistent session, subscribed by a first start of the candidate, then stopped), starts the
candidate, and takes its rate from the first output message to the last: startup (interpreter, compile,
connect) is left out. The candidate's CPU over the same window gives CPU per message. Rounds interleave
candidates in a rotating order; medians and [min-max] over rounds are printed, with xgate/raw beside the
target (>= 0.5 for one process, issue 18).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench import workload
from bench.results import save

ROOT = Path(__file__).resolve().parents[1]
SEQ_HEADER = "bench-seq"
NATS_URL = "nats://127.0.0.1:4222"
MQTT_PORT = 18830  # the project's Mosquitto (deploy/brokers/mosquitto.sh: persistence, large queues)
FETCH = 256
STALL_SECONDS = 30.0
STARTUP_SECONDS = 60.0
TARGET = 0.5
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PROTOCOL = {"nats": "NATS", "mqtt": "MQTT/5.0"}


# -- messages -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Message:
    body: bytes
    headers: list[tuple[str, str]]  # NATS headers or MQTT user properties, `bench-seq` first
    content_type: str | None


def messages(protocol: str, count: int) -> list[Message]:
    from gateway.recorded import envelope_from_record
    from gateway.runtime.remap import outgoing

    out = []
    for seq, record in enumerate(workload.messages(count)):
        envelope = outgoing(envelope_from_record(record), protocol)
        pairs = envelope.fields.get("headers" if protocol == "NATS" else "user_properties") or []
        content_type = envelope.fields.get("content_type") if protocol != "NATS" else None
        out.append(Message(envelope.body, [(SEQ_HEADER, str(seq)), *[(k, str(v)) for k, v in pairs]],
                           content_type))
    return out


def registry_document(protocol: str, endpoints: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The workload registry with its definitions and endpoints moved to `protocol`."""
    document = workload.registry_document()
    for group in document["messagegroups"].values():
        for message in group["messages"].values():
            message["protocol"] = protocol
    source = document["endpoints"][workload.ENDPOINT]
    document["endpoints"] = {
        workload.ENDPOINT: {**source, "protocol": protocol, "protocoloptions": endpoints["in"]},
        "workload.valid": {"usage": ["producer"], "protocol": protocol, "envelope": "CloudEvents/1.0",
                           "protocoloptions": endpoints["valid"]},
        "workload.dlq": {"usage": ["producer"], "protocol": protocol, "envelope": "CloudEvents/1.0",
                         "protocoloptions": endpoints["dlq"]}}
    return document


# -- what each round makes at the broker ----------------------------------------------------------------------


@dataclass
class Names:
    run: str = field(default_factory=lambda: uuid.uuid4().hex[:8])

    def nats(self) -> dict[str, dict[str, Any]]:
        base = {"endpoints": [{"uri": NATS_URL}]}
        return {"in": {**base, "subject": f"bench.{self.run}.in", "stream": f"BENCH_{self.run}_IN".upper()},
                "valid": {**base, "subject": f"bench.{self.run}.out.valid", "stream": f"BENCH_{self.run}_OUT".upper()},
                "dlq": {**base, "subject": f"bench.{self.run}.out.dlq", "stream": f"BENCH_{self.run}_OUT".upper()}}

    def mqtt(self) -> dict[str, dict[str, Any]]:
        base = {"endpoints": [{"uri": f"mqtt://127.0.0.1:{MQTT_PORT}"}], "qos": 1}
        return {"in": {**base, "topic_name": f"bench/{self.run}/in", "clientid": f"bench-{self.run}-xgate"},
                "valid": {**base, "topic_name": f"bench/{self.run}/out/valid"},
                "dlq": {**base, "topic_name": f"bench/{self.run}/out/dlq"}}


async def nats_prepare(names: Names, batch: list[Message]) -> None:
    import nats

    client = await nats.connect(NATS_URL)
    try:
        js = client.jetstream()
        await js.add_stream(name=f"BENCH_{names.run}_IN".upper(), subjects=[f"bench.{names.run}.in"])
        await js.add_stream(name=f"BENCH_{names.run}_OUT".upper(), subjects=[f"bench.{names.run}.out.>"])
        for start in range(0, len(batch), 500):
            await asyncio.gather(*(js.publish(f"bench.{names.run}.in", m.body, headers=dict(m.headers))
                                   for m in batch[start:start + 500]))
    finally:
        await client.close()


async def nats_clean(names: Names) -> None:
    import nats

    client = await nats.connect(NATS_URL)
    try:
        for stream in ("IN", "OUT"):
            with contextlib.suppress(Exception):
                await client.jetstream().delete_stream(f"BENCH_{names.run}_{stream}".upper())
    finally:
        await client.close()


async def mqtt_publish(names: Names, batch: list[Message]) -> None:
    import aiomqtt
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    async with aiomqtt.Client("127.0.0.1", MQTT_PORT, protocol=aiomqtt.ProtocolVersion.V5,
                              max_inflight_messages=1000) as client:
        for start in range(0, len(batch), 500):
            sends = []
            for m in batch[start:start + 500]:
                properties = Properties(PacketTypes.PUBLISH)
                properties.UserProperty = m.headers
                if m.content_type:
                    properties.ContentType = m.content_type
                sends.append(client.publish(f"bench/{names.run}/in", m.body, qos=1, properties=properties))
            await asyncio.gather(*sends)


async def mqtt_until_live(names: Names) -> None:
    """Probe messages (without `bench-seq`) until one comes out: the candidate is subscribed."""
    probes = Count(1)
    probe = Message(b'{"probe": true}', [("bench-probe", "1")], "application/json")
    async with mqtt_counter(names.run, probes):
        deadline = time.monotonic() + STARTUP_SECONDS
        while probes.first is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no candidate forwarded a probe on bench/{names.run}/in")
            await mqtt_publish(names, [probe])
            await asyncio.sleep(0.3)


# -- the raw candidates ---------------------------------------------------------------------------------------


async def forward_nats(run: str) -> None:
    import nats

    stop = _stop_event()
    client = await nats.connect(NATS_URL)
    js = client.jetstream()
    subscription = await js.pull_subscribe(f"bench.{run}.in", durable=f"raw-{run}")
    while not stop.is_set():
        try:
            fetched = await subscription.fetch(FETCH, timeout=0.2)
        except nats.errors.TimeoutError:
            continue
        await asyncio.gather(*(js.publish(f"bench.{run}.out.raw", m.data, headers=m.headers) for m in fetched))
        await asyncio.gather(*(m.ack() for m in fetched))
    await client.close()


async def forward_mqtt(run: str) -> None:
    import aiomqtt
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    stop = _stop_event()
    session = Properties(PacketTypes.CONNECT)
    session.SessionExpiryInterval = 0xFFFFFFFF  # a persistent session: what was queued while away is delivered
    async with aiomqtt.Client("127.0.0.1", MQTT_PORT, identifier=f"bench-{run}-raw", clean_start=False,
                              properties=session, protocol=aiomqtt.ProtocolVersion.V5, max_inflight_messages=1000,
                              max_queued_incoming_messages=10_000) as client:
        await client.subscribe(f"bench/{run}/in", qos=1)
        pending: set[asyncio.Task[Any]] = set()
        messages = client.messages.__aiter__()
        while not stop.is_set():
            try:
                async with asyncio.timeout(0.2):
                    message = await messages.__anext__()
            except TimeoutError:
                continue
            task = asyncio.create_task(client.publish(f"bench/{run}/out/raw", message.payload, qos=1,
                                                      properties=message.properties))
            pending.add(task)
            task.add_done_callback(pending.discard)
            if len(pending) >= 1000:
                await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        await asyncio.gather(*pending)


def _stop_event() -> asyncio.Event:
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    return stop


# -- counting what comes out ----------------------------------------------------------------------------------


@dataclass
class Count:
    expected: int
    seen: dict[int, int] = field(default_factory=dict)
    first: float | None = None
    last: float | None = None

    def add(self, seq: int | None) -> None:
        now = time.perf_counter()
        self.first = self.first if self.first is not None else now
        self.last = now
        if seq is not None:
            self.seen[seq] = self.seen.get(seq, 0) + 1

    @property
    def done(self) -> bool:
        return len(self.seen) >= self.expected


@contextlib.asynccontextmanager
async def nats_counter(run: str, count: Count) -> Any:
    import nats

    client = await nats.connect(NATS_URL, pending_size=256 << 20)

    async def on_message(msg: Any) -> None:
        count.add(int(msg.headers[SEQ_HEADER]) if msg.headers and SEQ_HEADER in msg.headers else None)
    await client.subscribe(f"bench.{run}.out.>", cb=on_message, pending_msgs_limit=1 << 20,
                           pending_bytes_limit=1 << 30)
    try:
        yield
    finally:
        await client.close()


@contextlib.asynccontextmanager
async def mqtt_counter(run: str, count: Count) -> Any:
    import aiomqtt

    async with aiomqtt.Client("127.0.0.1", MQTT_PORT, protocol=aiomqtt.ProtocolVersion.V5,
                              max_queued_incoming_messages=0) as client:
        await client.subscribe(f"bench/{run}/out/#", qos=1)

        async def read() -> None:
            async for message in client.messages:
                pairs = dict(getattr(message.properties, "UserProperty", None) or [])
                count.add(int(pairs[SEQ_HEADER]) if SEQ_HEADER in pairs else None)
        reader = asyncio.create_task(read())
        try:
            yield
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader


# -- one measured run ------------------------------------------------------------------------------------------


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            parts = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(parts[11]) + int(parts[12]) + int(parts[13]) + int(parts[14])  # own and reaped children
    return total / CLOCK_TICKS


def _tree(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children")
    found = [pid]
    with contextlib.suppress(OSError):
        for child in children.read_text().split():
            found += _tree(int(child))
    return found


def spawn(candidate: str, protocol: str, names: Names, folder: Path, workers: int) -> subprocess.Popen[bytes]:
    if candidate == "raw":
        command = [sys.executable, "-m", "bench.broker_e2e", "--forward", protocol, names.run]
    else:
        config = folder / f"config-{names.run}"
        if not config.exists():
            config.mkdir(parents=True)
            endpoints = names.nats() if protocol == "nats" else names.mqtt()
            document = registry_document(PROTOCOL[protocol], endpoints)
            (config / "workload.xreg.json").write_text(json.dumps(document), "utf-8")
            (config / "gateway.yaml").write_text(yaml.safe_dump({"runtime": {"metrics_address": ""}}), "utf-8")
        command = [sys.executable, "-m", "gateway.cli", "run", "--config", str(config), "--no-watch",
                   "--workers", str(workers)]
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=folder.joinpath(
        f"{candidate}-{names.run}.log").open("ab"))


async def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        await asyncio.to_thread(process.wait, 30)
    except subprocess.TimeoutExpired:
        process.kill()
        await asyncio.to_thread(process.wait)


async def measure(protocol: str, candidate: str, batch: list[Message], folder: Path, workers: int) -> dict[str, Any]:
    names = Names()
    count = Count(len(batch))
    counter: Callable[[str, Count], Any] = nats_counter if protocol == "nats" else mqtt_counter
    if protocol == "nats":
        await nats_prepare(names, batch)
    else:  # the candidate's session must exist (and be subscribed) before its messages are published
        first = spawn(candidate, protocol, names, folder, workers)
        try:
            await mqtt_until_live(names)
        finally:
            await stop(first)
        await mqtt_publish(names, batch)
    try:
        async with counter(names.run, count):
            process = spawn(candidate, protocol, names, folder, workers)
            try:
                started_cpu: float | None = None
                last_change, seen = time.monotonic(), 0
                limit = STARTUP_SECONDS
                while not count.done:
                    await asyncio.sleep(0.05)
                    if started_cpu is None and count.first is not None:
                        started_cpu, limit = cpu_seconds(_tree(process.pid)), STALL_SECONDS
                    if len(count.seen) != seen:
                        last_change, seen = time.monotonic(), len(count.seen)
                    elif time.monotonic() - last_change > limit:
                        break
                used = cpu_seconds(_tree(process.pid)) - (started_cpu or 0.0)
            finally:
                await stop(process)
    finally:
        if protocol == "nats":
            await nats_clean(names)
    window = (count.last or 0) - (count.first or 0)
    arrived = len(count.seen)
    return {"candidate": candidate, "arrived": arrived, "lost": len(batch) - arrived,
            "duplicated": sum(n - 1 for n in count.seen.values()),
            "rate": (arrived - 1) / window if window > 0 else 0.0,
            "cpu_us": used / max(arrived, 1) * 1e6}


async def run(protocols: list[str], count: int, rounds: int, workers: list[int]) -> dict[str, Any]:
    candidates = ["raw"] + [f"xgate-w{n}" for n in workers]
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="xgate-bench-brokers-") as tmp:
        folder = Path(tmp)
        for protocol in protocols:
            batch = messages(PROTOCOL[protocol], count)
            runs: dict[str, list[dict[str, Any]]] = {c: [] for c in candidates}
            for number in range(rounds):
                order = candidates[number % len(candidates):] + candidates[:number % len(candidates)]
                for candidate in order:
                    n = int(candidate.split("-w")[1]) if candidate.startswith("xgate") else 1
                    result = await measure(protocol, candidate.split("-")[0], batch, folder, n)
                    runs[candidate].append(result)
                    print(f"  {protocol} round {number + 1} {candidate}: {result['rate']:,.0f} msg/s, "
                          f"{result['cpu_us']:.0f} µs CPU/msg, lost {result['lost']}, dup {result['duplicated']}",
                          file=sys.stderr)
            results[protocol] = summarize(runs)
    return results


def summarize(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    raw_rates = [r["rate"] for r in runs["raw"]]
    for candidate, results in runs.items():
        rates = [r["rate"] for r in results]
        ratios = [x / y for x, y in zip(rates, raw_rates) if y > 0]
        out[candidate] = {"rate_median": statistics.median(rates), "rate_range": [min(rates), max(rates)],
                          "cpu_us_median": statistics.median(r["cpu_us"] for r in results),
                          "ratio_median": statistics.median(ratios) if ratios else 0.0,
                          "ratio_range": [min(ratios), max(ratios)] if ratios else [0.0, 0.0],
                          "lost": sum(r["lost"] for r in results),
                          "duplicated": sum(r["duplicated"] for r in results), "rounds": len(results)}
    return out


def report(results: dict[str, Any], count: int, rounds: int) -> str:
    lines = [f"NATS JetStream / MQTT 5 end to end: {count:,} messages, {rounds} rounds (medians, [min-max])"]
    for protocol, by_candidate in results.items():
        lines.append(f"  {protocol}:")
        for candidate, s in by_candidate.items():
            ratio = "" if candidate == "raw" else (
                f"  x raw {s['ratio_median']:.2f} [{s['ratio_range'][0]:.2f}-{s['ratio_range'][1]:.2f}]"
                + (f" (target >= {TARGET}: {'met' if s['ratio_median'] >= TARGET else 'NOT met'})"
                   if candidate == "xgate-w1" else ""))
            lines.append(f"    {candidate:<9} {s['rate_median']:>9,.0f} msg/s [{s['rate_range'][0]:,.0f}-"
                         f"{s['rate_range'][1]:,.0f}]  {s['cpu_us_median']:>5.0f} µs CPU/msg  lost {s['lost']}  "
                         f"duplicated {s['duplicated']}{ratio}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.broker_e2e", description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", nargs="+", choices=sorted(PROTOCOL), default=["nats", "mqtt"])
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, nargs="+", default=[1], help="xgate candidates: --workers N each")
    parser.add_argument("--forward", nargs=2, metavar=("PROTOCOL", "RUN"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.forward:
        forwarders: dict[str, Callable[[str], Awaitable[None]]] = {"nats": forward_nats, "mqtt": forward_mqtt}
        asyncio.run(forwarders[args.forward[0]](args.forward[1]))
        return 0
    started: list[tuple[list[str], dict[str, str]]] = []  # what this run started, stopped when it ends
    for script in ("nats", "mosquitto"):
        env = {**os.environ, **({"XGATE_MQTT_PORT": str(MQTT_PORT)} if script == "mosquitto" else {})}
        command = ["bash", str(ROOT / "deploy" / "brokers" / f"{script}.sh")]
        running = subprocess.run([*command, "status"], env=env, capture_output=True, check=False).returncode == 0
        subprocess.run([*command, "start"], check=True, env=env)
        if not running:
            started.append((command, env))
    try:
        results = asyncio.run(run(args.protocol, args.count, args.rounds, args.workers))
    finally:
        for command, env in started:
            subprocess.run([*command, "stop"], env=env, check=False)
    print(report(results, args.count, args.rounds))
    save("broker_e2e", {"count": args.count, "rounds": args.rounds, "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
