"""Hot-path benchmark on the demo registry: interleaved rounds, medians and spread, ratios only.

    python -m bench [--count 20000] [--rounds 7]

Candidates, each over the same seeded traffic:
  floor     json.loads of every recorded line (the cost of merely reading it)
  classify  Ruleset.classify on prepared Envelopes (the hot path)
  check     recorded line -> verdict, end to end as `xgate check` does it
Results go to bench/results/hotpath.json and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from gateway.check import judge_lines
from gateway.compiler import compile_registry
from gateway.loader import load_snapshot
from gateway.recorded import envelope_from_record
from gateway.testing.traffic import generate

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    snapshot = load_snapshot([ROOT / "config" / "demo"])
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    records = generate(args.count, seed=11)
    lines = [json.dumps(r) for r in records]
    envelopes = [envelope_from_record(r) for r in records]

    def floor() -> None:
        for line in lines:
            json.loads(line)

    def classify() -> None:
        run = ruleset.classify
        for envelope in envelopes:
            run(envelope)

    def check() -> None:
        for _ in judge_lines(ruleset, lines):
            pass

    candidates: dict[str, Callable[[], None]] = {"floor": floor, "classify": classify, "check": check}
    timings: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(args.rounds):
        for name, run in candidates.items():  # interleaved: each round runs every candidate once
            start = time.perf_counter()
            run()
            timings[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(values) for name, values in timings.items()}
    result = {"messages": args.count, "rounds": args.rounds,
              "per_message_us": {n: 1e6 * m / args.count for n, m in medians.items()},
              "spread_pct": {n: 100 * (max(v) - min(v)) / statistics.median(v) for n, v in timings.items()},
              "ratios": {"classify_over_floor": medians["classify"] / medians["floor"],
                         "check_over_floor": medians["check"] / medians["floor"]}}
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "hotpath.json").write_text(json.dumps(result, indent=2))
    print(f"{'candidate':<10} {'us/msg':>8} {'spread%':>8}")
    for name in candidates:
        print(f"{name:<10} {result['per_message_us'][name]:>8.2f} {result['spread_pct'][name]:>8.1f}")
    for name, ratio in result["ratios"].items():
        print(f"{name}: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
