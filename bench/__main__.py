"""`make bench`: every benchmark, one after another, each measuring its candidates side by side.

    python -m bench [--quick]

  bench.hotpath    the hot path per kind of message against the orjson floor, the afternoon script and the literal
                   naive baseline; `xgate check` against the afternoon script
  bench.memory     RSS per 1,000 compiled definitions (distinct schemas, and shared); RSS over 2M judged messages
  bench.kafka_e2e  `xgate run` against a raw aiokafka pass-through on Apache Kafka: max rate, latency at half of it
  bench.accepting  the accepting and explaining passes per kind of message; the duplicate-member check's cost
  bench.shadow     what shadow rules cost the pipeline (off, before they existed, on)
  bench.console    what the web console costs the hot path (off, on with its page refreshed)
  bench.reload_latency  judging latency and event-loop stalls while 5,000 definitions reload
  bench.registry_write  a registry write's time beside 5,000 definitions
  bench.kafka_e2e  (above) also `xgate run --workers 2` against the raw pass-through
  bench.broker_e2e `xgate run` (--workers 1 and 2) against a raw client pass-through on NATS JetStream and MQTT 5
  bench.exactly_once  an exactly-once Kafka route against an at-least-once one
  bench.spark      the Spark runner against `xgate check` and `xgate run` on Kafka messages (batch, and streaming)
  bench.proxy      `xgate proxy` against producing straight to the broker (Kafka's ProducerPerformance)
Each writes bench/results/<name>.json; this prints their tables. No figure is a pass/fail test:
the machine is shared and noisy, so every figure is a ratio measured in the same run, and every figure is
a median over at least 5 rounds (interleaved, order rotated) with its range; a target is met only when the
median meets it. --quick shortens every run (for trying the suite, not for figures).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import accepting, console, hotpath, memory, registry_write, reload_latency, shadow
from bench.results import RESULTS, save

ROOT = Path(__file__).resolve().parents[1]
# the benches run in this interpreter, in this order: the name their results are saved under, the run (small
# counts with --quick) and how it prints
IN_PROCESS: tuple[tuple[str, Callable[[bool], Any], Callable[[Any], str]], ...] = (
    ("hotpath", lambda quick: hotpath.run(500, 5) if quick else hotpath.run(), hotpath.render),
    ("memory", lambda quick: memory.run(200, 200_000, 5) if quick else memory.run(), memory.render),
    ("accepting", lambda quick: accepting.run(1000, 5) if quick else accepting.run(), accepting.render),
    ("shadow", lambda quick: shadow.run(1000, 5) if quick else shadow.run(20_000, 5), shadow.report),
    ("console", lambda quick: console.run(2000, 3, 2) if quick else console.run(), console.render),
    ("reload_latency", lambda quick: reload_latency.run(500, 1000, 1) if quick else reload_latency.run(),
     reload_latency.render),
    ("registry_write", lambda quick: registry_write.run(500, 2) if quick else registry_write.run(),
     registry_write.render),
)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small counts, for trying the suite")
    args = parser.parse_args()
    started = time.monotonic()

    for name, run, render in IN_PROCESS:
        result = run(args.quick)
        save(name, result)
        print(render(result), flush=True)

    # Kafka end to end and Spark each in their own process (their brokers, gateways and JVM are subprocesses
    # of it, and Spark's heap must not share this interpreter's figures)
    # a private Kafka (nothing else's traffic on it) and a 20 ms fetch wait for both candidates (a gateway tuned
    # for latency; the aiokafka default of 500 ms is measured by `python -m bench.kafka_e2e` alone); its defaults
    # are 5 max-rate rounds and 5 latency rounds of 15 s, and it prints what it ran
    # 100k messages a max-rate round: raw moves 25k in a third of a second, too short a window for a steady rate
    kafka = [sys.executable, "-m", "bench.kafka_e2e", "--broker", "private", "--fetch-wait-ms", "20"] \
        + (["--quick"] if args.quick else ["--count", "100000"])
    # 50k messages, not 100k: 5 rounds of every batch and streaming candidate (plus a warm-up) stay in minutes
    spark = [sys.executable, "-m", "bench.spark", "--rounds", "5", "--count", "20000" if args.quick else "50000"]
    # 5,000 messages a round: MQTT through a QoS 1 window of Mosquitto's is the slow one
    brokers = [sys.executable, "-m", "bench.broker_e2e", "--count", "1000" if args.quick else "5000",
               "--rounds", "5", "--workers", "1", "2"]
    exactly = [sys.executable, "-m", "bench.exactly_once", "--count", "5000" if args.quick else "20000",
               "--rounds", "5"]
    proxy = [sys.executable, "-m", "bench.proxy", *(["--quick"] if args.quick else ["--records", "100000"])]
    failed = 0
    for name, command in (("bench.kafka_e2e", kafka), ("bench.broker_e2e", brokers),
                          ("bench.exactly_once", exactly), ("bench.spark", spark), ("bench.proxy", proxy)):
        done = subprocess.run(command, cwd=ROOT, check=False, capture_output=True, text=True)
        table = [line for line in done.stdout.splitlines() if line.strip()]
        print("\n".join(table), flush=True)
        if done.returncode:
            print(f"{name} failed (exit {done.returncode}):\n{done.stderr[-3000:]}", flush=True)
        failed = failed or done.returncode
    print(f"bench: {time.monotonic() - started:.0f} s; results in {RESULTS}")
    return failed


if __name__ == "__main__":
    raise SystemExit(main())
