"""The Spark streaming runner on Apache Kafka (started by deploy/brokers/kafka.sh).

Recorded Kafka messages are produced to a fresh topic; the runner reads them with Spark's
own Kafka connector (`format("kafka")`, resolved by gateway/spark/connector.py), judges and routes them, and writes the Parquet audit and
the Kafka destinations. Each verdict must equal the line `xgate check` gives for the same
record (with the topic, partition and timestamp it was actually read with).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("pyspark")

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from gateway.check import judge_lines
from gateway.compiler import compile_registry
from gateway.loader import load_snapshot
from gateway.recorded import envelope_from_record
from gateway.settings import load_settings
from gateway.spark.shipping import bundle_from_paths
from gateway.spark.streaming import BatchWriter, plan_stream, start_query
from gateway.spark.validate import verdict_line
from gateway.testing.traffic import generate
from protocol_adapters.kafka.mapping import outgoing_record
from tests.integration import traffic as it_traffic
from tests.integration.harness import start_broker

pytestmark = pytest.mark.integration  # a real broker on 127.0.0.1

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "config" / "demo"
BINDINGS_DOC = REPO / "tests" / "documents" / "cloudevents" / "bindings.xreg.json"
BOOTSTRAP = "127.0.0.1:9092"
URI = f"tcp://{BOOTSTRAP}"
# every record is produced with an explicit timestamp, so `check` sees the same one; a recent one, or the broker's
# time-based retention may delete the records before they are read
STAMP = int(time.time() * 1000)


@pytest.fixture(scope="module")
def spark(spark_session: Any) -> Any:
    start_broker("kafka")
    return spark_session  # tests/spark/conftest.py: one session (with the Kafka connector) for the package


def fresh_topics(run: str) -> dict[str, str]:
    """This run's topics (`in`, `valid`, `dlq`, `unknown`), created here with the broker's default 4 partitions.
    Created before the query starts rather than by Spark's producer on its first write: an auto-created topic
    once left one partition's record unsent until the producer's 120 s delivery timeout failed the query (CI)."""
    topics = {name: f"spark-{run}-{name}" for name in ("in", "valid", "dlq", "unknown")}

    async def create() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, 4, 1) for topic in topics.values()])
        finally:
            await admin.close()
    asyncio.run(create())
    return topics


def produce(topic: str, records: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """Produce each recorded Kafka message as it is on the wire; return where each landed (partition, offset)."""
    async def send_all() -> list[tuple[int, int]]:
        async with AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, linger_ms=20, acks="all") as producer:
            confirmations = []
            for index, record in enumerate(records):
                out = outgoing_record(envelope_from_record(record))
                confirmations.append(await producer.send(topic, out.value, key=out.key, headers=out.headers,
                                                         timestamp_ms=STAMP + index))
            return [(m.partition, m.offset) for m in await asyncio.gather(*confirmations)]
    return asyncio.run(send_all())


def expected_lines(paths: list[Path], topic: str, records: list[dict[str, Any]],
                   placed: list[tuple[int, int]]) -> dict[tuple[int, int], str]:
    """`xgate check`'s verdict for each record, as read back: its topic, partition and timestamp filled in."""
    snapshot = load_snapshot(list(paths))
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    lines = [json.dumps({**record, "topic": topic, "partition": partition, "timestamp": STAMP + index}) + "\n"
             for index, (record, (partition, _)) in enumerate(zip(records, placed, strict=True))]
    verdicts = [json.dumps(v.as_dict(), default=str) for v in judge_lines(ruleset, lines)]
    return dict(zip(placed, verdicts, strict=True))


def config_dir(tmp_path: Path, documents: list[Path], gateway: dict[str, Any] | None) -> Path:
    folder = tmp_path / "config"
    folder.mkdir()
    for document in documents:
        if document.is_dir():
            for item in document.iterdir():
                if item.is_file() and item.name not in ("gateway.yaml", "gateway.yml"):
                    shutil.copy(item, folder / item.name)
        else:
            shutil.copy(document, folder / document.name)
    if gateway is not None:
        (folder / "gateway.yaml").write_text(yaml.safe_dump(gateway), "utf-8")
    return folder


def routed_config(tmp_path: Path, unmatched: bool) -> tuple[dict[str, str], Path]:
    """The integration registry on this run's fresh topics (`in`, `valid`, `dlq`, `unknown`), its source routed by
    labels to `valid` and `dlq` (and `unknown` for unmatched messages); the topics and the config folder."""
    topics = fresh_topics(uuid.uuid4().hex[:8])
    options = {name: {"uris": [URI], "topic": topic} for name, topic in topics.items()}
    document = it_traffic.registry("KAFKA", options)
    labels = {"xgate.route.conformant": "valid", "xgate.route.nonconformant": "dlq"}
    if unmatched:
        labels["xgate.route.unmatched"] = "unknown"
    document["endpoints"]["in"]["labels"] = labels
    (tmp_path / "it.xreg.json").write_text(json.dumps(document), "utf-8")
    return topics, config_dir(tmp_path, [tmp_path / "it.xreg.json"], None)


def run_stream(spark: Any, folder: Path, tmp_path: Path, max_offsets: int | None = None) -> tuple[Any, Path]:
    """The runner in this process, on everything the topics hold now; returns the writer and the audit folder."""
    snapshot, bundle = bundle_from_paths([folder])
    settings, problems = load_settings(folder)
    assert not problems
    plan = plan_stream(snapshot, settings, bundle)
    writer = BatchWriter(plan, str(tmp_path / "audit"))
    query = start_query(spark, plan, writer, checkpoint=str(tmp_path / "checkpoint"), starting="earliest",
                        max_offsets=max_offsets, trigger_seconds=0, available_now=True)
    assert writer.follow(query, timeout=300), "the query did not end within 300 s"
    assert query.exception() is None, query.exception()
    assert not query.isActive
    return writer, tmp_path / "audit"


def audit_rows(folder: Path) -> list[dict[str, Any]]:
    import pyarrow.dataset as ds

    return ds.dataset(str(folder), format="parquet", partitioning="hive").to_table().to_pylist()


def assert_stream_parity(rows: list[dict[str, Any]], topic: str, expected: dict[tuple[int, int], str]) -> None:
    got = {(r["partition"], r["offset"]): verdict_line(r) for r in rows if r["topic"] == topic}
    assert len(got) == len([r for r in rows if r["topic"] == topic]), "a record was written twice"
    assert set(got) == set(expected), "records missing from the audit"
    for position, line in expected.items():
        assert got[position] == line, f"partition/offset {position}"


def read_topic(topic: str, count: int, timeout: float = 60) -> list[Any]:
    """Every record of the topic (aiokafka ConsumerRecords), reading until `count` arrived, then a second more."""
    async def read() -> list[Any]:
        async with AIOKafkaProducer(bootstrap_servers=BOOTSTRAP) as producer:
            numbers = await producer.partitions_for(topic)  # waits for the topic's metadata
        consumer = AIOKafkaConsumer(bootstrap_servers=BOOTSTRAP, enable_auto_commit=False)
        await consumer.start()
        try:
            # assigned, not subscribed: no consumer-group join to wait for
            partitions = [TopicPartition(topic, p) for p in sorted(numbers)]
            consumer.assign(partitions)
            await consumer.seek_to_beginning(*partitions)
            messages: list[Any] = []
            deadline = time.monotonic() + timeout
            while len(messages) < count and time.monotonic() < deadline:
                for batch in (await consumer.getmany(timeout_ms=500)).values():
                    messages += batch
            for batch in (await consumer.getmany(timeout_ms=1000)).values():  # nothing more turns up
                messages += batch
            return messages
        finally:
            await consumer.stop()
    return asyncio.run(read())


# -- parity -------------------------------------------------------------------------------------------------------

def test_integration_traffic_routed_and_identical_to_check(spark: Any, tmp_path: Path) -> None:
    topics, folder = routed_config(tmp_path, unmatched=True)
    records = it_traffic.mixed("KAFKA", 700)
    placed = produce(topics["in"], records)
    expected = expected_lines([folder], topics["in"], records, placed)

    writer, audit = run_stream(spark, folder, tmp_path, max_offsets=300)
    rows = audit_rows(audit)
    assert_stream_parity(rows, topics["in"], expected)
    assert writer.totals.records == len(records) and writer.totals.batches >= 3

    # every record reached the destination its verdict and route call for, dead letters with the reason
    routed = Counter(r["destination"] for r in rows)
    assert set(routed) == {"valid", "dlq", "unknown"}
    arrivals = {}
    for name in ("valid", "dlq", "unknown"):
        arrived = arrivals[name] = read_topic(topics[name], routed[name])
        assert len(arrived) == routed[name], name
        if name != "valid":
            headers = dict(arrived[0].headers)
            assert headers["xgate-verdict"] == b"nonconformant"
            assert headers["xgate-source-endpoint"] == b"in"
            assert json.loads(headers["xgate-violations"])
    valid_bodies = sorted(m.value for m in arrivals["valid"])  # the topic as read above, not read twice
    assert valid_bodies == sorted(r["value"] for r in rows if r["destination"] == "valid")


def test_single_pass_without_audit_routes_and_counts_as_check_judges(spark: Any, tmp_path: Path) -> None:
    """No --parquet, one cluster: the judged rows go straight to the Kafka sink, the counts come from the
    executors' accumulator. Each destination holds exactly the records `xgate check`'s verdicts send there."""
    topics, folder = routed_config(tmp_path, unmatched=True)
    records = it_traffic.mixed("KAFKA", 600)
    placed = produce(topics["in"], records)
    expected = {position: json.loads(line) for position, line in
                expected_lines([folder], topics["in"], records, placed).items()}
    values = dict(zip(placed, (outgoing_record(envelope_from_record(r)).value for r in records), strict=True))

    snapshot, bundle = bundle_from_paths([folder])
    settings, problems = load_settings(folder)
    assert not problems
    writer = BatchWriter(plan_stream(snapshot, settings, bundle), None)
    assert writer.single_pass is not None
    query = start_query(spark, writer.plan, writer, checkpoint=str(tmp_path / "checkpoint"), starting="earliest",
                        max_offsets=250, trigger_seconds=0, available_now=True)
    assert writer.follow(query, timeout=300) and query.exception() is None, query.exception()

    def destination(verdict: dict[str, Any]) -> str:
        if verdict["verdict"] == "conformant":
            return "valid"
        return "dlq" if verdict["messageid"] is not None else "unknown"

    wanted = Counter(destination(v) for v in expected.values())
    assert set(wanted) == {"valid", "dlq", "unknown"}
    totals = writer.totals
    assert totals.records == len(records) and totals.batches == 3
    assert totals.verdicts == Counter(v["verdict"] for v in expected.values())
    assert totals.destinations == wanted and totals.actions == {"forwarded": wanted["valid"],
                                                                "deadlettered": len(records) - wanted["valid"]}
    for name in ("valid", "dlq", "unknown"):
        arrived = read_topic(topics[name], wanted[name])
        assert sorted(m.value for m in arrived) == sorted(values[p] for p, v in expected.items()
                                                          if destination(v) == name), name
        if name != "valid":
            assert all(dict(m.headers)["xgate-verdict"] == b"nonconformant" for m in arrived)


def test_single_pass_counts_every_batch_after_idle_triggers(spark: Any, tmp_path: Path) -> None:
    """A processing-time trigger that finds no new data reports the next batch's id without running it; the
    batch that runs under that id later must still be counted."""
    topics, folder = routed_config(tmp_path, unmatched=False)
    records = it_traffic.mixed("KAFKA", 300)
    produce(topics["in"], records[:100])
    snapshot, bundle = bundle_from_paths([folder])
    settings, _ = load_settings(folder)
    writer = BatchWriter(plan_stream(snapshot, settings, bundle), None)
    query = start_query(spark, writer.plan, writer, checkpoint=str(tmp_path / "checkpoint"), starting="earliest",
                        max_offsets=None, trigger_seconds=0.5, available_now=False)
    try:
        def counted(total: int) -> None:
            deadline = time.monotonic() + 120
            while writer.totals.records < total and time.monotonic() < deadline:
                assert not writer.follow(query, timeout=1), query.exception()
            assert writer.totals.records == total

        counted(100)
        ran = query.recentProgress[-1].batchId
        deadline = time.monotonic() + 30  # Spark reports a trigger without data every 10 s
        while query.recentProgress[-1].batchId == ran and time.monotonic() < deadline:
            time.sleep(0.5)
        idle = query.recentProgress[-1]
        assert idle.batchId == ran + 1 and "addBatch" not in idle.durationMs and idle.numInputRows == 0
        produce(topics["in"], records[100:])  # run as batch ran + 1, the id the idle report named
        counted(300)
    finally:
        query.stop()
    assert writer.totals.verdicts.total() == 300 and query.exception() is None


def test_cloudevents_bindings_kafka_identical_to_check(spark: Any, tmp_path: Path) -> None:
    from tests.conformance.cloudevents_wire import encode
    from tests.conformance.test_cloudevents_bindings import APP_DATA, BROKEN, EVENT, _broken

    records = [encode("KAFKA", mode, EVENT, APP_DATA) for mode in ("binary", "structured")]
    records += [_broken(variant, "KAFKA", mode) for variant in BROKEN for mode in ("binary", "structured")]
    records += [{**encode("KAFKA", "structured", EVENT, APP_DATA), "body": '{"specversion": "1.0", "id": '}]
    # the Kafka definition requires the topic `mytopic`: this run's own topic takes its place
    topic = f"spark-{uuid.uuid4().hex[:8]}-ce"
    document = tmp_path / BINDINGS_DOC.name
    document.write_text(BINDINGS_DOC.read_text("utf-8").replace('"mytopic"', json.dumps(topic)), "utf-8")
    folder = config_dir(tmp_path, [document], {
        "routes": [{"source": "cebindings.kafka", "policy": "drop"}],
        "endpoints": {"cebindings.kafka": {"uris": [URI], "options": {"topic": topic}}}})
    placed = produce(topic, records)
    expected = expected_lines([folder], topic, records, placed)
    _, audit = run_stream(spark, folder, tmp_path)
    rows = audit_rows(audit)
    assert_stream_parity(rows, topic, expected)
    assert {json.loads(line)["verdict"] for line in expected.values()} == {"conformant", "nonconformant"}
    assert {r["action"] for r in rows} == {"dropped"}


def test_demo_telemetry_identical_to_check(spark: Any, tmp_path: Path) -> None:
    records = [r for r in generate(1500, seed=21) if r.get("protocol") == "KAFKA"]
    assert {r["endpoint"] for r in records} == {"telemetry.in"}
    topic = f"spark-{uuid.uuid4().hex[:8]}-telemetry"
    folder = config_dir(tmp_path, [DEMO], {
        "routes": [{"source": "telemetry.in", "policy": "observe"}],
        "endpoints": {"telemetry.in": {"uris": [URI], "options": {"topic": topic}}}})
    placed = produce(topic, records)
    expected = expected_lines([folder], topic, records, placed)
    _, audit = run_stream(spark, folder, tmp_path)
    assert_stream_parity(audit_rows(audit), topic, expected)


def test_jsonschema_suite_as_kafka_traffic_identical_to_check(spark: Any, tmp_path: Path) -> None:
    from tests.spark.suite_corpus import ENDPOINT, corpus

    topic = f"spark-{uuid.uuid4().hex[:8]}-suite"
    document, records = corpus({"endpoints": [{"uri": URI}], "topic": topic})
    (tmp_path / "suite.xreg.json").write_text(json.dumps(document), "utf-8")
    folder = config_dir(tmp_path, [tmp_path / "suite.xreg.json"],
                        {"routes": [{"source": ENDPOINT, "policy": "drop"}]})
    placed = produce(topic, records)
    expected = expected_lines([folder], topic, records, placed)
    _, audit = run_stream(spark, folder, tmp_path)
    assert_stream_parity(audit_rows(audit), topic, expected)
    outcomes = Counter(json.loads(line)["verdict"] for line in expected.values())
    assert outcomes["conformant"] > 800 and outcomes["nonconformant"] > 800


# -- restart from the checkpoint ----------------------------------------------------------------------------------

def spark_process(folder: Path, tmp_path: Path, *extra: str) -> subprocess.Popen[str]:
    log = open(tmp_path / f"spark-{time.monotonic_ns()}.log", "w")
    return subprocess.Popen([sys.executable, "-m", "gateway.cli", "spark", "--config", str(folder), "--master",
                             "local[2]", "--checkpoint", str(tmp_path / "checkpoint"), "--parquet",
                             str(tmp_path / "audit"), "--starting-offsets", "earliest", *extra],
                            stdout=log, stderr=subprocess.STDOUT, text=True, cwd=REPO, start_new_session=True)


def planned(checkpoint: Path, batch: int) -> int:
    """Records batch `batch` was planned to read: its end offsets in the offset log minus the batch before's."""
    def ends(number: int) -> dict[tuple[str, str], int]:
        if number < 0:
            return {}
        sources = json.loads((checkpoint / "offsets" / str(number)).read_text().splitlines()[2])
        return {(topic, partition): offset for topic, parts in sources.items() for partition, offset in parts.items()}
    before = ends(batch - 1)
    return sum(offset - before.get(key, 0) for key, offset in ends(batch).items())


def logged(checkpoint: Path, log: str) -> int:
    """How many batches the checkpoint's `offsets` (planned) or `commits` (done) log holds."""
    folder = checkpoint / log
    return len([p for p in folder.iterdir() if p.name.isdigit()]) if folder.is_dir() else 0


def test_killed_and_restarted_from_checkpoint_audit_holds_every_record_once(tmp_path: Path) -> None:
    start_broker("kafka")
    topics = fresh_topics(uuid.uuid4().hex[:8])
    options = {name: {"uris": [URI], "topic": topic} for name, topic in topics.items()}
    document = it_traffic.registry("KAFKA", options)
    document["endpoints"]["in"]["labels"] = {"xgate.route.conformant": "valid", "xgate.route.nonconformant": "dlq"}
    folder = tmp_path / "config"
    folder.mkdir()
    (folder / "it.xreg.json").write_text(json.dumps(document), "utf-8")
    # 8 micro-batches' worth: killed with the second in flight (the first committed), the restart replays it and
    # reads the rest
    records = it_traffic.mixed("KAFKA", 1200)
    per_batch = 150
    placed = produce(topics["in"], records)

    checkpoint = tmp_path / "checkpoint"
    first = spark_process(folder, tmp_path, "--max-offsets-per-trigger", str(per_batch))
    try:
        # killed in the middle of a micro-batch: planned in the offset log, not yet committed
        # one committed batch is all a restart needs to start from (more only cost a micro-batch each)
        deadline = time.monotonic() + 240
        while not logged(checkpoint, "offsets") > logged(checkpoint, "commits") >= 1:
            assert first.poll() is None, "the runner stopped before it was killed"
            assert time.monotonic() < deadline, "no micro-batch in flight after 1 committed within 240 s"
            time.sleep(0.05)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(30)
    in_flight = logged(checkpoint, "commits")
    assert logged(checkpoint, "offsets") == in_flight + 1 and in_flight < len(records) // per_batch

    second = spark_process(folder, tmp_path, "--max-offsets-per-trigger", "1000", "--available-now")
    assert second.wait(300) == 0, "\n".join(p.read_text() for p in sorted(tmp_path.glob("spark-*.log")))[-4000:]

    rows = audit_rows(tmp_path / "audit")
    # the batch in flight at the kill was replayed with its planned offsets, replacing its partial output
    assert sum(1 for r in rows if r["batch"] == in_flight) == planned(checkpoint, in_flight) > 0
    positions = Counter((r["partition"], r["offset"]) for r in rows)
    assert len(rows) == len(records), f"{len(rows)} rows for {len(records)} records"
    assert set(positions) == set(placed) and max(positions.values()) == 1
    # the Kafka destinations are at-least-once: every record is there, some perhaps twice
    for name in ("valid", "dlq"):
        want = sum(1 for r in rows if r["destination"] == name)
        arrived = read_topic(topics[name], want)
        assert len({m.value for m in arrived}) == len({r["value"] for r in rows if r["destination"] == name})
