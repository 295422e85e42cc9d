"""The hot path on the reference workload, against the orjson floor and the baselines, in one run.

    python -m bench.hotpath [--count 6000] [--rounds 5] [--check-repeat 20]

Every candidate starts from the same Kafka records (headers as (name, bytes) pairs, the value as bytes, as
a consumer delivers them) of the same seeded messages (bench/workload.py), split by what the generator made
each message to be:
  floor       orjson.loads of the value (the cost of merely reading it)
  native      the records in one call of the native core (gateway/compiler/core.py), each result made the
              Verdict the route uses (xgate's hot path since issue 31)
  classify    the record made an Envelope as the Kafka source does, then Ruleset.classify (the Python judge)
  afternoon   bench/afternoon.py: orjson, dispatch on `type`, plain loops, jsonschema-rs built once
  naive       bench/naive.py, the literal old baseline (cloudevents SDK, every definition, jsonschema.validate)
and, over the recorded lines of the whole mix written `--check-repeat` times (120,000 lines by default, so
that a run takes well over its start-up), `xgate check` (gateway.cli.main, its start-up on an empty input
subtracted) against the afternoon script turning the same lines into verdict lines.
Before timing, the afternoon script must give xgate's verdict (outcome and message id) on every message and
the naive one xgate's outcome. Each round runs every (candidate, messages) pair once, the order rotated by
one each round, each pass on records delivered just before it, untimed (new objects, as a consumer decodes a
fetch: a live route judges records still in the caches), and each timed pass follows an untimed warm pass of
the same candidate on the same kind's records: a route judges batch after batch, so its own code, plan and
validators are in the caches. Without the warm pass each candidate paid for the one run before it (the Python
judge's pass evicted the core's plan: the native/floor ratios of binary and failing messages read 15-20%
higher, the floor's barely moved). Figures are medians over the rounds with their range, and a target counts
as met only when the median meets it.

The rounds run under the cyclic garbage collector's settings of `xgate run` (gateway/runtime/heap.py
`settle`: what set-up built is frozen, the young generation collected every 50,000 net allocations), every
candidate alike. Under Python's defaults this process, which holds every job's records, ran 16 full
collections of up to 17 ms in three rounds, each charged to whichever pass it fell in: the native core's
mix read 5.2 µs a message in one round and 10.5 in the next of the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from bench import workload
from bench.afternoon import AfternoonValidator
from bench.naive import NaiveValidator
from bench.results import save
from bench.rounds import rotated, summary
from gateway import cli
from gateway.compiler import Ruleset, compile_registry
from gateway.compiler.core import NativeJudge
from gateway.loader import load_snapshot
from gateway.runtime import heap
from protocol_adapters.kafka.mapping import kafka_envelope

Wire = tuple[str, int, bytes, bytes, list[tuple[str, bytes]], int]  # topic, partition, key, value, headers, ts
CHECKS = ("check", "afternoon-check")  # timed over the recorded lines, not over one kind's records
KINDS = {"structured": "conformant structured", "binary": "conformant binary", "failing": "failing (explained)",
         "mix": "the reference mix"}
# issue 31's targets, as (numerator, denominator, kind, comparison, bound)
TARGETS = (("native", "floor", "structured", "<=", 2.5), ("native", "floor", "binary", "<=", 3.0),
           ("native", "floor", "failing", "<=", 5.0), ("native", "floor", "mix", "<=", 3.0),
           ("afternoon-check", "check", "mix", ">=", 3.0))


def wire(record: dict[str, Any]) -> Wire:
    headers = [(name, text.encode()) for name, text in record["headers"].items()]
    return (record["topic"], record["partition"], record["key"].encode(), record["body"].encode(), headers,
            record["timestamp"])


def split(samples: list[workload.Sample]) -> dict[str, list[Wire]]:
    """The messages of each kind, by the generator's intent (not by any verdict)."""
    ok = [s for s in samples if s.kind == workload.OK]
    return {"structured": [wire(s.record) for s in ok if s.structured],
            "binary": [wire(s.record) for s in ok if not s.structured],
            "failing": [wire(s.record) for s in samples if s.kind != workload.OK],
            "mix": [wire(s.record) for s in samples]}


def _envelope(item: Wire) -> Any:
    topic, partition, key, value, headers, timestamp = item
    return kafka_envelope(topic, partition, 0, key, value, headers, timestamp, workload.ENDPOINT)


def agree(ruleset: Ruleset, afternoon: AfternoonValidator, naive: NaiveValidator, items: list[Wire]) -> None:
    """Refuse to time baselines that judge differently from xgate, and a core that differs from the Python judge."""
    native = NativeJudge(ruleset)
    natively = native.judge([_envelope(item) for item in items])
    for index, item in enumerate(items):
        verdict = ruleset.classify(_envelope(item))
        assert natively[index].as_dict() == verdict.as_dict(), f"message {index}: the core says {natively[index]}, Python {verdict}"
        expected = verdict.messageid if verdict.conformant else None
        got = afternoon.judge(item[4], item[3])
        assert got == expected, f"message {index}: afternoon script says {got}, xgate {expected}"
        record = {"key": item[2].decode(), "headers": {n: v.decode() for n, v in item[4]}, "body": item[3].decode()}
        assert naive.judge(record) == verdict.conformant, f"message {index}: naive baseline disagrees with xgate"


def delivered(items: list[Wire]) -> list[Wire]:
    """New objects for the same records, as a Kafka consumer hands over a fetch it has just decoded (names
    decoded from bytes, values copied out of the fetch buffer): every candidate reads records that are as
    fresh in the caches as a live route's. Records made once and read again five rounds later had been evicted
    by the jobs between, which charged the candidates that read headers (not the floor) for misses a route
    does not have."""
    def copy(value: bytes) -> bytes:
        return bytes(memoryview(value))

    return [(topic.encode().decode(), partition, copy(key), copy(value),
             [(name.encode().decode(), copy(text)) for name, text in headers], timestamp)
            for topic, partition, key, value, headers, timestamp in items]


Job = Callable[[], Callable[[], None]]  # untimed set-up (the records delivered), returning the timed pass


def _per_kind(ruleset: Ruleset, afternoon: AfternoonValidator, naive: NaiveValidator,
              kinds: dict[str, list[Wire]]) -> dict[tuple[str, str], Job]:
    def floor(fetched: list[Wire]) -> Callable[[], None]:
        items = delivered(fetched)

        def run() -> None:
            loads = orjson.loads
            for item in items:
                try:
                    loads(item[3])
                except orjson.JSONDecodeError:
                    pass
        return run

    def classify(fetched: list[Wire]) -> Callable[[], None]:
        items = delivered(fetched)

        def run() -> None:
            judge, envelope = ruleset.classify, kafka_envelope
            for topic, partition, key, value, headers, timestamp in items:
                judge(envelope(topic, partition, 0, key, value, headers, timestamp, workload.ENDPOINT))
        return run

    native = NativeJudge(ruleset)
    position = native.endpoint_position(workload.ENDPOINT)
    assert position is not None, "the workload endpoint has no place in the core"

    def core(fetched: list[Wire]) -> Callable[[], None]:
        records = [(topic, partition, key, headers, value, timestamp)
                   for topic, partition, key, value, headers, timestamp in delivered(fetched)]

        def run() -> None:
            verdict = native.verdict
            for result in native.judge_records(position, records):
                verdict(result)
        return run

    def script(fetched: list[Wire]) -> Callable[[], None]:
        items = delivered(fetched)

        def run() -> None:
            judge = afternoon.judge
            for item in items:
                judge(item[4], item[3])
        return run

    def literal() -> Callable[[], None]:
        records = [{"key": i[2].decode(), "headers": {n: v.decode() for n, v in i[4]}, "body": i[3].decode()}
                   for i in kinds["mix"]]

        def run() -> None:
            for record in records:
                naive.judge(record)
        return run

    jobs: dict[tuple[str, str], Job] = {}
    for kind, items in kinds.items():
        for name, job in (("floor", floor), ("classify", classify), ("native", core), ("afternoon", script)):
            jobs[(name, kind)] = functools.partial(job, items)
    jobs[("naive", "mix")] = literal
    return jobs


def _check_jobs(registry: Path, lines: Path, empty: Path, afternoon: AfternoonValidator) -> dict[tuple[str, str], Job]:
    """`xgate check` over `lines`, over an empty file (its start-up), and the afternoon script over `lines`."""
    def xgate(path: Path) -> Callable[[], None]:
        def run() -> None:
            with open(os.devnull, "w") as out, contextlib.redirect_stdout(out):
                code = cli.main(["check", "--registry", str(registry), str(path)])
            assert code in (0, 1), f"xgate check exited {code}"
        return run

    # once, untimed: the command really writes one verdict line per message
    written = io.StringIO()
    with contextlib.redirect_stdout(written):
        cli.main(["check", "--registry", str(registry), str(lines)])
    count = sum(1 for line in lines.read_text("utf-8").splitlines() if line.strip())
    assert len(written.getvalue().splitlines()) == count, "xgate check did not write a verdict per message"

    def script() -> None:
        check_line = afternoon.check_line
        with lines.open("rb") as source, open(os.devnull, "wb") as out:
            out.writelines(check_line(line) for line in source)

    # these read their lines from the file each time: nothing to deliver beforehand
    return {("check", "mix"): lambda: xgate(lines), ("check-startup", "mix"): lambda: xgate(empty),
            ("afternoon-check", "mix"): lambda: script}


def _ratios(timings: dict[tuple[str, str], list[float]], sizes: dict[str, int],
            checked: int) -> dict[str, list[float]]:
    """Per round: each candidate over each other it is compared with, from the same round's timings."""
    rounds = range(len(timings[("floor", "mix")]))
    startup = timings.pop(("check-startup", "mix"))
    timings[("check", "mix")] = [t - startup[r] for r, t in enumerate(timings[("check", "mix")])]
    per = {key: [t / (checked if key[0] in CHECKS else sizes[key[1]]) for t in values]
           for key, values in timings.items()}

    def ratio(numerator: str, denominator: str, kind: str) -> list[float]:
        return [per[(numerator, kind)][r] / per[(denominator, kind)][r] for r in rounds]

    out = {f"{a}/{b} {kind}": ratio(a, b, kind) for kind in KINDS for a, b in (("native", "floor"),
                                                                                ("classify", "floor"),
                                                                                ("afternoon", "floor"))}
    for a, b in (("check", "floor"), ("afternoon-check", "check"), ("afternoon", "classify"), ("naive", "classify")):
        out[f"{a}/{b} mix"] = ratio(a, b, "mix")
    out.update({f"us {key[0]} {key[1]}": [1e6 * v for v in values] for key, values in per.items()})
    out["ms check start-up"] = [1e3 * t for t in startup]
    return out


def run(count: int = 6000, rounds: int = 5, check_repeat: int = 20) -> dict[str, Any]:
    samples = workload.samples(count)
    document = workload.registry_document()
    kinds = split(samples)
    with tempfile.TemporaryDirectory(prefix="xgate-bench-") as folder:
        registry = Path(folder) / "workload.xreg.json"
        registry.write_text(json.dumps(document), "utf-8")
        lines, empty = Path(folder) / "messages.jsonl", Path(folder) / "empty.jsonl"
        lines.write_text("".join(json.dumps(s.record) + "\n" for s in samples) * check_repeat, "utf-8")
        empty.write_text("", "utf-8")
        snapshot = load_snapshot([registry])
        ruleset = compile_registry(snapshot.registry, snapshot.digest)
        afternoon, naive = AfternoonValidator(document), NaiveValidator(document)
        agree(ruleset, afternoon, naive, kinds["mix"])
        jobs = {**_per_kind(ruleset, afternoon, naive, kinds), **_check_jobs(registry, lines, empty, afternoon)}
        order = list(jobs)
        jobs[("check-startup", "mix")]()()  # warm-up: the first call imports what the CLI loads lazily
        heap.settle()  # the collector as a route runs it (module docstring)
        timings: dict[tuple[str, str], list[float]] = {key: [] for key in jobs}
        for index in range(rounds):
            for key in rotated(order, index):  # every pair once a round, the order rotated
                jobs[key]()()  # the warm pass: what a route running this candidate alone holds in the caches
                timed = jobs[key]()
                start = time.perf_counter()
                timed()
                timings[key].append(time.perf_counter() - start)
    sizes = {kind: len(items) for kind, items in kinds.items()}
    figures = {name: summary(values) for name, values in _ratios(timings, sizes, sizes["mix"] * check_repeat).items()}
    targets = {}
    for numerator, denominator, kind, comparison, bound in TARGETS:
        name = f"{numerator}/{denominator} {kind}"
        median = figures[name]["median"]
        targets[f"{name} {comparison} {bound}"] = median <= bound if comparison == "<=" else median >= bound
    return {"messages": sizes, "rounds": rounds, "checked": sizes["mix"] * check_repeat, "agreement": "afternoon = xgate (outcome and id), naive = xgate "
            f"(outcome) on all {sizes['mix']} messages", "figures": figures, "targets": targets}


def render(result: dict[str, Any]) -> str:
    figures, sizes = result["figures"], result["messages"]
    out = [(f"hot path: {sizes['mix']} workload messages ({sizes['structured']} conformant structured, "
            f"{sizes['binary']} conformant binary, {sizes['failing']} failing), every candidate from the same Kafka "
            f"records, {result['rounds']} rounds in rotating order; median [min-max]"),
           f"verdicts checked before timing: {result['agreement']}",
           f"`xgate check` and the afternoon script over {result['checked']} recorded lines (the mix, repeated)",
           f"{'us/message':<26}" + "".join(f"{kind:>24}" for kind in KINDS)]

    def cell(name: str) -> str:
        if name not in figures:
            return f"{'-':>24}"
        f = figures[name]
        return f"{f['median']:>9.2f} [{f['min']:.2f}-{f['max']:.2f}]".rjust(24)

    for candidate in ("floor", "native", "classify", "afternoon", "naive", "check", "afternoon-check"):
        label = "check (start-up out)" if candidate == "check" else candidate
        out.append(f"{label:<26}" + "".join(cell(f"us {candidate} {kind}") for kind in KINDS))
    f = figures["ms check start-up"]
    out.append(f"`xgate check` start-up (subtracted): {f['median']:.0f} ms [{f['min']:.0f}-{f['max']:.0f}]")
    out.append("ratios (per round, then median [min-max]):")
    for name, f in figures.items():
        if "/" in name:
            out.append(f"  {name:<28} {f['median']:>7.2f}x [{f['min']:.2f}-{f['max']:.2f}]")
    out.append("targets of issue 31, on the median (afternoon-check/check is how many times faster `xgate check` "
               "is than the afternoon script):")
    out += [f"  target {name}: {'met' if met else 'NOT met'}" for name, met in result["targets"].items()]
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=6000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--check-repeat", type=int, default=20, help="the mix's lines written this many times for "
                        "`xgate check` and the afternoon script")
    args = parser.parse_args()
    result = run(args.count, args.rounds, args.check_repeat)
    save("hotpath", result)
    print(render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
