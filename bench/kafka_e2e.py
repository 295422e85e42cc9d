"""Kafka end to end on Apache Kafka: `xgate run` against a raw aiokafka pass-through, side by side in one run.

    python -m bench.kafka_e2e [--count 25000] [--rounds 5] [--latency-seconds 15] [--latency-rounds 5]
                              [--partitions 4] [--broker shared|private] [--quick]

Candidates, each a subprocess of this interpreter, each measured by the same consumer in this process:
  raw    an aiokafka pass-through without validation (`--forward`, below): an AIOKafkaConsumer assigned to
         every input partition (no consumer group, no commits; fetch settings at aiokafka's defaults, as
         xgate's source has them) reads with `getmany` and forwards every record (value, key, headers,
         timestamp) to the same partition of one output topic, one `create_batch`/`send_batch` per partition
         and fetch, without waiting for delivery before the next fetch: the ceiling for this client here
  xgate  `xgate run --config DIR` (python -m gateway.cli): the reference workload's registry (50 definitions,
         bench/workload.py) on its Kafka consumer endpoint with a fresh consumer group (autooffsetreset
         earliest, the default: it starts at the beginning of the topic), conformant messages to a `valid`
         topic, nonconformant ones to a `dlq` topic, every other setting at its default (inflight 4000)
Messages are bench.workload.messages records, produced as xgate's own Kafka sink would produce them
(gateway.recorded.envelope_from_record, then protocol_adapters.kafka.mapping.outgoing_record) on their
recorded partition, with one extra header in front: `bench-seq`, the record's number in the run. Both
candidates keep headers, key, body and timestamp on what they forward (xgate: gateway/runtime/remap.py,
same protocol; dead letters get `xgate-*` headers appended), so every output record names its input. Every
run checks that each input record arrived on an output topic (and counts duplicates), and that xgate's
valid/dlq split is the one `Ruleset.classify` gives offline for the same records.

Max rate: raw reads N records preloaded into a fresh input topic per round, by assignment, started after the
preload. xgate and xgate-w2 read through a consumer group, whose joins and rebalances would otherwise fall
inside the window: each is started on a fresh empty topic of its own, and its N records are preloaded once
the broker describes its group as Stable with one member per worker (every member holds its partitions).
Each rate is taken from the first output record to the moment all N have arrived: (N - records in the first
fetch) / that time. Startup (interpreter, registry compile, the group join) is left out that way, and shown
apart: from spawn to /readyz answering 200, and to the first output record. The preload runs beside xgate
on the same cores, which can only lower xgate's figure. The candidate's CPU time over the window gives its CPU cost per
message and the cores it kept busy (well below 1: it waited on the broker). Rounds are interleaved (raw then
xgate, then xgate then raw, ...); medians and ranges over rounds; the figures to watch are xgate/raw (target
>= 0.6, issue 31) and xgate-w2/raw (target >= 0.8), each the median of the rounds' ratios. Raw gets through N in about a second, so its rate is the noisier
one. The candidates' fetch minimum differs on purpose: raw keeps aiokafka's default (1 byte: the broker
answers as soon as anything is there), xgate's source paces its fetches as it does by default for every
operator (protocol_adapters/kafka/fetch_pacing.py: about 10 ms of the rate it reads at, once that is above
64 KiB); it is part of what xgate is, and the title line says so.

Latency: at half of xgate's median max rate (the same rate for raw), for --latency-seconds, records are
produced on a fixed schedule by librdkafka (bench/light_traffic.py): record i is due at i / rate, and every
5 ms the records whose time has come are produced (acks=all, idempotent, linger 1 ms). Its latency is the time
its output was read here (librdkafka too, each record timed as its fetch arrives) minus its due time (one
process, perf_counter), so a record the sender handed over late carries that wait too. (Until the eleventh
sitting the sender and the measuring consumer were aiokafka's, one `send` a record: this process then kept
0.6-0.8 of a core busy at 7,000-16,000 msg/s, more than either candidate, on the cores they share; librdkafka
keeps it at about 0.3.) The candidate must first have forwarded a probe record (its startup and group
join are over), then one warm-up second runs unmeasured. p50/p99 per candidate (median over rounds), p50
per second of the window (growing: more traffic than the system takes), the CPU the candidate, this process
and the whole machine spent over the window, and what xgate adds over raw: per round (xgate's run minus raw's of the same
round), median and range over the rounds; the target (p99 added <= 5 ms) is met only when the median meets
it. Both include the broker twice (into the input topic, out of the output topic). This process's own cyclic
garbage collector is off over the window (it keeps three objects per record, and walking them paused sending
and arrival timing for up to 380 ms, which read as the candidates' latency).

Brokers: `shared` (default) is the Apache Kafka of `deploy/brokers/kafka.sh start` on 127.0.0.1:9092 (other
work on the machine may use it too). `private` starts a Kafka of this run's own on free ports with its own
data directory (the same script, with XGATE_KAFKA_PORT, XGATE_KAFKA_CONTROLLER_PORT and XGATE_BROKER_STATE)
and stops and removes it afterwards. Either way the broker is a JVM on the same 2 cores as the candidates.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import light_traffic, workload
from bench.kafka_harness import (
    CANDIDATES,
    FETCH_WAIT_ENV,
    OUTPUT_FETCH_WAIT_MS,
    PROBE_INTERVAL,
    RATE_CANDIDATES,
    STARTUP_SECONDS,
    WARMUP_SECONDS,
    Arrivals,
    Broker,
    Wire,
    broker,
    collect,
    cycled,
    forward,
    group_stable,
    machine_cpu,
    output_roles,
    preload,
    source_fetch_wait_ms,
    spawn,
    wire_records,
    workers_of,
)
from bench.light_traffic import ArrivalWatch, PacedSender
from bench.results import save

# -- one run of each kind -------------------------------------------------------------------------------------


async def rate_run(name: str, broker: Broker, source: str, count: int, work: Path,
                   wires: list[Wire] | None = None) -> dict[str, Any]:
    """One max-rate run: messages/s from the first output record to the last.

    raw reads the round's preloaded `source` by assignment. A candidate that reads through a consumer group
    (xgate, xgate-w2) gets a fresh input topic of its own instead: it is started on the empty topic, and the
    `wires` are preloaded only once its group is Stable with every worker a member holding its partitions, so
    that the window measures forwarding, not the group's joins and rebalances (shown apart as ready_s). Its
    preload then runs beside it on the same cores, which can only lower its rate."""
    outputs = await broker.create(*(f"{name}-{role}" for role in output_roles(name)))
    consumer = await broker.consumer(outputs, fetch_max_wait_ms=OUTPUT_FETCH_WAIT_MS[broker.kind])
    arrivals = Arrivals.of(count, outputs, name)
    grouped = name != "raw" and wires is not None
    group = broker.group() if grouped else ""
    if grouped:
        (source,) = await broker.create(f"{name}-in")
    process = spawn(name, broker, source, outputs, work, group)
    ready = asyncio.create_task(process.ready_after())
    try:
        if grouped:
            assert wires is not None
            await ready
            await group_stable(broker, group, workers_of(name), process)
            await preload(broker, source, wires)
        await collect(consumer, arrivals, process)
        ready_s = ready.result() if ready.done() else None
    finally:
        ready.cancel()
        process.stop()
        await consumer.stop()
    result: dict[str, Any] = {"accounting": arrivals.accounting(), "ready_s": ready_s}
    if arrivals.first is None or arrivals.last is None:
        return result
    result["first_output_s"] = arrivals.first - process.spawned
    result["seconds"] = seconds = arrivals.last - arrivals.first
    if arrivals.complete and seconds > 0:
        forwarded = count - arrivals.first_count
        result["messages_per_s"] = forwarded / seconds
        if arrivals.cpu_first is not None and arrivals.cpu_last is not None:
            cpu, busy, total = (b - a for a, b in zip(arrivals.cpu_first, arrivals.cpu_last, strict=True))
            result["cpu_us_per_message"] = 1e6 * cpu / forwarded
            result["cpu_cores"] = cpu / seconds
            result["machine_busy_pct"] = 100 * busy / total if total else None
    return result


async def latency_run(name: str, broker: Broker, wires: list[Wire], rate: float, seconds: float,
                      work: Path) -> dict[str, Any]:
    """Probe until the candidate forwards, warm up, then `seconds` of paced traffic at `rate`; latencies in ms."""
    roles = output_roles(name)
    source, *outputs = await broker.create("lat-in", *(f"lat-{name}-{role}" for role in roles))
    warmup, measured = round(rate * WARMUP_SECONDS), round(rate * seconds)
    probes_max = int(STARTUP_SECONDS / PROBE_INTERVAL)
    # numbered up to the most that may be sent; `expected` is cut to what was sent before the final wait
    arrivals = Arrivals.of(probes_max + warmup + measured, outputs, name)
    records = cycled(wires, arrivals.expected)
    sent_ns: dict[int, int] = {}
    sender = PacedSender(broker.bootstrap, source)
    watch = ArrivalWatch(broker.bootstrap, outputs, broker.partitions, arrivals, OUTPUT_FETCH_WAIT_MS[broker.kind])
    process = spawn(name, broker, source, outputs, work)
    watch.start()
    try:
        probes = 0
        while arrivals.unique == 0 and probes < probes_max and watch.is_alive():
            process.check()
            seq, wire = next(records)
            sent_ns[seq] = time.perf_counter_ns()
            sender.send(wire)
            probes += 1
            await asyncio.sleep(PROBE_INTERVAL)
        if arrivals.unique == 0:
            if watch.error is not None:
                raise watch.error
            process.check()  # a candidate that exited raises here, with its log
            raise RuntimeError(f"{name}: no output within {STARTUP_SECONDS:.0f} s:\n{process.tail()}")
        # made before the clock starts, so that the window times sending, not making records
        paced = [next(records) for _ in range(warmup + measured)]
        # this process keeps a send time and an arrival time per record; its cyclic collector walking them
        # paused the sending and the timing of arrivals for 50-380 ms every second or two, which showed up as
        # the candidates' latency. The window runs with it off; the records are freed afterwards.
        gc.collect()
        gc.disable()

        # CPU at the end of the warm-up and of the window: the candidate's, this process's (the sender and the
        # measuring consumer), the whole machine's (the broker and the other candidate's leftovers included), to
        # tell a slow candidate from a saturated machine
        def snapshot() -> tuple[float, ...]:
            return (time.perf_counter(), process.cpu_seconds(), time.process_time(), *machine_cpu())

        cpu_before, cpu_after, paced_s = await asyncio.to_thread(sender.paced, paced, rate, warmup, sent_ns, snapshot)
        window = [seq for seq, _ in paced[warmup:]]
        await asyncio.to_thread(sender.flush)
        arrivals.expected = probes + warmup + measured
        await asyncio.to_thread(watch.join)
        if watch.error is not None:
            raise watch.error
    finally:
        gc.enable()
        watch.stop()
        process.stop()
        await asyncio.to_thread(watch.join)
    timed = [(arrivals.arrived_ns[seq] - sent_ns[seq]) / 1e6 for seq in window if seq in arrivals.arrived_ns]
    wall, cpu, own, busy, total = (b - a for a, b in zip(cpu_before, cpu_after, strict=True))
    result: dict[str, Any] = {"accounting": arrivals.accounting(), "measured": len(window),
                              "achieved_rate": (warmup + measured) / paced_s,
                              "cpu_cores": cpu / wall if wall > 0 else None,
                              # this process's (the sender and the measuring consumer): the load it adds itself
                              "bench_cores": own / wall if wall > 0 else None,
                              "machine_busy_pct": 100 * busy / total if total else None}
    if timed:
        ordered = sorted(timed)
        result.update(p50_ms=percentile(ordered, 50), p99_ms=percentile(ordered, 99), max_ms=ordered[-1])
        # p50 per second of the window: one that keeps growing means more traffic than the system takes
        step = max(1, round(rate))
        result["p50_ms_by_second"] = [percentile(sorted(timed[i:i + step]), 50) for i in range(0, len(timed), step)]
    return result


def percentile(ordered: list[float], pct: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered)) - 1))]


# -- the whole bench ------------------------------------------------------------------------------------------


def spread(values: list[float]) -> float:
    return 100 * (max(values) - min(values)) / statistics.median(values) if len(values) > 1 else 0.0


def median_of(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [run[key] for run in runs if run.get(key) is not None]
    return statistics.median(values) if values else None


async def measure(count: int, rounds: int, latency_seconds: float, latency_rounds: int, partitions: int,
                  kind: str) -> dict[str, Any]:
    wires, conformant = wire_records(count, partitions)
    rate_runs: dict[str, list[dict[str, Any]]] = {name: [] for name in RATE_CANDIDATES}
    latency_runs: dict[str, list[dict[str, Any]]] = {name: [] for name in CANDIDATES}
    half = 0.0
    async with broker(kind, partitions) as where:
        with tempfile.TemporaryDirectory(prefix="xgate-bench-e2e-") as folder:
            work = Path(folder)
            try:
                for index in range(rounds):
                    (source,) = await where.create("in")
                    await preload(where, source, wires)
                    # interleaved, and each candidate in turn reads the round's fresh topic first
                    shift = index % len(RATE_CANDIDATES)  # each candidate first in turn
                    for name in RATE_CANDIDATES[shift:] + RATE_CANDIDATES[:shift]:
                        rate_runs[name].append(await rate_run(name, where, source, count, work, wires))
                    await where.clean()
                xgate_rate = median_of(rate_runs["xgate"], "messages_per_s")
                if xgate_rate is None:
                    raise RuntimeError(f"xgate did not complete a max-rate run: {rate_runs['xgate']}")
                half = xgate_rate / 2
                for index in range(latency_rounds):
                    for name in CANDIDATES if index % 2 == 0 else CANDIDATES[::-1]:
                        latency_runs[name].append(await latency_run(name, where, wires, half, latency_seconds, work))
                        await where.clean()
            finally:
                await where.clean()
        bootstrap = where.bootstrap
    result = summarize(rate_runs, latency_runs, count, conformant)
    result.update(messages=count, rounds=rounds, partitions=partitions, broker=f"{kind} Kafka on {bootstrap}",
                  latency_rate=half, latency_seconds=latency_seconds, latency_rounds=latency_rounds,
                  fetch_wait_ms=source_fetch_wait_ms(), tick_ms=light_traffic.TICK_SECONDS * 1000,
                  runs={"rate": rate_runs, "latency": latency_runs})
    return result


def summarize(rate_runs: dict[str, list[dict[str, Any]]], latency_runs: dict[str, list[dict[str, Any]]],
              count: int, conformant: int) -> dict[str, Any]:
    rates = {name: [r["messages_per_s"] for r in runs if "messages_per_s" in r] for name, runs in rate_runs.items()}
    rate = {name: statistics.median(values) if values else None for name, values in rates.items()}
    # the house method: each candidate over raw in the same round (they ran back to back), then median and range
    by_round = {name: [r["messages_per_s"] / w["messages_per_s"]
                       for r, w in zip(rate_runs.get(name, []), rate_runs["raw"], strict=False)
                       if r.get("messages_per_s") and w.get("messages_per_s")] for name in ("xgate", "xgate-w2")}
    ratios = {name: {"median": statistics.median(v), "min": min(v), "max": max(v), "rounds": v}
              for name, v in by_round.items() if v}
    ratio = ratios["xgate"]["median"] if "xgate" in ratios else None
    ratio_w2 = ratios["xgate-w2"]["median"] if "xgate-w2" in ratios else None
    latency = {name: {key: median_of(runs, key) for key in ("p50_ms", "p99_ms", "max_ms", "achieved_rate",
                                                             "cpu_cores", "bench_cores", "machine_busy_pct")}
               for name, runs in latency_runs.items()}
    # what xgate adds, per round (its run beside raw's of the same round), then median and range over rounds
    paired = list(zip(latency_runs["xgate"], latency_runs["raw"], strict=False))
    by_round = {pct: [x[f"{pct}_ms"] - r[f"{pct}_ms"] for x, r in paired
                      if x.get(f"{pct}_ms") is not None and r.get(f"{pct}_ms") is not None] for pct in ("p50", "p99")}
    added = {pct: {"median": statistics.median(v), "min": min(v), "max": max(v), "rounds": v}
             for pct, v in by_round.items() if v}
    every = [run for runs in (*rate_runs.values(), *latency_runs.values()) for run in runs]
    split = [[r["accounting"]["by_topic"].get(role, 0) for role in ("valid", "dlq")] for r in rate_runs["xgate"]]
    return {
        "messages_per_s": rate,
        "rate_runs": rates,
        "rate_range": {name: [min(v), max(v)] for name, v in rates.items() if v},
        "over_raw": ratios,
        "spread_pct": {name: spread(values) for name, values in rates.items() if values},
        "xgate_over_raw": ratio,
        "xgate_w2_over_raw": ratio_w2,
        "cpu_us_per_message": {name: median_of(runs, "cpu_us_per_message") for name, runs in rate_runs.items()},
        "cpu_cores": {name: median_of(runs, "cpu_cores") for name, runs in rate_runs.items()},
        "machine_busy_pct": {name: median_of(runs, "machine_busy_pct") for name, runs in rate_runs.items()},
        "startup_s": {"xgate_ready": median_of(rate_runs["xgate"], "ready_s"),
                      "xgate_first_output": median_of(rate_runs["xgate"], "first_output_s"),
                      "raw_first_output": median_of(rate_runs["raw"], "first_output_s")},
        "latency_ms": latency,
        "added_latency_ms": added,
        "accounting": {"lost": sum(r["accounting"]["lost"] for r in every),
                       "duplicates": sum(r["accounting"]["duplicates"] for r in every),
                       "expected_valid_dlq": [conformant, count - conformant],
                       "xgate_valid_dlq": split,
                       "xgate_split_as_classify": all(s == [conformant, count - conformant] for s in split)},
        "targets": {"xgate_over_raw >= 0.60 (one process)": ratio is not None and ratio >= 0.60,
                    "xgate --workers 2 over raw >= 0.80": ratio_w2 is not None and ratio_w2 >= 0.80,
                    "added p99 <= 5 ms (median over rounds)": "p99" in added and added["p99"]["median"] <= 5.0},
    }


def run(count: int = 25000, rounds: int = 5, latency_seconds: float = 15.0, latency_rounds: int = 5,
        partitions: int = 4, broker_kind: str = "shared") -> dict[str, Any]:
    started = time.monotonic()
    result = asyncio.run(measure(count, rounds, latency_seconds, latency_rounds, partitions, broker_kind))
    result["bench_seconds"] = time.monotonic() - started
    return result


def render(result: dict[str, Any]) -> str:
    def num(value: float | None, fmt: str) -> str:
        return "-" if value is None else format(value, fmt)

    title = (f"kafka end to end ({result['broker']}, {result['partitions']} partitions): {result['messages']} "
             f"workload messages preloaded, {result['rounds']} interleaved max-rate rounds; "
             f"{result['latency_rounds']} latency rounds of {result['latency_seconds']:g} s at "
             f"{result['latency_rate']:.0f} msg/s sent every {result.get('tick_ms', 5):g} ms; source fetch_max_wait_ms "
             f"{result.get('fetch_wait_ms', '?')}; fetch minimum: raw aiokafka's 1 byte, xgate's source paced "
             "(fetch_pacing_ms 10: about 10 ms of the rate it reads at, above 64 KiB); "
             "median [min-max] over rounds")
    header = (f"{'candidate':<10} {'msg/s':>20} {'cpu us/msg':>11} {'cores':>6} {'p50 ms':>8} "
              f"{'p99 ms':>8}")
    lines = [title, header]
    for name in RATE_CANDIDATES:
        latency = result["latency_ms"].get(name, {})
        low, high = result.get("rate_range", {}).get(name, (None, None))
        lines.append(f"{name:<10} {num(result['messages_per_s'][name], '7.0f')} [{num(low, '.0f')}-{num(high, '.0f')}]"
                     f"{'':>1} {num(result['cpu_us_per_message'][name], '11.0f')} "
                     f"{num(result['cpu_cores'][name], '6.2f')} "
                     f"{num(latency.get('p50_ms'), '8.1f')} {num(latency.get('p99_ms'), '8.1f')}")
    for name, f in result.get("over_raw", {}).items():
        lines.append(f"{name} over raw: {f['median']:.2f}x [{f['min']:.2f}-{f['max']:.2f}] (each round's ratio, "
                     "then median and range; by round " + "/".join(f"{r:.2f}" for r in f["rounds"]) + ")")
    added = result["added_latency_ms"]
    for pct, f in added.items():
        lines.append(f"added latency {pct}: median {f['median']:+.1f} ms [{f['min']:+.1f} to {f['max']:+.1f}] over "
                     f"{len(f['rounds'])} rounds (each xgate round minus raw's of the same round)")
    window = [f"{name} {num(result['latency_ms'][name].get('cpu_cores'), '.2f')} cores (the sender and measuring "
              f"consumer {num(result['latency_ms'][name].get('bench_cores'), '.2f')}) with the machine "
              f"{num(result['latency_ms'][name].get('machine_busy_pct'), '.0f')}% busy, p99 by round "
              + "/".join(num(run.get("p99_ms"), ".0f") for run in result["runs"]["latency"][name]) + " ms"
              for name in CANDIDATES if result["latency_ms"].get(name)]
    if window:
        lines.append("latency window: " + "; ".join(window))
    startup = result["startup_s"]
    lines.append(f"startup (not in the rate): xgate ready {num(startup['xgate_ready'], '.1f')} s, first output "
                 f"{num(startup['xgate_first_output'], '.1f')} s; raw first output "
                 f"{num(startup['raw_first_output'], '.1f')} s")
    books = result["accounting"]
    expected = books["expected_valid_dlq"]
    lines.append(f"accounting: {books['lost']} lost, {books['duplicates']} duplicates; xgate valid/dlq "
                 f"{'as' if books['xgate_split_as_classify'] else 'NOT as'} the generator made them (classify agrees) "
                 f"({expected[0]}/{expected[1]})")
    lines += [f"target {name}: {'met' if met else 'NOT met'}" for name, met in result["targets"].items()]
    lines.append(f"bench: {result['bench_seconds']:.0f} s")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=25000, help="messages preloaded for each max-rate round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--latency-seconds", type=float, default=15.0, help="paced traffic measured per latency run")
    parser.add_argument("--latency-rounds", type=int, default=5)
    parser.add_argument("--partitions", type=int, default=4, help="of every topic (kafka.sh's default is 4)")
    parser.add_argument("--broker", choices=("shared", "private"), default="shared",
                        help="the shared Kafka on 127.0.0.1:9092, or a private one for this run")
    parser.add_argument("--quick", action="store_true", help="small counts, for trying the bench")
    parser.add_argument("--fetch-wait-ms", type=int, help="fetch_max_wait_ms of both candidates' source consumers "
                        "(default 500, aiokafka's); lower trades requests for latency at low rates")
    parser.add_argument("--tick-ms", type=float, help="how often the latency runs' sender produces the records "
                        "due (default 5): the input's batches per second at the same rate")
    # the raw candidate's own process (the bench starts it)
    parser.add_argument("--forward", nargs=2, metavar=("SOURCE", "TARGET"), help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", default=workload.BOOTSTRAP, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.forward:
        source, target = args.forward
        asyncio.run(forward(args.bootstrap, source, target, args.partitions))
        return 0
    if args.fetch_wait_ms is not None:
        os.environ[FETCH_WAIT_ENV] = str(args.fetch_wait_ms)
    if args.tick_ms is not None:
        light_traffic.TICK_SECONDS = args.tick_ms / 1000
    if args.quick:
        args.count, args.rounds, args.latency_seconds, args.latency_rounds = 10000, 1, 2.0, 1
    result = run(args.count, args.rounds, args.latency_seconds, args.latency_rounds, args.partitions, args.broker)
    save("kafka_e2e", result)
    print(render(result))
    return 0 if result["accounting"]["lost"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
