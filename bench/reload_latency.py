"""Judging latency while a large registry reloads (issue 35, item 10), side by side with the same route idle of
reloads, in one run.

    python -m bench.reload_latency [--definitions 5000] [--rate 2000] [--rounds 3]

`xgate run`'s engine and reloader (gateway/runtime/engine.py, reload.py) on in-memory adapters judge the
reference workload's messages (bench/workload.py) at a steady --rate, each message's latency taken from its
publish to its delivery. Each round: 3 s with the workload's 50 definitions (before), then the document is
replaced by one of --definitions distinct definitions (bench/memory.py's scaled document, the same endpoint)
and the reloader reloads it while traffic goes on (during: from the reload's start to its end), then 2 s
with the large registry in force (after). p50, p99 and max per window, median over rounds; the reload's
own duration too. Messages are published on the same event loop, so a stall of the loop also holds the
publishing: a probe that sleeps 5 ms at a time measures the stalls themselves (how late it wakes), the
longest and how many exceed 50 ms. Issue 35 found the judging p99 at 385 ms while a 5,000-definition document reloaded.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import workload
from bench.memory import scaled_document
from bench.results import save
from gateway.compiler import compile_registry
from gateway.envelope import Envelope
from gateway.loader import load_snapshot
from gateway.recorded import envelope_from_record
from gateway.routes.resolve import resolve_routes
from gateway.runtime import heap
from gateway.runtime.engine import Engine
from gateway.runtime.reload import Reloader
from gateway.settings import Settings
from gateway.testing import memory
from protocol_adapters.base import EndpointConfig

SEQ = "bench-seq"
TICK = 0.01
PROBE = 0.005  # the loop probe's sleep: how late it wakes is how long the loop was held
BEFORE, AFTER = 3.0, 2.0
_names = itertools.count()


class _Arrivals:
    """When each message reached its destination, by its sequence number."""

    def __init__(self) -> None:
        self.at: dict[int, float] = {}


def _on_memory(config: EndpointConfig, broker: str) -> EndpointConfig:
    """The documents' Kafka endpoint, its messages carried by the in-memory broker (queue: its id): the routes
    the reloader resolves from the documents are the ones running, so a reload keeps or restarts them as
    `xgate run` would."""
    return replace(config, protocol="MEMORY", uris=(f"memory://{broker}",), options={"queue": config.endpoint_id})


def _adapters(broker: str, arrivals: _Arrivals) -> tuple[Any, Any]:
    class TimedSink(memory.MemorySink):
        async def send(self, envelope: Envelope) -> None:
            await super().send(envelope)
            for name, value in envelope.fields.get("headers") or ():
                if name == SEQ:
                    arrivals.at[int(value)] = time.perf_counter()
    return (lambda config: memory.create_source(_on_memory(config, broker)),
            lambda config: TimedSink(_on_memory(config, broker)))


def _percentiles(latencies: list[float]) -> dict[str, float]:
    if not latencies:
        return {"p50_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0, "messages": 0}
    ordered = sorted(latencies)
    return {"p50_ms": ordered[len(ordered) // 2] * 1e3, "p99_ms": ordered[int(len(ordered) * 0.99)] * 1e3,
            "max_ms": ordered[-1] * 1e3, "messages": len(ordered)}


async def _round(small: str, large: str, envelopes: list[Envelope], rate: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="xgate-bench-reload-") as name:
        folder = Path(name)
        document = folder / "workload.xreg.json"
        document.write_text(small, "utf-8")
        snapshot = load_snapshot([folder])
        broker = f"reload-bench-{next(_names)}"
        arrivals = _Arrivals()
        routes, problems = resolve_routes(snapshot.registry, Settings())
        assert not problems, problems
        create_source, create_sink = _adapters(broker, arrivals)
        engine = Engine(routes, compile_registry(snapshot.registry, snapshot.digest),
                        create_source=create_source, create_sink=create_sink)
        reloader = Reloader(folder, engine, snapshot, Settings())
        queue = memory.memory_broker(broker)
        task = asyncio.create_task(engine.run())
        while not engine.ready()[0]:
            await asyncio.sleep(0.01)
        heap.settle()
        sent: dict[int, float] = {}
        marks: dict[str, float] = {}
        stop = asyncio.Event()

        async def feed() -> None:
            per_tick = max(int(rate * TICK), 1)
            numbers = itertools.count()
            source = itertools.cycle(envelopes)
            next_tick = time.perf_counter()
            while not stop.is_set():
                for _ in range(per_tick):
                    number = next(numbers)
                    envelope = next(source)
                    headers = [*(envelope.fields.get("headers") or ()), (SEQ, str(number).encode())]
                    sent[number] = time.perf_counter()
                    queue.publish(workload.ENDPOINT, replace(envelope, fields={**envelope.fields, "headers": headers}))
                for address in ("workload.valid", "workload.dlq"):
                    queue.queue(address).ready.clear()  # a consumer reading them: the queues stay short
                next_tick += TICK
                await asyncio.sleep(max(next_tick - time.perf_counter(), 0))

        lags: list[tuple[float, float]] = []  # (when, how late): the event loop's stalls, which hold every route

        async def probe() -> None:
            while not stop.is_set():
                due = time.perf_counter() + PROBE
                await asyncio.sleep(PROBE)
                now = time.perf_counter()
                lags.append((now, now - due))

        feeder = asyncio.create_task(feed())
        prober = asyncio.create_task(probe())
        marks["start"] = time.perf_counter()
        await asyncio.sleep(BEFORE)
        document.write_text(large, "utf-8")
        marks["reload"] = time.perf_counter()
        outcome = await reloader.reload("bench: a large document")
        marks["reloaded"] = time.perf_counter()
        await asyncio.sleep(AFTER)
        marks["end"] = time.perf_counter()
        stop.set()
        await feeder
        await prober
        await asyncio.sleep(0.5)  # the last messages land
        engine.request_stop()
        await asyncio.wait_for(task, 30)
        definitions = engine.ref.ruleset.definition_count

    def window(start: str, end: str) -> dict[str, float]:
        figures = _percentiles([arrivals.at[n] - at for n, at in sent.items()
                                if marks[start] <= at < marks[end] and n in arrivals.at])
        late = [lag for at, lag in lags if marks[start] <= at < marks[end]]
        figures["longest_stall_ms"] = max(late, default=0.0) * 1e3
        figures["stalls_over_50ms"] = sum(1 for lag in late if lag >= 0.05)
        return figures
    lost = sum(1 for n in sent if n not in arrivals.at)
    return {"outcome": outcome, "definitions_after": definitions, "reload_s": marks["reloaded"] - marks["reload"],
            "before": window("start", "reload"), "during": window("reload", "reloaded"),
            "after": window("reloaded", "end"), "undelivered": lost}


def run(definitions: int = 5000, rate: float = 2000, rounds: int = 3) -> dict[str, Any]:
    small = json.dumps(workload.registry_document())
    large = json.dumps(scaled_document(definitions))
    envelopes = [envelope_from_record(r) for r in workload.messages(5000)]
    runs = [asyncio.run(_round(small, large, envelopes, rate)) for _ in range(rounds)]

    def median(window: str, key: str) -> float:
        return float(statistics.median(r[window][key] for r in runs))
    return {"definitions": definitions, "rate": rate, "rounds": rounds, "document_bytes": len(large),
            "reload_s": statistics.median(r["reload_s"] for r in runs),
            "windows": {w: {k: median(w, k) for k in ("p50_ms", "p99_ms", "max_ms", "longest_stall_ms",
                                                      "stalls_over_50ms")} for w in ("before", "during", "after")},
            "runs": runs}


def render(result: dict[str, Any]) -> str:
    lines = [(f"judging latency while {result['definitions']:,} definitions ({result['document_bytes'] / 1e6:.1f} MB) "
              f"reload, at {result['rate']:.0f} msg/s, {result['rounds']} rounds (medians): "
              f"reload {result['reload_s']:.1f} s")]
    for window, figures in result["windows"].items():
        lines.append(f"  {window:<7} p50 {figures['p50_ms']:7.1f} ms   p99 {figures['p99_ms']:7.1f} ms   "
                     f"max {figures['max_ms']:7.1f} ms   longest loop stall {figures['longest_stall_ms']:6.1f} ms, "
                     f"{figures['stalls_over_50ms']:.0f} over 50 ms")
    outcomes = {r["outcome"] for r in result["runs"]}
    lost = sum(r["undelivered"] for r in result["runs"])
    lines.append(f"  reload outcome {', '.join(sorted(outcomes))}; undelivered at the end {lost}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reload_latency", description=__doc__.splitlines()[0])
    parser.add_argument("--definitions", type=int, default=5000)
    parser.add_argument("--rate", type=float, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    result = run(args.definitions, args.rate, args.rounds)
    print(render(result))
    save("reload_latency", result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
