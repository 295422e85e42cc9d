"""The hot path on the reference workload, against its floor and the naive baseline, in one run.

    python -m bench.hotpath [--count 20000] [--naive-count 2000] [--rounds 5]

Candidates, over the same seeded messages (bench/workload.py):
  floor          orjson.loads of every message body (the cost of merely reading it)
  naive          cloudevents SDK + a loop over every definition + `jsonschema.validate` (as its docs show it)
  naive-prebuilt the same, with the schema check jsonschema.validate repeats on every call left out
  classify       Ruleset.classify on prepared Envelopes (xgate's hot path)
  check          recorded line -> verdict -> JSON line, as `xgate check` does it
The naive candidates are slow, so they run on the first --naive-count messages; every figure is a cost per
message, and the ratios compare those. Rounds are interleaved; medians and spread are reported.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from bench import workload
from bench.naive import NaiveValidator
from bench.results import save
from gateway.check import judge_lines
from gateway.compiler import compile_registry
from gateway.loader import load_snapshot
from gateway.recorded import envelope_from_record


def candidates(count: int, naive_count: int) -> tuple[dict[str, Callable[[], None]], dict[str, int]]:
    document = workload.registry_document()
    records = workload.messages(count)
    with tempfile.TemporaryDirectory(prefix="xgate-bench-") as folder:
        path = Path(folder) / "workload.xreg.json"
        path.write_text(json.dumps(document), "utf-8")
        snapshot = load_snapshot([path])
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    envelopes = [envelope_from_record(r) for r in records]
    bodies = [e.body for e in envelopes]
    lines = [json.dumps(r) + "\n" for r in records]
    naive_records = records[:naive_count]
    literal = NaiveValidator(document)
    prebuilt = NaiveValidator(document, recheck_schemas=False)

    def floor() -> None:
        loads = orjson.loads
        for body in bodies:
            try:
                loads(body)
            except orjson.JSONDecodeError:
                pass

    def naive() -> None:
        for record in naive_records:
            literal.judge(record)

    def naive_prebuilt() -> None:
        for record in naive_records:
            prebuilt.judge(record)

    def classify() -> None:
        run = ruleset.classify
        for envelope in envelopes:
            run(envelope)

    def check() -> None:
        with open(os.devnull, "w") as out:
            for verdict in judge_lines(ruleset, lines):  # noqa: FURB122 - one write a verdict, as the CLI does
                out.write(json.dumps(verdict.as_dict(), default=str) + "\n")

    runs = {"floor": floor, "naive": naive, "naive-prebuilt": naive_prebuilt, "classify": classify, "check": check}
    sizes = {name: naive_count if name.startswith("naive") else count for name in runs}
    return runs, sizes


def run(count: int = 20000, naive_count: int = 2000, rounds: int = 5) -> dict[str, Any]:
    runs, sizes = candidates(count, naive_count)
    timings: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, candidate in runs.items():  # interleaved: each round runs every candidate once
            start = time.perf_counter()
            candidate()
            timings[name].append((time.perf_counter() - start) / sizes[name])
    per_message = {name: statistics.median(values) for name, values in timings.items()}
    return {
        "messages": count, "naive_messages": naive_count, "rounds": rounds,
        "per_message_us": {name: 1e6 * value for name, value in per_message.items()},
        "spread_pct": {name: 100 * (max(v) - min(v)) / statistics.median(v) for name, v in timings.items()},
        "ratios": {
            "classify_over_floor": per_message["classify"] / per_message["floor"],
            "check_over_floor": per_message["check"] / per_message["floor"],
            "classify_rate_over_naive": per_message["naive"] / per_message["classify"],
            "classify_rate_over_naive_prebuilt": per_message["naive-prebuilt"] / per_message["classify"],
        },
        "targets": {"classify_rate_over_naive >= 15": per_message["naive"] / per_message["classify"] >= 15,
                    "classify_over_floor <= 3": per_message["classify"] / per_message["floor"] <= 3},
    }


def render(result: dict[str, Any]) -> str:
    title = (f"hot path: {result['messages']} workload messages ({result['naive_messages']} for naive), "
             f"{result['rounds']} interleaved rounds, medians")
    lines = [title, f"{'candidate':<16} {'us/msg':>9} {'spread%':>8}"]
    for name, value in result["per_message_us"].items():
        lines.append(f"{name:<16} {value:>9.2f} {result['spread_pct'][name]:>8.1f}")
    lines += [f"{name}: {ratio:.2f}x" for name, ratio in result["ratios"].items()]
    lines += [f"target {name}: {'met' if met else 'NOT met'}" for name, met in result["targets"].items()]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=20000)
    parser.add_argument("--naive-count", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    result = run(args.count, args.naive_count, args.rounds)
    save("hotpath", result)
    print(render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
