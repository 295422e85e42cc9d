"""What an exactly-once Kafka route costs: `xgate run` at-least-once against `exactly_once: true`, in one run.

    python -m bench.exactly_once [--count 50000] [--rounds 2]

Both candidates run the demo's telemetry route (config/demo, Kafka to Kafka on the shared Apache Kafka of
deploy/brokers/kafka.sh) over the same preloaded topic, each round with a fresh consumer group and fresh
destination topics, interleaved (at-least-once first in even rounds). Each is timed from its first routed
message to the last (startup, group join and, for exactly-once, `init_transactions` left out; see
bench.spark.timed_gateway). Results go to bench/results/exactly_once.json and a table on stdout.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import yaml

from bench.kafka_harness import delete_topics_named
from bench.results import save
from bench.spark import BOOTSTRAP, DEMO, ROOT, kafka_records, produce, timed_gateway

CANDIDATES = {"at-least-once": False, "exactly-once": True}


def config(work: Path, name: str, topic: str, exactly_once: bool) -> Path:
    folder = work / name
    folder.mkdir()
    for item in DEMO.iterdir():
        if item.is_file() and item.name != "gateway.yaml":  # the demo's documents (not its shadow folder)
            shutil.copy(item, folder / item.name)
    uri = f"tcp://{BOOTSTRAP}"
    settings: dict[str, Any] = {
        "routes": [{"source": "telemetry.in", "conformant": "telemetry.valid", "nonconformant": "telemetry.dlq",
                    "exactly_once": exactly_once}],
        "endpoints": {"telemetry.in": {"uris": [uri], "options": {"topic": topic, "consumergroup": f"{name}-group"}},
                      "telemetry.valid": {"uris": [uri], "options": {"topic": f"{name}-valid"}},
                      "telemetry.dlq": {"uris": [uri], "options": {"topic": f"{name}-dlq"}}}}
    (folder / "gateway.yaml").write_text(yaml.safe_dump(settings), "utf-8")
    return folder


def run(count: int, rounds: int) -> dict[str, Any]:
    subprocess.run(["bash", str(ROOT / "deploy" / "brokers" / "kafka.sh"), "start"], check=True)
    records = kafka_records(count)
    run_id = uuid.uuid4().hex[:8]
    topic = f"bench-eos-{run_id}-in"
    produce(topic, records)
    seconds: dict[str, list[float]] = {name: [] for name in CANDIDATES}
    try:
        with tempfile.TemporaryDirectory(prefix="xgate-bench-eos-") as work:
            for index in range(rounds):
                order = list(CANDIDATES) if index % 2 == 0 else list(CANDIDATES)[::-1]
                for name in order:
                    folder = config(Path(work), f"bench-eos-{run_id}-{name}-{index}", topic, CANDIDATES[name])
                    seconds[name].append(timed_gateway(folder, count))
    finally:
        delete_topics_named(BOOTSTRAP, f"bench-eos-{run_id}-")
    rates = {name: count / statistics.median(values) for name, values in seconds.items()}
    return {"messages": count, "rounds": rounds, "broker": BOOTSTRAP, "seconds": seconds,
            "messages_per_s": rates, "exactly_once_over_at_least_once": rates["exactly-once"] / rates["at-least-once"]}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=50000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    result = run(args.count, args.rounds)
    save("exactly_once", result)
    print(f"exactly-once cost ({result['messages']} demo telemetry messages, {result['rounds']} interleaved rounds, "
          f"medians, Kafka to Kafka on {result['broker']})")
    for name, rate in result["messages_per_s"].items():
        print(f"{name:<14} {rate:>9.0f} msg/s")
    print(f"exactly-once / at-least-once: {result['exactly_once_over_at_least_once']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
