"""What shadow rules cost the pipeline, on the reference workload, side by side in one run.

    python -m bench.shadow [--count 20000] [--rounds 5]

Candidates, over the same envelopes in batches of 500 (the pipeline's batch), each judged by the active
ruleset as `Pipeline._handle` does:
  off        no shadow folder: the pipeline reads `holder.shadow` once per batch and finds None
  baseline   the same loop without that read (what the pipeline cost before shadow rules existed)
  on         a candidate (the workload with one schema bound tightened) judges every message again
Rounds rotate the order; medians and [min-max] per message. Shadow off must cost nothing measurable
(off/baseline near 1.00); on costs about one more classify per message.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import workload
from bench.results import save
from gateway.compiler import compile_registry
from gateway.loader import load_snapshot
from gateway.metrics.instruments import GatewayMetrics
from gateway.recorded import envelope_from_record
from gateway.runtime.shadow import ShadowJudge

BATCH = 500


def _ruleset(document: dict[str, Any]) -> Any:
    with tempfile.TemporaryDirectory(prefix="xgate-bench-") as folder:
        path = Path(folder) / "workload.xreg.json"
        path.write_text(json.dumps(document), "utf-8")
        snapshot = load_snapshot([path])
    return compile_registry(snapshot.registry, snapshot.digest)


def _tightened(document: dict[str, Any]) -> dict[str, Any]:
    """The workload with every inline schema's first numeric bound halved: a candidate that disagrees sometimes."""
    candidate = copy.deepcopy(document)
    for group in candidate["messagegroups"].values():
        for message in group["messages"].values():
            schema = message.get("dataschema")
            for member in (schema or {}).get("properties", {}).values():
                if isinstance(member, dict) and isinstance(member.get("maximum"), (int, float)):
                    member["maximum"] = member["maximum"] / 2
                    break
    return candidate


def candidates(count: int) -> dict[str, Callable[[], None]]:
    document = workload.registry_document()
    active = _ruleset(document)
    shadow = ShadowJudge(_ruleset(_tightened(document)), GatewayMetrics(), "bench")
    envelopes = [envelope_from_record(r) for r in workload.messages(count)]
    batches = [envelopes[i:i + BATCH] for i in range(0, len(envelopes), BATCH)]

    class Holder:
        def __init__(self, judge: ShadowJudge | None) -> None:
            self.shadow = judge

    def loop(holder: Holder | None) -> Callable[[], None]:
        classify = active.classify

        def run() -> None:
            for batch in batches:
                judged = [(envelope, classify(envelope)) for envelope in batch]
                if holder is not None:
                    judge = holder.shadow
                    if judge is not None:
                        judge.judge("workload.in", judged)
        return run
    return {"baseline": loop(None), "off": loop(Holder(None)), "on": loop(Holder(shadow))}


def run(count: int, rounds: int) -> dict[str, Any]:
    runs = candidates(count)
    names = list(runs)
    times: dict[str, list[float]] = {name: [] for name in names}
    for number in range(rounds):
        for name in names[number % len(names):] + names[:number % len(names)]:
            started = time.perf_counter()
            runs[name]()
            times[name].append((time.perf_counter() - started) / count * 1e6)
    medians = {name: statistics.median(values) for name, values in times.items()}
    return {"count": count, "rounds": rounds, "us_per_message": medians,
            "range": {name: [min(v), max(v)] for name, v in times.items()},
            "off_vs_baseline": medians["off"] / medians["baseline"],
            "on_vs_baseline": medians["on"] / medians["baseline"]}


def report(result: dict[str, Any]) -> str:
    lines = [f"shadow rules: {result['count']:,} messages in batches of {BATCH}, {result['rounds']} rounds "
             "(medians, [min-max])"]
    for name, value in result["us_per_message"].items():
        low, high = result["range"][name]
        lines.append(f"  {name:<9} {value:8.2f} µs/msg [{low:.2f}-{high:.2f}]  "
                     f"x baseline {value / result['us_per_message']['baseline']:.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.shadow", description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    result = run(args.count, args.rounds)
    print(report(result))
    save("shadow", result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
