"""`xgate proxy` against producing straight to the broker, with Apache Kafka's own ProducerPerformance.

    python -m bench.proxy [--records 100000] [--rounds 5] [--quick]

Candidates, each a ProducerPerformance run (org.apache.kafka.tools.ProducerPerformance, from the jars
deploy/brokers/kafka.sh resolves) of conformant ~1 KB JSON records, acks=all, batch.size 16384, every other
producer setting at the Java client's default, to a fresh topic of a private Kafka (4 partitions):
  direct  bootstrap.servers = the broker
  proxy   bootstrap.servers = `xgate proxy` in front of it (one process), every record judged: the topic is named
          by a KAFKA endpoint whose one definition is a JSON Schema (no CloudEvents envelope: ProducerPerformance
          sends no headers, and its records are plain JSON bodies from a payload file)
Max rate: `--throughput -1`, the rate ProducerPerformance reports; the ratio proxy / direct per round.
Half load: both at half the proxy's median max rate; the added p99 is the proxy's p99 produce latency (as
ProducerPerformance reports it: send to acknowledgement) minus the direct one's, per round.
CPU per record: the proxy process's user + system CPU over its max-rate runs, per record.
Every round runs both candidates back to back, the order rotated (bench/rounds.py); medians with ranges.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from bench.kafka_harness import KAFKA_SCRIPT, Broker, Process, broker, free_port
from bench.results import save
from bench.rounds import rotated, summary
from gateway.proxy.upstream import answers

SCHEMA = {"type": "object", "required": ["seq", "reading", "pad"],
          "properties": {"seq": {"type": "integer", "minimum": 0}, "reading": {"type": "number"},
                         "unit": {"enum": ["C", "F"]}, "pad": {"type": "string"}}}
TARGET_RATE = 0.5
TARGET_P99_MS = 5.0
NODE_ID = 1  # deploy/brokers/kafka.sh's node.id
_SUMMARY = re.compile(r"(\d+) records sent, ([0-9.]+) records/sec .*?([0-9.]+) ms avg latency, ([0-9.]+) ms max "
                      r"latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th")


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


def proxy_config(folder: Path, upstream: str, port: int, topics: list[str]) -> Path:
    config = folder / "config"
    config.mkdir()
    document = {"endpoints": {"perf": {
        "usage": ["producer"], "protocol": "KAFKA",
        "protocoloptions": {"endpoints": [{"uri": f"tcp://{upstream}"}], "topics": topics},
        "messages": {"reading": {"dataschemaformat": "JsonSchema/draft-07", "dataschema": SCHEMA}}}}}
    (config / "perf.xreg.json").write_text(json.dumps(document), "utf-8")
    (config / "gateway.yaml").write_text(yaml.safe_dump({"proxy": {"upstream": upstream,
                                                                   "listen": f"127.0.0.1:{port}"}}), "utf-8")
    return config


def tools_classpath() -> str:
    done = subprocess.run(["bash", str(KAFKA_SCRIPT), "libs"], check=True, capture_output=True, text=True)
    return f"{done.stdout.strip().splitlines()[-1]}/*"


def producer_performance(classpath: str, bootstrap: str, topic: str, records: int, payloads: Path,
                         throughput: float) -> dict[str, float]:
    java = f"{os.environ['JAVA_HOME']}/bin/java" if os.environ.get("JAVA_HOME") else "java"
    done = subprocess.run(
        [java, "-Xmx512m", "-cp", classpath, "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
         "--num-records", str(records), "--throughput", str(int(throughput)), "--payload-file", str(payloads),
         "--producer-props", f"bootstrap.servers={bootstrap}", "acks=all", "batch.size=16384"],
        check=False, capture_output=True, text=True, timeout=600)
    found = _SUMMARY.findall(done.stdout)
    if done.returncode or not found or "ERROR" in done.stderr:
        raise RuntimeError(f"ProducerPerformance to {bootstrap} failed ({done.returncode}):\n"
                           f"{done.stdout[-1500:]}\n{done.stderr[-1500:]}")
    sent, rate, average, _, _, _, p99, _ = found[-1]
    if int(sent) != records:
        raise RuntimeError(f"ProducerPerformance sent {sent} of {records} records")
    return {"rate": float(rate), "avg_ms": float(average), "p99_ms": float(p99)}


async def measure(records: int, rounds: int) -> dict[str, Any]:
    classpath = await asyncio.to_thread(tools_classpath)
    async with broker("private", 4) as kafka:
        with tempfile.TemporaryDirectory(prefix="xgate-bench-proxy-") as work:
            folder = Path(work)
            payloads = payload_file(folder)
            topics = await kafka.create(*[f"r{i}" for i in range(rounds * 4)])
            port = free_port()
            while not _free(port + 1 + NODE_ID):  # the proxy's listener for the broker: port-per-broker
                port = free_port()
            config = proxy_config(folder, kafka.bootstrap, port, topics)
            proxy = Process("proxy", [sys.executable, "-m", "gateway.cli", "proxy", "--config", str(config),
                                      "--metrics-address", "", "--log-level", "warning", "--no-watch"],
                            folder / "proxy.log")
            try:
                while not await answers("127.0.0.1", port):
                    proxy.check()
                    await asyncio.sleep(0.2)
                return await asyncio.to_thread(_rounds, classpath, kafka, f"127.0.0.1:{port}", proxy, topics,
                                               records, rounds, payloads)
            finally:
                proxy.stop()
                await kafka.clean()


def _rounds(classpath: str, kafka: Broker, through: str, proxy: Process, topics: list[str], records: int,
            rounds: int, payloads: Path) -> dict[str, Any]:
    spare = iter(topics)
    bootstrap = {"direct": kafka.bootstrap, "proxy": through}
    # one unmeasured run each: the JVM's and the proxy's first connections, the broker's first segments
    for name in ("direct", "proxy"):
        producer_performance(classpath, bootstrap[name], next(spare), min(records, 20_000), payloads, -1)
    top: dict[str, list[dict[str, float]]] = {"direct": [], "proxy": []}
    cpu = []
    for index in range(rounds):
        for name in rotated(["direct", "proxy"], index):
            before = proxy.cpu_seconds()
            top[name].append(producer_performance(classpath, bootstrap[name], next(spare), records, payloads, -1))
            if name == "proxy":
                cpu.append((proxy.cpu_seconds() - before) / records * 1e6)
    half = summary([r["rate"] for r in top["proxy"]])["median"] * 0.5
    loaded: dict[str, list[dict[str, float]]] = {"direct": [], "proxy": []}
    for index in range(rounds):
        for name in rotated(["direct", "proxy"], index):
            count = max(int(half * 5), 5_000)  # about 10 s at half load
            loaded[name].append(producer_performance(classpath, bootstrap[name], next(spare), count, payloads, half))
    ratio = [p["rate"] / d["rate"] for p, d in zip(top["proxy"], top["direct"], strict=True)]
    added = [p["p99_ms"] - d["p99_ms"] for p, d in zip(loaded["proxy"], loaded["direct"], strict=True)]
    return {"records": records, "rounds": rounds,
            "rate": {name: summary([r["rate"] for r in runs]) for name, runs in top.items()},
            "ratio": summary(ratio), "half_load_rate": half,
            "p99_ms": {name: summary([r["p99_ms"] for r in runs]) for name, runs in loaded.items()},
            "added_p99_ms": summary(added), "cpu_us_per_record": summary(cpu)}


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def render(result: dict[str, Any]) -> str:
    def span(figure: dict[str, float], digits: int = 2) -> str:
        return f"{figure['median']:.{digits}f} [{figure['min']:.{digits}f}-{figure['max']:.{digits}f}]"

    ratio, added = result["ratio"], result["added_p99_ms"]
    met = "met" if ratio["median"] >= TARGET_RATE else "NOT met"
    met_p99 = "met" if added["median"] <= TARGET_P99_MS else "NOT met"
    lines = [
        (f"xgate proxy (ProducerPerformance, acks=all, ~1 KB conformant JSON records, {result['records']} a run, "
         f"{result['rounds']} rounds; medians [range])"),
        (f"  max rate, records/s   direct {span(result['rate']['direct'], 0)}   "
         f"proxy {span(result['rate']['proxy'], 0)}"),
        f"  proxy / direct        {span(ratio)}   target >= {TARGET_RATE}: {met}",
        (f"  at half load ({result['half_load_rate']:.0f}/s): p99 ms direct {span(result['p99_ms']['direct'], 0)}"
         f"   proxy {span(result['p99_ms']['proxy'], 0)}"),
        (f"  added p99             {added['median']:+.1f} ms [{added['min']:+.1f} to {added['max']:+.1f}]"
         f"   target <= {TARGET_P99_MS:.0f} ms: {met_p99}"),
        f"  proxy CPU per record  {span(result['cpu_us_per_record'], 1)} us",
    ]
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

