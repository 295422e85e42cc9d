"""`xgate proxy` with clients nobody here wrote, in front of the Apache Kafka of deploy/brokers/kafka.sh:
librdkafka (through confluent-kafka) and Apache Kafka's own Java tools (console producer and consumer,
ProducerPerformance, from the kafka-tools jars that kafka.sh resolves beside the broker's).

What each client shows for a refused record is pinned where it is asserted (docs/proxy.md quotes it). Every
direct read goes to the broker itself (127.0.0.1:9092), not through the proxy. One proxy serves the module;
each test has a judged topic of its own (the registry's source endpoint `in` names them all).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

from gateway.recorded import envelope_from_record
from protocol_adapters.kafka.mapping import outgoing_record
from tests.integration import traffic as it_traffic
from tests.integration.harness import start_broker
from tests.integration.proxy_harness import (
    BROKER,
    NODE_ID,
    ProxyProcess,
    config,
    console_line,
    create_topics,
    java_tools,
    proxy_port,
    read_all,
    run_tool,
)

pytestmark = pytest.mark.integration

JUDGED = ("each", "batch", "idempotent", "transactions", "group", "console")
# what librdkafka says for a record the proxy refused. librdkafka (>= 2.4, KIP-467) reads the response's
# record_errors and error_message and keeps the text per message, but confluent-kafka (2.16, and its main branch
# on 2026-06-30) builds a producer's delivery error from the code alone (Message_new0 asks for the message's error
# text for consumers only), and no log line shows it either (checked with debug=all): the code is all there is.
LIBRDKAFKA_REFUSED = "Broker: Broker failed to validate record"
# what it says for a record that was itself conformant but rode in a refused batch (librdkafka maps record_errors'
# batch indexes to messages: the culprits keep INVALID_RECORD, the rest get this local code)
LIBRDKAFKA_IN_REFUSED_BATCH = "Local: an invalid record in the same batch caused the failure of this message too"
# what the Java console producer (--sync) prints on stderr for the refused record, first line (a stack trace
# follows): InvalidRecordException is the Java client's exception for INVALID_RECORD, carrying the record's
# record_errors text; the batch's error_message is not shown. Without --sync the record of a batch refused for
# another record's sake is logged as "org.apache.kafka.common.KafkaException: Failed to append record because it
# was part of a batch which had one more more invalid records".
JAVA_REFUSED = ("java.util.concurrent.ExecutionException: org.apache.kafka.common.InvalidRecordException: "
                "xgate: nonconformant (in/reading): schema at dataschema:/v: -1 is less than the minimum of 0")


@dataclass(frozen=True)
class Setup:
    proxy: ProxyProcess
    topics: dict[str, str]  # JUDGED names, the registry's destinations, and `perf` (named by no document)
    folder: Path

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.proxy.port}"

    @property
    def listeners(self) -> set[str]:
        """Every address a client of the proxy may be sent to: the bootstrap port and the broker's own."""
        return {self.bootstrap, f"127.0.0.1:{self.proxy.port + 1 + NODE_ID}"}


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    start_broker("kafka")
    run = uuid.uuid4().hex[:8]
    topics = {name: f"proxy-clients-{run}-{name}" for name in (*JUDGED, "valid", "dlq", "unknown", "perf")}
    create_topics(*topics.values())
    port = proxy_port()
    folder = tmp_path_factory.mktemp("proxy-clients")
    proxy = ProxyProcess(config(folder, {"in": [topics[name] for name in JUDGED],
                                         **{name: topics[name] for name in ("valid", "dlq", "unknown")}}, port), port)
    try:
        yield Setup(proxy, topics, folder)
    finally:
        summary = proxy.stop()
    # no client sent what the proxy could not read, and nothing went wrong on its side of any connection
    complaints = [line for line in proxy.log_file.read_text().splitlines() if " WARNING " in line or " ERROR " in line]
    assert not complaints, "\n".join(complaints)
    assert "0 connection(s) closed on bad input" in summary, summary


def conformant(record: dict[str, Any]) -> bool:
    return it_traffic.DESTINATION_OF_KIND[it_traffic.kind_of_record(record)] == "valid"


def value_of(record: dict[str, Any]) -> bytes:
    return bytes(outgoing_record(envelope_from_record(record)).value)


@contextlib.contextmanager
def producing(settings: dict[str, Any]) -> Iterator[Producer]:
    """A librdkafka producer, closed on leaving (an open one would hold the proxy's shutdown for its drain)."""
    producer = Producer(settings)
    try:
        yield producer
    finally:
        producer.close()


def produce(producer: Producer, topic: str, records: list[dict[str, Any]], flush_each: bool = True,
            timeout: float = 30) -> list[KafkaError | None]:
    """Per record, in order, the error its delivery callback got (None: written); a flush after each record makes
    each its own batch, one flush at the end one batch of them all."""
    outcomes: list[KafkaError | None] = [None] * len(records)
    delivered = [False] * len(records)

    def report(at: int) -> Any:
        def callback(error: KafkaError | None, _message: Any) -> None:
            outcomes[at], delivered[at] = error, True
        return callback

    for at, record in enumerate(records):
        out = outgoing_record(envelope_from_record(record))
        producer.produce(topic, out.value, key=out.key, headers=out.headers, on_delivery=report(at))
        if flush_each:
            assert producer.flush(timeout) == 0, f"record {at} not delivered within {timeout} s"
    assert producer.flush(timeout) == 0, f"not every record delivered within {timeout} s"
    assert all(delivered)
    return outcomes


def assert_refused_as_librdkafka_shows(kinds: list[str], outcomes: list[KafkaError | None]) -> None:
    for kind, error in zip(kinds, outcomes, strict=True):
        if it_traffic.DESTINATION_OF_KIND[kind] == "valid":
            assert error is None, f"{kind}: {error!r}"
            continue
        assert error is not None, f"{kind} was written"
        assert (error.code(), error.str()) == (KafkaError.INVALID_RECORD, LIBRDKAFKA_REFUSED), f"{kind}: {error!r}"
        assert not error.retriable() and not error.fatal(), f"{kind}: {error!r}"


def addresses_used(stats: list[str], client: Producer | Consumer) -> set[str]:
    """Every broker address the client knows (from its statistics): where metadata and coordinators sent it."""
    deadline = time.monotonic() + 10
    while not stats:
        assert time.monotonic() < deadline, "no statistics from the client within 10 s"
        client.poll(0.1)
    return {broker["nodename"] for broker in json.loads(stats[-1])["brokers"].values()}


def direct_values(topic: str, count: int) -> list[bytes]:
    """The topic's records read straight from the broker (every one it holds, at least `count`)."""
    return [m.value for m in asyncio.run(read_all(BROKER, topic, count))]


def end_offset(topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": BROKER, "group.id": f"end-{uuid.uuid4().hex[:8]}"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
    finally:
        consumer.close()


def committed(group: str, topic: str) -> int:
    """The group's committed offset on the topic's partition, asked of the broker itself."""
    consumer = Consumer({"bootstrap.servers": BROKER, "group.id": group})
    try:
        return int(consumer.committed([TopicPartition(topic, 0)], timeout=10)[0].offset)
    finally:
        consumer.close()


def read_confluent(bootstrap: str, topic: str, isolation: str, timeout: float = 30) -> list[bytes]:
    """Every record a consumer of `isolation` sees on the topic's partition, read until its position reaches the
    end (control records and aborted ones move the position without being returned)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "isolation.level": isolation})
    partition = TopicPartition(topic, 0)
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        end = consumer.get_watermark_offsets(partition, timeout=10)[1]
        values: list[bytes] = []
        deadline = time.monotonic() + timeout
        while consumer.position([partition])[0].offset < end:
            assert time.monotonic() < deadline, f"{topic}: position short of {end} after {timeout} s"
            message = consumer.poll(0.2)
            if message is not None:
                assert message.error() is None, message.error()
                values.append(message.value())
        return values
    finally:
        consumer.close()


# ---- librdkafka ---------------------------------------------------------------------------------------

def test_librdkafka_producer_each_record_its_own_batch(setup: Setup) -> None:
    topic = setup.topics["each"]
    records = it_traffic.mixed("KAFKA", 14)
    stats: list[str] = []
    with producing({"bootstrap.servers": setup.bootstrap, "acks": "all", "linger.ms": 0,
                    "statistics.interval.ms": 100, "stats_cb": stats.append}) as producer:
        outcomes = produce(producer, topic, records)
        # metadata sent it to the proxy's listeners only, never around it to the broker
        assert addresses_used(stats, producer) <= setup.listeners
    assert_refused_as_librdkafka_shows([it_traffic.kind_of_record(r) for r in records], outcomes)
    accepted = [value_of(r) for r in records if conformant(r)]
    assert 0 < len(accepted) < len(records)
    assert direct_values(topic, len(accepted)) == accepted


def test_librdkafka_batch_with_a_nonconformant_record_is_refused_whole(setup: Setup) -> None:
    topic = setup.topics["batch"]
    records = it_traffic.mixed("KAFKA", 7)  # one of each kind, in one batch (a long linger, one flush)
    with producing({"bootstrap.servers": setup.bootstrap, "acks": "all", "linger.ms": 5000}) as producer:
        outcomes = produce(producer, topic, records, flush_each=False)
        assert end_offset(topic) == 0
        # sent again without the culprits (as librdkafka's error invites), the conformant ones land, once each
        again = [r for r in records if conformant(r)]
        assert produce(producer, topic, again, flush_each=False) == [None] * len(again)
    for record, error in zip(records, outcomes, strict=True):
        assert error is not None, f"{it_traffic.kind_of_record(record)} was written"
        expected = ((KafkaError._INVALID_DIFFERENT_RECORD, LIBRDKAFKA_IN_REFUSED_BATCH) if conformant(record)
                    else (KafkaError.INVALID_RECORD, LIBRDKAFKA_REFUSED))
        assert (error.code(), error.str()) == expected, f"{it_traffic.kind_of_record(record)}: {error!r}"
    assert direct_values(topic, len(again)) == [value_of(r) for r in again]


def test_librdkafka_idempotent_producer_survives_refusals(setup: Setup) -> None:
    """Each refusal leaves a gap in the producer's sequence numbers; librdkafka bumps its epoch for it (debug=eos
    logs "epoch bump ... message sequence gap"), as it would for the broker's own INVALID_RECORD."""
    topic = setup.topics["idempotent"]
    records = it_traffic.mixed("KAFKA", 14)
    with producing({"bootstrap.servers": setup.bootstrap, "enable.idempotence": True, "linger.ms": 0}) as producer:
        outcomes = produce(producer, topic, records)
    assert_refused_as_librdkafka_shows([it_traffic.kind_of_record(r) for r in records], outcomes)
    accepted = [value_of(r) for r in records if conformant(r)]
    assert direct_values(topic, len(accepted)) == accepted


def refused_transaction(producer: Producer, topic: str, good: dict[str, Any],
                        bad: dict[str, Any]) -> tuple[KafkaError | None, KafkaError | None]:
    """A transaction holding a conformant record, then a refused one: it cannot commit, librdkafka asks for an abort,
    and the abort goes through. Returns the refused record's delivery error and the commit's error.

    (librdkafka 2.16 then fails the next transaction's commit once with OUT_OF_ORDER_SEQUENCE_NUMBER, "skipped
    sequence numbers", until a second abort bumps the epoch; it does the same straight at the broker when the broker
    itself answers INVALID_RECORD, e.g. for a record without key on a compacted topic. The test's producer stops.)"""
    producer.begin_transaction()
    assert produce(producer, topic, [good]) == [None]
    [refusal] = produce(producer, topic, [bad])
    error = None
    try:
        producer.commit_transaction(30)
    except KafkaException as exc:
        error = exc.args[0]
        producer.abort_transaction(30)
    return refusal, error


def test_librdkafka_transactions_commit_and_abort_through_the_proxy(setup: Setup) -> None:
    topic = setup.topics["transactions"]
    good = [r for r in it_traffic.mixed("KAFKA", 28) if conformant(r)]
    committed_records, aborted_record = good[:6], good[6]
    bad = it_traffic.message("KAFKA", 1000, "bad-structured")
    with producing({"bootstrap.servers": setup.bootstrap, "transactional.id": f"xgate-it-{uuid.uuid4().hex}",
                    "linger.ms": 5}) as producer:
        producer.init_transactions(30)
        producer.begin_transaction()
        assert produce(producer, topic, committed_records, flush_each=False) == [None] * len(committed_records)
        producer.commit_transaction(30)
        refusal, error = refused_transaction(producer, topic, aborted_record, bad)
    assert refusal is not None and refusal.code() == KafkaError.INVALID_RECORD, refusal
    assert error is not None and error.code() == KafkaError.INVALID_RECORD and error.txn_requires_abort(), error
    wanted = [value_of(r) for r in committed_records]
    assert read_confluent(setup.bootstrap, topic, "read_committed") == wanted
    assert read_confluent(BROKER, topic, "read_committed") == wanted
    # the aborted record did reach the log: only the transaction's outcome hides it
    assert read_confluent(BROKER, topic, "read_uncommitted") == [*wanted, value_of(aborted_record)]


def test_librdkafka_consumer_group_through_the_proxy(setup: Setup) -> None:
    topic = setup.topics["group"]
    records = [r for r in it_traffic.mixed("KAFKA", 14) if conformant(r)]
    with producing({"bootstrap.servers": setup.bootstrap, "acks": "all"}) as producer:
        assert produce(producer, topic, records, flush_each=False) == [None] * len(records)
    group = f"xgate-it-{uuid.uuid4().hex[:8]}"
    stats: list[str] = []
    consumer = Consumer({"bootstrap.servers": setup.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "statistics.interval.ms": 100, "stats_cb": stats.append})
    try:
        consumer.subscribe([topic])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < len(records):
            assert time.monotonic() < deadline, f"{len(values)} of {len(records)} records after 30 s"
            message = consumer.poll(0.2)
            if message is not None:
                assert message.error() is None, message.error()
                values.append(message.value())
        consumer.commit(asynchronous=False)
        # FindCoordinator's answer was rewritten too: the group coordinator is the proxy's broker listener
        known = addresses_used(stats, consumer)
        assert known <= setup.listeners and f"127.0.0.1:{setup.proxy.port + 1 + NODE_ID}" in known, known
    finally:
        consumer.close()
    assert values == [value_of(r) for r in records]
    assert committed(group, topic) == len(records)


# ---- Apache Kafka's Java tools --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def java(setup: Setup) -> list[str]:
    return java_tools(setup.folder)


def test_java_console_producer_and_consumer(setup: Setup, java: list[str]) -> None:
    topic = setup.topics["console"]
    # structured mode: the JSON event as the value and content-type application/cloudevents+json as a header
    # (without the header the proxy refuses the line too: "nonconformant (no definition): no-match ...")
    good = it_traffic.message("KAFKA", 2001, "ok-structured")
    bad = it_traffic.message("KAFKA", 2003, "bad-structured")
    # --sync: one record per batch, the conformant one first; the console producer stops at the first failed send
    produced = run_tool(java, "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", setup.bootstrap,
                        "--topic", topic, "--sync", "--property", "parse.headers=true",
                        "--producer-property", "acks=all",
                        stdin=console_line(good) + "\n" + console_line(bad) + "\n")
    assert produced.returncode == 1, produced
    assert produced.stderr.splitlines()[0] == JAVA_REFUSED, produced.stderr
    landed = asyncio.run(read_all(BROKER, topic, 1))
    assert [(m.value, list(m.headers)) for m in landed] == [(value_of(good),
                                                             [("content-type", b"application/cloudevents+json")])]
    # the console consumer reads it back through the proxy in a group, and commits on leaving
    group = f"xgate-it-{uuid.uuid4().hex[:8]}"
    consumed = run_tool(java, "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server",
                        setup.bootstrap, "--topic", topic, "--group", group, "--from-beginning", "--max-messages", "1",
                        "--timeout-ms", "30000", "--property", "print.headers=true")
    assert consumed.returncode == 0, consumed
    assert consumed.stdout.splitlines() == [console_line(good)], consumed
    assert "Processed a total of 1 messages" in consumed.stderr, consumed.stderr
    assert committed(group, topic) == 1


def test_java_producer_performance_with_acks_all(setup: Setup, java: list[str]) -> None:
    """ProducerPerformance sends values without headers, so none of its records can be a CloudEvent under the
    Kafka binding (binary mode needs ce_ headers, structured mode the content-type header): its topic is named by
    no document and passes the proxy unjudged (the produce requests are still read and forwarded by it)."""
    topic, count = setup.topics["perf"], 5000
    perf = run_tool(java, "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
                    "--num-records", str(count), "--record-size", "1024", "--throughput", "-1",
                    "--producer-props", f"bootstrap.servers={setup.bootstrap}", "acks=all", timeout=120)
    assert perf.returncode == 0, perf
    assert re.search(rf"^{count} records sent, [0-9.]+ records/sec", perf.stdout, re.MULTILINE), perf.stdout
    assert not re.search(r"^ERROR ", perf.stderr, re.MULTILINE), perf.stderr
    assert end_offset(topic) == count
