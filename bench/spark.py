"""The Spark runner against single-process `xgate check`, on the same 100k Kafka messages, in one run.

    python -m bench.spark [--count 100000] [--rounds 5] [--master local[2]] [--no-kafka] [--no-batch] [--no-cluster]

Every candidate runs once to warm up, then once a round, the order rotated each round; medians and ranges
over rounds, and each candidate's rate over `check` is taken per round before its median.
Batch candidates (over one cached DataFrame of recorded lines):
  check          `xgate check` in this process (judge, write JSON lines), one core: the reference
  jvm-only       the same rows through Spark without Python (a no-op write): job and scan overhead
  arrow-identity mapInArrow that returns its input: JVM -> Python -> JVM transfer and worker overhead
  spark-validate validate_frame (mapInArrow over the shared compiler), the `xgate spark --batch` path
Streaming candidates (Apache Kafka, deploy/brokers/kafka.sh; skipped with --no-kafka), on one preloaded topic:
  kafka-read     Spark's Kafka connector (`format("kafka")`) alone: micro-batches counted, nothing else
  kafka-copy     Spark's own Kafka to Kafka copy, no judging: key, value and headers written to another topic
                 by the connector, in the same micro-batches (issue 31's baseline for the runner)
  kafka-runner   the whole runner as `xgate spark` runs by default: read, judge, route to Kafka topics, in one
                 pass (the destinations share a cluster, no audit asked for)
  kafka-runner-audit  the same with `--parquet`: each micro-batch persisted, produced, then written to Parquet
  xgate-run      `xgate run` (one process) on the same route with a fresh consumer group: timed from its first
                 routed message to the last (its startup and group join left out), rate over the rest
  cluster-runner kafka-runner on a standalone cluster of one master and two one-core workers
                 (deploy/spark/cluster.sh, started and stopped here; --no-cluster leaves it out): its driver is a
                 child process (bench/spark_cluster.py) asked for each round, its executors judge with the core
Results go to bench/results/spark.json and a table on stdout; every figure is also a ratio to `check`, and
the runner's rate is put beside `xgate run`'s (target: 1.5x) and beside Spark's own copy (target: 0.8x,
issue 31), and the cluster's runner beside both (issue 31 asks for its rate to be reported, no target).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from bench.kafka_harness import delete_topics_named
from bench.results import save
from bench.spark_cluster import ClusterRunner

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "config" / "demo"
BOOTSTRAP = "127.0.0.1:9092"
BATCH_ROWS = 20000


def identity(batches: Iterator[Any]) -> Iterator[Any]:
    yield from batches


def kafka_records(count: int) -> list[dict[str, Any]]:
    from gateway.testing.traffic import generate

    records: list[dict[str, Any]] = []
    seed = 0
    while len(records) < count:
        records += [r for r in generate(count, seed=100 + seed) if r.get("protocol") == "KAFKA"]
        seed += 1
    return records[:count]


def produce(topic: str, records: list[dict[str, Any]]) -> None:
    import asyncio

    from aiokafka import AIOKafkaProducer  # type: ignore[import-untyped]

    from gateway.recorded import envelope_from_record
    from protocol_adapters.kafka.mapping import outgoing_record

    async def send_all() -> None:
        async with AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, linger_ms=20, max_batch_size=1 << 20,
                                    max_request_size=4 << 20) as producer:
            pending = []
            for record in records:
                out = outgoing_record(envelope_from_record(record))
                pending.append(await producer.send(topic, out.value, key=out.key, headers=out.headers))
            await asyncio.gather(*pending)
    asyncio.run(send_all())


def batch_candidates(spark: Any, lines: list[str]) -> dict[str, Callable[[], None]]:
    import io

    from gateway.check import judge_lines
    from gateway.compiler import compile_registry
    from gateway.loader import load_snapshot
    from gateway.spark import bundle_from_paths, validate_frame
    from gateway.spark.batch import read_lines

    snapshot = load_snapshot([DEMO])
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    _, bundle = bundle_from_paths([DEMO])
    frame = read_lines(spark, io.StringIO("".join(lines))).repartition(spark.sparkContext.defaultParallelism * 2)
    frame = frame.cache()
    frame.count()

    def check() -> None:  # as `xgate check` does it: every verdict written as a JSON line
        with open(os.devnull, "w") as out:
            for verdict in judge_lines(ruleset, lines):
                out.write(json.dumps(verdict.as_dict(), default=str) + "\n")

    def jvm_only() -> None:
        frame.write.format("noop").mode("overwrite").save()

    def arrow_identity() -> None:
        frame.mapInArrow(identity, frame.schema).write.format("noop").mode("overwrite").save()

    def spark_validate() -> None:
        validate_frame(frame, bundle).write.format("noop").mode("overwrite").save()

    return {"check": check, "jvm-only": jvm_only, "arrow-identity": arrow_identity, "spark-validate": spark_validate}


def stream_candidates(spark: Any, records: list[dict[str, Any]], work: Path, phases: dict[str, dict[str, float]],
                      verdicts: dict[str, int] | None = None, run: str | None = None) -> dict[str, Callable[[], None]]:
    """`phases` receives where each runner's last round spent its time (see BatchWriter), `verdicts` their
    counts (every round of both runners must give the same). Every topic made is named `bench-{run}-...`.
    The route's config directory is `work / "config"`."""
    import yaml

    from gateway.settings import load_settings
    from gateway.spark import bundle_from_paths
    from gateway.spark.streaming import BatchWriter, plan_stream, start_query

    subprocess.run(["bash", str(ROOT / "deploy" / "brokers" / "kafka.sh"), "start"], check=True)
    run = run or uuid.uuid4().hex[:8]
    topic = f"bench-{run}-telemetry"
    produce(topic, records)
    config = work / "config"
    config.mkdir()
    for item in DEMO.iterdir():
        if item.is_file() and item.name != "gateway.yaml":  # the demo's documents (not its shadow folder)
            # a reading names the demo's topic in its contract: this run's topic instead, so that the traffic
            # is judged as the demo's (about 85% conformant), not dead-lettered whole for the topic
            text = item.read_text("utf-8").replace('"xgate-demo-telemetry"', json.dumps(topic))
            (config / item.name).write_text(text, "utf-8")
    gateway = {"routes": [{"source": "telemetry.in", "conformant": "telemetry.valid", "nonconformant": "telemetry.dlq"}],
               "endpoints": {"telemetry.in": {"uris": [f"tcp://{BOOTSTRAP}"], "options": {"topic": topic}},
                             "telemetry.valid": {"uris": [f"tcp://{BOOTSTRAP}"], "options": {"topic": f"{topic}.valid"}},
                             "telemetry.dlq": {"uris": [f"tcp://{BOOTSTRAP}"], "options": {"topic": f"{topic}.dlq"}}}}
    (config / "gateway.yaml").write_text(yaml.safe_dump(gateway), "utf-8")
    snapshot, bundle = bundle_from_paths([config])
    settings, _ = load_settings(config)
    plan = plan_stream(snapshot, settings, bundle)
    rounds = iter(range(1000))

    def kafka_read() -> None:
        counted: list[int] = []
        query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", BOOTSTRAP)
                 .option("subscribe", topic).option("startingOffsets", "earliest")
                 .option("maxOffsetsPerTrigger", str(BATCH_ROWS)).load()
                 .writeStream.foreachBatch(lambda df, _: counted.append(df.count()))
                 .option("checkpointLocation", str(work / f"read-{next(rounds)}"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        assert sum(counted) == len(records), f"read {sum(counted)} of {len(records)}"

    def kafka_copy() -> None:
        index = next(rounds)
        query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", BOOTSTRAP)
                 .option("subscribe", topic).option("startingOffsets", "earliest").option("includeHeaders", "true")
                 .option("maxOffsetsPerTrigger", str(BATCH_ROWS)).load()
                 .selectExpr("key", "value", "headers")
                 .writeStream.format("kafka").option("kafka.bootstrap.servers", BOOTSTRAP)
                 .option("topic", f"{topic}.copy-{index}")
                 .option("checkpointLocation", str(work / f"copy-{index}"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()

    def kafka_runner(audit: bool = False) -> None:
        index = next(rounds)
        writer = BatchWriter(plan, str(work / f"audit-{index}") if audit else None, out=open(os.devnull, "w"))
        query = start_query(spark, plan, writer, checkpoint=str(work / f"runner-{index}"), starting="earliest",
                            max_offsets=BATCH_ROWS, trigger_seconds=0, available_now=True)
        writer.follow(query)
        assert writer.totals.records == len(records), f"judged {writer.totals.records} of {len(records)}"
        name = "kafka-runner-audit" if audit else "kafka-runner"
        phases[name] = dict(writer.totals.phases, **{"micro-batches": writer.totals.batches})
        if verdicts is not None:
            if verdicts and verdicts != writer.totals.verdicts:
                raise RuntimeError(f"{name} gave {dict(writer.totals.verdicts)}, another round {verdicts}")
            verdicts.update(writer.totals.verdicts)

    def xgate_run() -> float:
        index = next(rounds)
        folder = work / f"xgate-{index}"
        folder.mkdir()
        for item in config.iterdir():
            (folder / item.name).write_bytes(item.read_bytes())
        fresh = dict(gateway, endpoints=dict(gateway["endpoints"]))
        fresh["endpoints"]["telemetry.in"] = {"uris": [f"tcp://{BOOTSTRAP}"],
                                              "options": {"topic": topic, "consumergroup": f"bench-{run}-{index}"}}
        (folder / "gateway.yaml").write_text(yaml.safe_dump(fresh), "utf-8")
        return timed_gateway(folder, len(records))

    return {"kafka-read": kafka_read, "kafka-copy": kafka_copy, "kafka-runner": kafka_runner,
            "kafka-runner-audit": partial(kafka_runner, audit=True), "xgate-run": xgate_run}


def routed_total(port: int) -> float:
    import re
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return 0.0
    return sum(float(v) for v in re.findall(r"^xgate_routed_messages_total\{[^}]*\} ([0-9.e+]+)$", text, re.MULTILINE))


def timed_gateway(folder: Path, count: int) -> float:
    """`xgate run` until it routed `count` messages; seconds from its first routed message, scaled to all."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "gateway.cli", "run", "--config", str(folder),
                                "--metrics-address", f"127.0.0.1:{port}"], cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 900
        first: tuple[float, float] | None = None
        while time.monotonic() < deadline and process.poll() is None:
            done = routed_total(port)
            now = time.perf_counter()
            if first is None and done > 0:
                first = (now, done)
            if done >= count and first is not None:
                return (now - first[0]) * count / max(count - first[1], 1)
            time.sleep(0.1)
        raise RuntimeError(f"xgate run routed {routed_total(port)} of {count} (exit {process.poll()})")
    finally:
        process.terminate()
        process.wait(60)


def measure(candidates: dict[str, Callable[[], float | None]], rounds: int,
            warm: bool = True) -> dict[str, list[float]]:
    """Seconds per round; a candidate that returns a figure times itself (xgate-run leaves its startup out)."""
    if warm:
        for run in candidates.values():  # warm-up: Python workers started, registries compiled on executors
            run()
    timings: dict[str, list[float]] = {name: [] for name in candidates}
    order = list(candidates)
    for index in range(rounds):
        shift = index % len(order)
        for name in order[shift:] + order[:shift]:  # every candidate once a round, the order rotated
            start = time.perf_counter()
            seconds = candidates[name]()
            timings[name].append(seconds if seconds is not None else time.perf_counter() - start)
    return timings


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--no-kafka", action="store_true", help="only the batch candidates")
    parser.add_argument("--no-batch", action="store_true", help="only the streaming candidates (and check)")
    parser.add_argument("--no-cluster", action="store_true",
                        help="without the standalone cluster's runner (deploy/spark/cluster.sh)")
    args = parser.parse_args()

    from gateway.spark.batch import build_session

    # one corpus for every candidate: the demo's Kafka telemetry (binary and structured CloudEvents, ~15% defects)
    records = kafka_records(args.count)
    lines = [json.dumps(r) + "\n" for r in records]
    phases: dict[str, dict[str, float]] = {}
    verdicts: dict[str, int] = {}
    cluster: ClusterRunner | None = None
    run = uuid.uuid4().hex[:8]  # the topics this run makes on the shared broker, deleted at its end
    with tempfile.TemporaryDirectory(prefix="xgate-bench-") as work:
        if not (args.no_kafka or args.no_cluster):  # its daemons start while this process sets up
            cluster = ClusterRunner(Path(work))
        spark = build_session(args.master, "xgate-bench", kafka=not args.no_kafka)
        try:
            batch = batch_candidates(spark, lines)
            candidates = {"check": batch["check"]} if args.no_batch else batch
            if not args.no_kafka:  # streaming and batch candidates share the rounds: one ratio to `check` each
                candidates.update(stream_candidates(spark, records, Path(work), phases, verdicts, run))
                if cluster is not None:
                    candidates["cluster-runner"] = cluster.connect(Path(work) / "config", len(records), BATCH_ROWS)
            timings = measure(candidates, args.rounds)
        finally:
            spark.stop()
            if cluster is not None:
                cluster.close()
            if not args.no_kafka:
                delete_topics_named(BOOTSTRAP, f"bench-{run}-")
    medians = {name: statistics.median(values) for name, values in timings.items()}
    # the rate over `check` per round (same round, same records), then its median and range
    over_check = {n: [timings["check"][r] / t for r, t in enumerate(v)] for n, v in timings.items()}
    result = {"messages": args.count, "rounds": args.rounds, "master": args.master, "kafka": not args.no_kafka,
              "messages_per_s": {n: args.count / m for n, m in medians.items()},
              "seconds": medians, "seconds_range": {n: [min(v), max(v)] for n, v in timings.items()},
              "rate_over_check": {n: statistics.median(v) for n, v in over_check.items()},
              "rate_over_check_range": {n: [min(v), max(v)] for n, v in over_check.items()},
              "runner_seconds_by_phase": phases}
    save("spark", result)
    print(f"spark: {args.count} messages, Spark {args.master}, "
          f"{'batch and streaming' if result['kafka'] else 'batch only'}, one warm-up run each, then "
          f"{args.rounds} rounds in rotating order; median [min-max]")
    print(f"{'candidate':<16} {'msg/s':>10} {'seconds':>18} {'rate vs check':>22}")
    for name in timings:
        low, high = result["seconds_range"][name]
        ratio_low, ratio_high = result["rate_over_check_range"][name]
        print(f"{name:<16} {result['messages_per_s'][name]:>10.0f} {medians[name]:>7.2f} [{low:.2f}-{high:.2f}]"
              f" {result['rate_over_check'][name]:>8.2f}x [{ratio_low:.2f}-{ratio_high:.2f}]")
    for runner, spent in phases.items():
        print(f"{runner}, last round: " + ", ".join(f"{name} {value:.1f}" for name, value in spent.items()))
    if "xgate-run" in medians:
        ratio = medians["xgate-run"] / medians["kafka-runner"]
        result["runner_over_xgate_run"] = ratio
        save("spark", result)
        print(f"streaming runner over `xgate run` (one process): {ratio:.2f}x (target 1.5x)")
    if "kafka-copy" in timings:
        # per round (same round, same records), then the median and range
        over_copy = [timings["kafka-copy"][r] / t for r, t in enumerate(timings["kafka-runner"])]
        result["runner_over_copy"] = statistics.median(over_copy)
        result["runner_over_copy_range"] = [min(over_copy), max(over_copy)]
        save("spark", result)
        met = "met" if result["runner_over_copy"] >= 0.8 else "NOT met"
        print(f"streaming runner over Spark's own Kafka copy: {result['runner_over_copy']:.2f}x "
              f"[{min(over_copy):.2f}-{max(over_copy):.2f}] (target >= 0.8, issue 31): {met}")
    if cluster is not None and "cluster-runner" in timings:
        report_cluster(result, timings, cluster, verdicts)
    return 0


def report_cluster(result: dict[str, Any], timings: dict[str, list[float]], cluster: ClusterRunner,
                   verdicts: dict[str, int]) -> None:
    """The cluster's runner beside local[2]'s and beside Spark's own copy: per round, then median and range."""
    over: dict[str, list[float]] = {base: [timings[base][r] / t for r, t in enumerate(timings["cluster-runner"])]
                                    for base in ("kafka-runner", "kafka-copy")}
    result["cluster"] = {
        "master": "standalone, 1 master + 2 workers of 1 core (deploy/spark/cluster.sh)",
        "executors": cluster.executors,
        "over_local_runner": statistics.median(over["kafka-runner"]),
        "over_local_runner_range": [min(over["kafka-runner"]), max(over["kafka-runner"])],
        "over_copy": statistics.median(over["kafka-copy"]),
        "over_copy_range": [min(over["kafka-copy"]), max(over["kafka-copy"])],
        "verdicts": cluster.verdicts, "local_runner_verdicts": verdicts,
        "runner_seconds_by_phase": cluster.phases}
    save("spark", result)
    cores = ", ".join(sorted({str(e["core_file"]) for e in cluster.executors}))
    print(f"cluster-runner: {len(cluster.executors)} executors, each judging with the core ({cores}); "
          "last round: " + ", ".join(f"{name} {value:.1f}" for name, value in cluster.phases.items()))
    same = "the same verdicts as" if cluster.verdicts == verdicts else "OTHER VERDICTS THAN"
    print(f"streaming runner on the two-worker cluster over local[2]'s: {result['cluster']['over_local_runner']:.2f}x "
          f"[{min(over['kafka-runner']):.2f}-{max(over['kafka-runner']):.2f}], over Spark's own copy (local[2]): "
          f"{result['cluster']['over_copy']:.2f}x [{min(over['kafka-copy']):.2f}-{max(over['kafka-copy']):.2f}]; "
          f"{same} local[2]'s runner ({', '.join(f'{k} {v}' for k, v in sorted(cluster.verdicts.items()))})")


if __name__ == "__main__":
    sys.exit(main())
