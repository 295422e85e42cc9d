"""The accepting and explaining passes per kind of message, as ratios to the orjson floor of the same bodies.

    python -m bench.accepting [--count 20000] [--rounds 9]

Over the seeded reference workload (bench/workload.py), every candidate once a round in rotating order, each
ratio to its floor taken within a round, then median and range (wall clock, and CPU time, which a loaded
machine inflates less):
  structured / binary   conformant messages, Ruleset.classify (accept fast)
  failing               nonconformant messages, Ruleset.classify (accept, then explain once)
  mix                   the whole workload, Ruleset.classify
  full-mix              the whole workload, Ruleset.judge_fully (every candidate's closures: the reference)
  check                 recorded lines -> verdict lines, gateway.check.check_stream (start-up excluded)
  check-per-line        the same with the loop `xgate check` ran before (judge_lines, json.dumps a verdict)
  mix-no-dupcheck       the mix with runtime.limits.reject_duplicate_keys off: the duplicate check's cost
Each kind's floor is orjson.loads of its own bodies (check's: of the message bodies of its lines).
"""

from __future__ import annotations

import argparse
import io
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
from bench.rounds import per_round, rotated, summary
from gateway.check import Summary, check_stream, judge_lines
from gateway.compiler import compile_registry
from gateway.limits import Limits
from gateway.loader import load_snapshot
from gateway.recorded import envelope_from_record

TARGETS = {"structured": 3.5, "binary": 6.0, "failing": 8.0, "mix": 5.0, "check": 7.0}


def _floor(bodies: list[bytes]) -> Callable[[], None]:
    def run() -> None:
        loads = orjson.loads
        for body in bodies:
            try:
                loads(body)
            except orjson.JSONDecodeError:
                pass
    return run


def candidates(count: int) -> tuple[dict[str, Callable[[], None]], dict[str, int], dict[str, str]]:
    """name -> (callable, messages it judges); and each candidate's floor."""
    with tempfile.TemporaryDirectory(prefix="xgate-bench-") as folder:
        path = Path(folder) / "workload.xreg.json"
        path.write_text(json.dumps(workload.registry_document()), "utf-8")
        snapshot = load_snapshot([path])
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    lenient = compile_registry(snapshot.registry, snapshot.digest, Limits(reject_duplicate_keys=False))
    samples = workload.samples(count)
    envelopes = [envelope_from_record(s.record) for s in samples]
    kinds: dict[str, list[Any]] = {
        "structured": [e for s, e in zip(samples, envelopes) if s.kind == workload.OK and s.structured],
        "binary": [e for s, e in zip(samples, envelopes) if s.kind == workload.OK and not s.structured],
        "failing": [e for s, e in zip(samples, envelopes) if s.kind != workload.OK],
        "mix": envelopes,
    }
    text = "".join(json.dumps(s.record) + "\n" for s in samples)
    runs: dict[str, Callable[[], None]] = {}
    sizes: dict[str, int] = {}
    floors: dict[str, str] = {}

    def judge(run: Callable[[Any], Any], batch: list[Any]) -> Callable[[], None]:
        def go() -> None:
            for envelope in batch:
                run(envelope)
        return go

    for kind, batch in kinds.items():
        runs[f"floor-{kind}"], sizes[f"floor-{kind}"] = _floor([e.body for e in batch]), len(batch)
        runs[kind], sizes[kind], floors[kind] = judge(ruleset.classify, batch), len(batch), f"floor-{kind}"
    runs["full-mix"], sizes["full-mix"], floors["full-mix"] = judge(ruleset.judge_fully, envelopes), count, "floor-mix"
    runs["mix-no-dupcheck"], sizes["mix-no-dupcheck"] = judge(lenient.classify, envelopes), count
    floors["mix-no-dupcheck"] = "floor-mix"

    def check() -> None:
        with open(os.devnull, "wb") as out:
            check_stream(ruleset, io.StringIO(text), out, Summary())

    runs["check"], sizes["check"], floors["check"] = check, count, "floor-mix"

    def check_per_line() -> None:  # the loop `xgate check` ran before check_stream: a json.dumps a verdict
        with open(os.devnull, "w") as out:
            out.writelines(json.dumps(verdict.as_dict(), default=str) + "\n" for verdict in judge_lines(ruleset, io.StringIO(text)))

    runs["check-per-line"], sizes["check-per-line"], floors["check-per-line"] = check_per_line, count, "floor-mix"
    return runs, sizes, floors


def run(count: int = 20000, rounds: int = 9) -> dict[str, Any]:
    runs, sizes, floors = candidates(count)
    wall: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    for index in range(rounds):
        for name in rotated(list(runs), index):  # each round runs every candidate once, the order rotated
            start, start_cpu = time.perf_counter(), time.process_time()
            runs[name]()
            wall[name].append((time.perf_counter() - start) / sizes[name])
            cpu[name].append((time.process_time() - start_cpu) / sizes[name])
    median = {name: statistics.median(v) for name, v in wall.items()}
    median_cpu = {name: statistics.median(v) for name, v in cpu.items()}
    # each ratio within a round (the candidate and its floor ran in the same round), then median and range
    ratios = {name: summary(per_round(wall[name], wall[floor])) for name, floor in floors.items()}
    ratios_cpu = {name: summary(per_round(cpu[name], cpu[floor])) for name, floor in floors.items()}
    return {
        "messages": count, "rounds": rounds, "sizes": sizes, "load_average": os.getloadavg(),
        "per_message_us": {name: 1e6 * value for name, value in median.items()},
        "per_message_cpu_us": {name: 1e6 * value for name, value in median_cpu.items()},
        "ratios": ratios, "ratios_cpu": ratios_cpu,
        "duplicate_check_cost_pct": summary([100 * (r - 1) for r in per_round(wall["mix"], wall["mix-no-dupcheck"])]),
        "duplicate_check_cost_cpu_pct": summary([100 * (r - 1)
                                                 for r in per_round(cpu["mix"], cpu["mix-no-dupcheck"])]),
        "speedup_over_full_judge": summary(per_round(wall["full-mix"], wall["mix"])),
        "targets": {f"{name} <= {bound}x": ratios[name]["median"] <= bound for name, bound in TARGETS.items()},
    }


def render(result: dict[str, Any]) -> str:
    load = ", ".join(f"{v:.1f}" for v in result["load_average"])
    def cell(figure: dict[str, float], width: int) -> str:
        return f"{figure['median']:.2f} [{figure['min']:.2f}-{figure['max']:.2f}]".rjust(width)

    lines = [(f"accepting pass: {result['messages']} workload messages, {result['rounds']} rounds in rotating "
              f"order, ratios per round, median [min-max] (load average {load})"),
             f"  {'kind':<16} {'n':>6} {'us/msg':>8} {'x floor':>19} {'cpu us':>8} {'cpu x floor':>19}  target"]
    for name in result["ratios"]:
        target = TARGETS.get(name)
        lines.append(f"  {name:<16} {result['sizes'][name]:>6} {result['per_message_us'][name]:>8.2f} "
                     f"{cell(result['ratios'][name], 19)} {result['per_message_cpu_us'][name]:>8.2f} "
                     f"{cell(result['ratios_cpu'][name], 19)}  " + (f"<= {target}x" if target else ""))
    dup, dup_cpu = result["duplicate_check_cost_pct"], result["duplicate_check_cost_cpu_pct"]
    lines.append(f"  duplicate-key check: {dup['median']:+.1f}% [{dup['min']:+.1f} to {dup['max']:+.1f}] on the mix "
                 f"(cpu {dup_cpu['median']:+.1f}%)")
    lines.append(f"  classify over judge_fully (the full judge): {cell(result['speedup_over_full_judge'], 0)}x faster")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.accepting", description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    result = run(args.count, args.rounds)
    print(json.dumps(result, indent=1) if args.json else render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
