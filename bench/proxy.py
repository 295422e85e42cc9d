"""`xgate proxy` against producing straight to the broker, with Apache Kafka's own ProducerPerformance.

    python -m bench.proxy [--records 100000] [--rounds 5] [--quick]

Candidates, each a ProducerPerformance run (org.apache.kafka.tools.ProducerPerformance, from the jars
deploy/brokers/kafka.sh resolves) of conformant ~1 KB JSON records, acks=all, batch.size 16384, every other
producer setting at the Java client's default, to a fresh topic of a private Kafka (4 partitions):
  direct  bootstrap.servers = the broker
  relay   bootstrap.servers = bench/relay.py, one asyncio process copying bytes to a second listener of the broker
          that advertises the relay's port: what one more Python process on the path costs without any work
  proxy2  the same with `--workers 2` (two processes sharing the listeners, a supervisor), at max rate only
  proxy   bootstrap.servers = `xgate proxy` in front of it (one process), every record judged: the topic is named
          by a KAFKA endpoint whose one definition is a JSON Schema (no CloudEvents envelope: ProducerPerformance
          sends no headers, and its records are plain JSON bodies from a payload file)
Max rate: `--throughput -1`, the rate ProducerPerformance reports; each candidate's ratio to direct per round.
Half load: all at half the proxy's median max rate for HALF_LOAD_SECONDS, the first WARMUP_SECONDS of it
ProducerPerformance's warm-up (`--warmup-records`, KIP-1052); the added p99 is a candidate's steady-state p99
produce latency (as ProducerPerformance reports it: send to acknowledgement) minus the direct one's, per round.
The tools come from Kafka TOOLS_VERSION (the broker stays on deploy/brokers/kafka.sh's version): 4.1's
ProducerPerformance has no warm-up, and each run is a fresh JVM whose first second (class loading, the first
connections, metadata through the proxy) held the slowest 1% of a 5-second run for every candidate.
CPU per record: the relay's and the proxy's user + system CPU over their max-rate runs, per record, and
over their half-load runs (smaller requests, more of them a record).
Every round runs the candidates back to back, the order rotated (bench/rounds.py); medians with ranges.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from bench.kafka_harness import KAFKA_SCRIPT, Process, broker
from bench.results import save
from bench.rounds import rotated, summary
from gateway.ports import ephemeral_port, port_is_free
from gateway.proxy.upstream import answers

SCHEMA = {"type": "object", "required": ["seq", "reading", "pad"],
          "properties": {"seq": {"type": "integer", "minimum": 0}, "reading": {"type": "number"},
                         "unit": {"enum": ["C", "F"]}, "pad": {"type": "string"}}}
TARGET_RATE = 0.5
TOOLS_VERSION = "4.2.2"  # the first ProducerPerformance with --warmup-records is 4.2's
HALF_LOAD_SECONDS, WARMUP_SECONDS = 15, 5
TARGET_P99_MS = 5.0
NODE_ID = 1  # deploy/brokers/kafka.sh's node.id
# the whole run's summary line and, after a warm-up, the steady state's ("N steady state records sent, ...")
_SUMMARY = re.compile(r"^(\d+) (steady state )?records sent, ([0-9.]+) records/sec .*?([0-9.]+) ms avg latency, "
                      r"([0-9.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th",
                      re.MULTILINE)


def payload_file(folder: Path) -> Path:
    """100 distinct conformant bodies of about 1 KB, one a line (ProducerPerformance picks one per record)."""
    lines = []
    for seq in range(100):
        body = {"seq": seq, "reading": 20.5 + seq / 10, "unit": "C", "pad": ""}
        body["pad"] = "x" * (1024 - len(json.dumps(body)))
        lines.append(json.dumps(body))
    path = folder / "payloads.txt"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


def proxy_port() -> int:
    """A bootstrap port whose broker listener (port + 1 + node id: port-per-broker) is free too."""
    port = ephemeral_port()
    while not port_is_free(port + 1 + NODE_ID):
        port = ephemeral_port()
    return port


def proxy_config(folder: Path, upstream: str, port: int, topics: list[str]) -> Path:
    config = folder / "config"
    config.mkdir(parents=True)
    document = {"endpoints": {"perf": {
        "usage": ["producer"], "protocol": "KAFKA",
        "protocoloptions": {"endpoints": [{"uri": f"tcp://{upstream}"}], "topics": topics},
        "messages": {"reading": {"dataschemaformat": "JsonSchema/draft-07", "dataschema": SCHEMA}}}}}
    (config / "perf.xreg.json").write_text(json.dumps(document), "utf-8")
    (config / "gateway.yaml").write_text(yaml.safe_dump({"proxy": {"upstream": upstream,
                                                                   "listen": f"127.0.0.1:{port}"}}), "utf-8")
    return config


def tools_classpath() -> str:
    """Kafka's jars at TOOLS_VERSION, resolved by the broker script into their own cache beside the broker's."""
    done = subprocess.run(["bash", str(KAFKA_SCRIPT), "libs"], check=True, capture_output=True, text=True,
                          env={**os.environ, "XGATE_KAFKA_VERSION": TOOLS_VERSION})
    return f"{done.stdout.strip().splitlines()[-1]}/*"


def producer_performance(classpath: str, bootstrap: str, topic: str, records: int, payloads: Path,
                         throughput: float, warmup: int = 0) -> dict[str, float]:
    """One ProducerPerformance run; with `warmup`, its figures are the steady state's (all records still counted
    as sent)."""
    java = f"{os.environ['JAVA_HOME']}/bin/java" if os.environ.get("JAVA_HOME") else "java"
    done = subprocess.run(
        [java, "-Xmx512m", "-cp", classpath, "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
         "--num-records", str(records), "--throughput", str(int(throughput)), "--payload-file", str(payloads),
         *(["--warmup-records", str(warmup)] if warmup else []),
         "--producer-props", f"bootstrap.servers={bootstrap}", "acks=all", "batch.size=16384"],
        check=False, capture_output=True, text=True, timeout=600)
    # the whole run's line (steady False) counts the records sent; the figures are the steady state's if warmed up
    found = {bool(steady): (int(sent), figures) for sent, steady, *figures in _SUMMARY.findall(done.stdout)}
    figures = found.get(bool(warmup), (0, None))[1]
    print(f"bench.proxy: {bootstrap} {topic}: {figures or done.stdout[-300:]}", file=sys.stderr, flush=True)
    if done.returncode or not figures or "ERROR" in done.stderr:
        raise RuntimeError(f"ProducerPerformance to {bootstrap} failed ({done.returncode}):\n"
                           f"{done.stdout[-1500:]}\n{done.stderr[-1500:]}")
    sent = found.get(False, (0, None))[0]
    if sent != records:
        raise RuntimeError(f"ProducerPerformance sent {sent} of {records} records")
    rate, average, _, _, _, p99, _ = figures
    return {"sent": float(records), "rate": float(rate), "avg_ms": float(average), "p99_ms": float(p99)}


# the private broker's second listener, RELAYED, advertises the relay's port: a client bootstrapped there stays on it
RELAYED = ("listeners=PLAINTEXT://127.0.0.1:{{port}},RELAYED://127.0.0.1:{relayed},CONTROLLER://127.0.0.1:{{controller}}\n"
           "advertised.listeners=PLAINTEXT://127.0.0.1:{{port}},RELAYED://127.0.0.1:{relay}\n"
           "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,RELAYED:PLAINTEXT\n")
CANDIDATES = ("direct", "relay", "proxy", "proxy2")  # at max rate
AT_HALF_LOAD = ("direct", "relay", "proxy")


async def measure(records: int, rounds: int) -> dict[str, Any]:
    classpath = await asyncio.to_thread(tools_classpath)
    relayed, relay_port = ephemeral_port(), ephemeral_port()
    async with broker("private", 4, RELAYED.format(relayed=relayed, relay=relay_port)) as kafka:
        with tempfile.TemporaryDirectory(prefix="xgate-bench-proxy-") as work:
            folder = Path(work)
            payloads = payload_file(folder)
            # a fresh topic a run: a warm-up run each, then each candidate at max rate and at half load a round
            count = len(CANDIDATES) * (1 + rounds) + len(AT_HALF_LOAD) * rounds
            topics = await kafka.create(*[f"r{i}" for i in range(count)])
            ports = {name: proxy_port() for name in ("proxy", "proxy2")}
            metrics = {name: f"127.0.0.1:{ephemeral_port()}" for name in ports}
            processes = {name: Process(name, [
                sys.executable, "-m", "gateway.cli", "proxy",
                "--config", str(proxy_config(folder / name, kafka.bootstrap, ports[name], topics)),
                "--metrics-address", metrics[name], "--log-level", "warning", "--no-watch",
                *(["--workers", "2"] if name == "proxy2" else [])], folder / f"{name}.log") for name in ports}
            processes["relay"] = Process("relay", [sys.executable, "-m", "bench.relay", str(relay_port),
                                                   f"127.0.0.1:{relayed}"], folder / "relay.log")
            bootstrap = {"direct": kafka.bootstrap, "relay": f"127.0.0.1:{relay_port}",
                         **{name: f"127.0.0.1:{port}" for name, port in ports.items()}}
            try:
                for name, process in processes.items():
                    host, _, number = bootstrap[name].rpartition(":")
                    while not await answers(host, int(number)):
                        process.check()
                        await asyncio.sleep(0.2)
                result = await asyncio.to_thread(_rounds, classpath, bootstrap, processes, iter(topics), records,
                                                 rounds, payloads)
                # a guard on the measurement itself: every record through a proxy was judged, and conformed
                for name in ports:
                    result["judged"][name] = judged(metrics[name])
                    if result["judged"][name] != {"conformant": result["proxied"][name]}:
                        raise RuntimeError(f"{name} judged {result['judged'][name]}, {result['proxied'][name]} "
                                           "records went through it, all conformant")
                return result
            finally:
                for process in processes.values():
                    process.stop()
                await kafka.clean()


def _rounds(classpath: str, bootstrap: dict[str, str], processes: dict[str, Process], spare: Any, records: int,
            rounds: int, payloads: Path) -> dict[str, Any]:
    # one unmeasured run each: the JVM's and the proxy's first connections, the broker's first segments
    warm = min(records, 20_000)
    for name in CANDIDATES:
        producer_performance(classpath, bootstrap[name], next(spare), warm, payloads, -1)
    top: dict[str, list[dict[str, float]]] = {name: [] for name in CANDIDATES}
    cpu: dict[str, list[float]] = {name: [] for name in processes}
    for index in range(rounds):
        for name in rotated(CANDIDATES, index):
            process = processes.get(name)
            before = process.cpu_seconds() if process else 0.0
            top[name].append(producer_performance(classpath, bootstrap[name], next(spare), records, payloads, -1))
            if process:
                cpu[name].append((process.cpu_seconds() - before) / records * 1e6)
    half = summary([r["rate"] for r in top["proxy"]])["median"] * 0.5
    loaded: dict[str, list[dict[str, float]]] = {name: [] for name in AT_HALF_LOAD}
    count, warmup = (max(int(half * seconds), 1_000 * seconds) for seconds in (HALF_LOAD_SECONDS, WARMUP_SECONDS))
    loaded_cpu: dict[str, list[float]] = {name: [] for name in AT_HALF_LOAD if name in processes}
    for index in range(rounds):
        for name in rotated(AT_HALF_LOAD, index):
            process = processes.get(name)
            before = process.cpu_seconds() if process else 0.0
            loaded[name].append(producer_performance(classpath, bootstrap[name], next(spare), count, payloads, half,
                                                     warmup))
            if process:
                loaded_cpu[name].append((process.cpu_seconds() - before) / count * 1e6)

    def over_direct(name: str) -> dict[str, Any]:
        found = {"ratio": summary([c["rate"] / d["rate"] for c, d in zip(top[name], top["direct"], strict=True)])}
        if name in loaded:
            found["added_p99_ms"] = summary([c["p99_ms"] - d["p99_ms"]
                                             for c, d in zip(loaded[name], loaded["direct"], strict=True)])
        return found
    return {"records": records, "rounds": rounds, "half_load_rate": half, "judged": {},
            "proxied": {name: warm + sum(int(r["sent"]) for r in [*top[name], *loaded.get(name, [])])
                        for name in ("proxy", "proxy2")},
            "rate": {name: summary([r["rate"] for r in runs]) for name, runs in top.items()},
            "p99_ms": {name: summary([r["p99_ms"] for r in runs]) for name, runs in loaded.items()},
            **{name: over_direct(name) for name in ("relay", "proxy", "proxy2")},
            "cpu_us_per_record": {name: summary(values) for name, values in cpu.items()},
            "cpu_us_per_record_half_load": {name: summary(values) for name, values in loaded_cpu.items()}}


def judged(metrics: str) -> dict[str, int]:
    """xgate_messages_total by verdict, from the proxy's /metrics."""
    with urllib.request.urlopen(f"http://{metrics}/metrics", timeout=10) as response:
        text = response.read().decode()
    found: dict[str, int] = {}
    for verdict, value in re.findall(r'^xgate_messages_total\{[^}]*verdict="([a-z]+)"[^}]*\} ([0-9.e+]+)$', text,
                                     re.MULTILINE):
        found[verdict] = found.get(verdict, 0) + int(float(value))
    return {verdict: count for verdict, count in found.items() if count}  # a verdict's child exists from the start


def render(result: dict[str, Any]) -> str:
    def span(figure: dict[str, float], digits: int = 2) -> str:
        return f"{figure['median']:.{digits}f} [{figure['min']:.{digits}f}-{figure['max']:.{digits}f}]"

    def added(figure: dict[str, float]) -> str:
        return f"{figure['median']:+.1f} ms [{figure['min']:+.1f} to {figure['max']:+.1f}]"

    proxy, relay, proxy2 = result["proxy"], result["relay"], result["proxy2"]
    met = "met" if proxy["ratio"]["median"] >= TARGET_RATE else "NOT met"
    met_p99 = "met" if proxy["added_p99_ms"]["median"] <= TARGET_P99_MS else "NOT met"
    rate, p99, cpu = result["rate"], result["p99_ms"], result["cpu_us_per_record"]
    lines = [
        (f"xgate proxy (ProducerPerformance, acks=all, ~1 KB conformant JSON records, {result['records']} a run, "
         f"{result['rounds']} rounds; medians [range]; relay: bytes copied by one asyncio process, no judging)"),
        (f"  max rate, records/s   direct {span(rate['direct'], 0)}   relay {span(rate['relay'], 0)}   "
         f"proxy {span(rate['proxy'], 0)}   proxy --workers 2 {span(rate['proxy2'], 0)}"),
        (f"  x direct              relay {span(relay['ratio'])}   proxy {span(proxy['ratio'])}   "
         f"target >= {TARGET_RATE}: {met}   proxy --workers 2 {span(proxy2['ratio'])}"),
        (f"  p99 at {result['half_load_rate']:.0f}/s (ms, steady state)  direct {span(p99['direct'], 0)}   "
         f"relay {span(p99['relay'], 0)}   proxy {span(p99['proxy'], 0)}"),
        (f"  added p99             relay {added(relay['added_p99_ms'])}   proxy {added(proxy['added_p99_ms'])}   "
         f"target <= {TARGET_P99_MS:.0f} ms: {met_p99}"),
        (f"  CPU per record (us)   relay {span(cpu['relay'], 1)}   proxy {span(cpu['proxy'], 1)}   "
         f"proxy --workers 2 {span(cpu['proxy2'], 1)} (supervisor and workers)"),
    ]
    if result.get("cpu_us_per_record_half_load"):  # paced: smaller requests, more of them a record
        loaded = result["cpu_us_per_record_half_load"]
        lines.append(f"  CPU per record at half load (us)   relay {span(loaded['relay'], 1)}   "
                     f"proxy {span(loaded['proxy'], 1)}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000, help="records a max-rate run")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="small counts, for trying the bench")
    args = parser.parse_args()
    records, rounds = (20_000, 2) if args.quick else (args.records, args.rounds)
    result = asyncio.run(measure(records, rounds))
    save("proxy", result)
    print(render(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

