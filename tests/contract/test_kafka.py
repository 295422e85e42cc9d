"""The contract suite against the Kafka adapter on Apache Kafka (deploy/brokers/kafka.sh).

The broker creates a topic (4 partitions, kafka.sh's num.partitions) on the first metadata request
for it, so every test uses fresh topic and group names and needs no admin step. Groups use short
session timeouts so that a member that died is noticed quickly.

Beyond the suite: commits stop at the first unacknowledged offset of a partition, fetching pauses
at `max_unacked`, many concurrent sends are confirmed, and a source and sink ride out a restart of
a private Kafka (own ports, own data directory) without losing a message.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.envelope import Envelope
from gateway.errors import AdapterError
from protocol_adapters import kafka
from protocol_adapters.base import EndpointConfig
from tests.conftest import free_port
from tests.contract.suite import ContractSuite, publish, run, take
from tests.kafka_broker import PORT, PrivateKafka, shared_kafka

pytestmark = pytest.mark.integration  # a real broker on 127.0.0.1

# short group timeouts: a member that died is noticed within seconds
FAST_GROUP = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500, "commit_interval_ms": 50}


@pytest.fixture(scope="module")
def kafka_port() -> int:
    shared_kafka()
    return PORT


class KafkaHarness:
    protocol = "KAFKA"
    at_least_once = True

    def __init__(self, port: int) -> None:
        self.port = port
        self.run = uuid.uuid4().hex[:10]

    def config(self, name: str, port: int | None = None, **options: Any) -> EndpointConfig:
        topic = f"xgate-{self.run}-{name}"
        return EndpointConfig(name, "KAFKA", (f"tcp://127.0.0.1:{port or self.port}",),
                              {"topic": topic, "consumergroup": f"group-{topic}", **options}, extra=FAST_GROUP)

    def unreachable(self, name: str) -> EndpointConfig:
        return EndpointConfig(name, "KAFKA", (f"tcp://127.0.0.1:{free_port()}",), {"topic": name},
                              extra={"connect_timeout_ms": 3000, "request_timeout_ms": 3000})

    def sample(self, index: int) -> Envelope:
        return Envelope("KAFKA", {
            "topic": "not-used-by-the-sink",
            "partition": 0,
            "key": None if index % 3 == 0 else f"key-{index}".encode(),
            "headers": [("ce_type", b"com.example.sample"), ("bin", bytes([0, 255, index % 256])), ("bin", b"again")],
            "timestamp": 1_700_000_000_000 + index,
        }, f"body-{index}".encode() + b"\x00\xff")

    def comparable(self, envelope: Envelope) -> Any:
        fields = envelope.fields
        return envelope.body, fields["key"], fields["headers"], fields["timestamp"]

    create_source = staticmethod(kafka.create_source)
    create_sink = staticmethod(kafka.create_sink)


@pytest.fixture
def harness(kafka_port: int) -> KafkaHarness:
    return KafkaHarness(kafka_port)


class TestKafkaAdapter(ContractSuite):
    def test_position_and_fields_name_where_the_record_was_read(self, harness: KafkaHarness) -> None:
        config = harness.config("position")

        async def scenario() -> Envelope:
            async with harness.create_source(config) as source:
                await publish(harness, config, [harness.sample(1)])
                [got] = await take(source, 1)
                await source.ack(got)
                return got
        got = run(scenario)
        topic = config.options["topic"]
        assert got.fields["topic"] == topic and got.position["topic"] == topic
        assert got.position["partition"] == got.fields["partition"] and got.position["offset"] == 0
        assert got.protocol == "KAFKA"

    def test_commit_stops_at_the_first_unacknowledged_offset(self, harness: KafkaHarness) -> None:
        # one partition (the sink's `partition` option), offsets 0..9; acks for 0-6 and 8 commit 7
        config = harness.config("contiguous", partition=0)
        sent = [harness.sample(i) for i in range(10)]

        async def scenario() -> list[int]:
            async with harness.create_source(config) as source:
                await publish(harness, config, sent)
                first = await take(source, 10)
                assert [e.position["offset"] for e in first] == list(range(10))
                for envelope in first[:7] + first[8:9]:
                    await source.ack(envelope)
            async with harness.create_source(config) as source:
                again = await take(source, 3)
                for envelope in again:
                    await source.ack(envelope)
                return [e.position["offset"] for e in again]
        assert run(scenario) == [7, 8, 9]

    def test_nack_hands_the_record_out_again_and_holds_the_commit_point(self, harness: KafkaHarness) -> None:
        config = harness.config("nackmany", partition=0)

        async def scenario() -> tuple[int, list[int]]:
            async with harness.create_source(config) as source:
                await publish(harness, config, [harness.sample(i) for i in range(6)])
                first = await take(source, 6)
                for envelope in first[:2] + first[3:]:
                    await source.ack(envelope)
                await source.nack(first[2])
                [again] = await take(source, 1)
            # closed with offset 2 unacknowledged: the group resumes there (3-5 come twice: at-least-once)
            async with harness.create_source(config) as source:
                after = await take(source, 4)
                for envelope in after:
                    await source.ack(envelope)
            return again.position["offset"], [e.position["offset"] for e in after]
        assert run(scenario) == (2, [2, 3, 4, 5])

    def test_fetching_pauses_at_max_unacked(self, harness: KafkaHarness) -> None:
        config = harness.config("backpressure", max_unacked=4)

        async def scenario() -> tuple[int, int]:
            async with harness.create_source(config) as source:
                await publish(harness, config, [harness.sample(i) for i in range(10)])
                held = await take(source, 10, timeout=1.5)
                for envelope in held:
                    await source.ack(envelope)
                total = len(held)
                while total < 10:  # at most 4 outstanding: acknowledge as they come
                    more = await take(source, min(4, 10 - total))
                    assert more
                    for envelope in more:
                        await source.ack(envelope)
                    total += len(more)
                return len(held), total
        held, total = run(scenario)
        assert held == 4 and total == 10

    def test_concurrent_sends_are_all_confirmed(self, harness: KafkaHarness) -> None:
        config = harness.config("concurrent")
        count = 2000

        async def scenario() -> set[bytes]:
            async with harness.create_sink(config) as sink:
                await asyncio.gather(*(sink.send(harness.sample(i)) for i in range(count)))
            async with harness.create_source(config) as source:
                got = await take(source, count)
                for envelope in got:
                    await source.ack(envelope)
                return {e.body for e in got}
        assert run(scenario) == {harness.sample(i).body for i in range(count)}


    def test_send_many_batches_keep_send_partitions_and_order(self, harness: KafkaHarness) -> None:
        # a batch through send_many lands where one send() at a time puts it, each partition in order
        by_send, by_many = harness.config("partition-send"), harness.config("partition-many")
        keyed = [Envelope("KAFKA", {"key": f"device-{i % 7}".encode(), "headers": [("n", str(i).encode())]},
                          f"{i}".encode()) for i in range(700)]

        async def read_all(config: EndpointConfig) -> list[Envelope]:
            async with harness.create_source(config) as source:
                got = await take(source, len(keyed))
                for envelope in got:
                    await source.ack(envelope)
                return got

        async def scenario() -> tuple[list[AdapterError | None], list[Envelope], list[Envelope]]:
            await publish(harness, by_send, keyed)
            async with harness.create_sink(by_many) as sink:
                failures = await sink.send_many(keyed)
            return failures, await read_all(by_send), await read_all(by_many)
        failures, via_send, via_many = run(scenario)
        assert failures == [None] * len(keyed)
        assert {e.body: e.fields["partition"] for e in via_many} == {e.body: e.fields["partition"] for e in via_send}
        assert len({e.fields["partition"] for e in via_many}) > 1
        for partition in {e.fields["partition"] for e in via_many}:
            bodies_by_offset = [int(e.body) for e in sorted(via_many, key=lambda e: e.position["offset"])
                                if e.fields["partition"] == partition]
            assert bodies_by_offset == sorted(bodies_by_offset)

    def test_a_batch_failed_without_a_leader_does_not_poison_the_sink(self, harness: KafkaHarness,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
        """aiokafka fails a batch that outlived `request_timeout_ms` while its partition had no leader, and gives
        it the partition's next sequence numbers as it does so; the broker then refuses every later batch of that
        idempotent producer for the partition as out of order (OutOfOrderSequenceNumber, not retriable): a route
        dead-lettered every conformant message after a broker restart. The sink must retire that producer, so
        that every failure is retriable and every record lands.

        The broker is real and stays up; only the producer's view of leadership is held at "no leader" past
        `request_timeout_ms`, the state a restarting broker shows until its partitions are elected again, which
        lasts that long only on a loaded machine."""
        config = harness.config("leaderless")
        config = dataclasses.replace(config, extra={**config.extra, "request_timeout_ms": 1500})
        samples = [harness.sample(i) for i in range(60)]

        async def scenario() -> tuple[list[AdapterError | None], list[AdapterError], set[bytes]]:
            async with harness.create_sink(config) as sink:
                assert await sink.send_many(samples[:20]) == [None] * 20
                cluster = sink._producer.client.cluster  # the live producer's view of the cluster, bent below
                leader = cluster.leader_for_partition
                cluster.leader_for_partition = lambda partition: -1
                try:  # held past the batch's 1.5 s, aiokafka fails it and its sequence numbers are spent
                    during = await asyncio.wait_for(sink.send_many(samples[20:40]), 30)
                finally:
                    cluster.leader_for_partition = leader
                after: list[AdapterError] = []
                rest = samples[20:]
                for _ in range(20):  # as the runtime does: send again what failed retriably, until it lands
                    failures = await sink.send_many(rest)
                    after += [failure for failure in failures if failure is not None]
                    rest = [envelope for envelope, failure in zip(rest, failures)
                            if failure is not None and failure.retriable]
                    if not rest or len(rest) < len(failures) - failures.count(None):
                        break
                    await asyncio.sleep(0.5)
            async with harness.create_source(config) as source:
                landed = {envelope.body for envelope in await take(source, len(samples))}
            return during, after, landed

        during, after, landed = run(scenario, timeout=90)
        assert during and all(failure is not None and failure.retriable for failure in during), during
        assert all(failure.retriable for failure in after), after
        assert landed == {envelope.body for envelope in samples}
        replaced = [r.getMessage() for r in caplog.records if "the next send starts a new producer" in r.getMessage()]
        assert replaced and "leaderless" in replaced[0], replaced  # the operator is told, naming the endpoint


@pytest.fixture
def private_kafka() -> Iterator[PrivateKafka]:
    with PrivateKafka() as broker:
        yield broker


def test_source_and_sink_survive_a_broker_restart(private_kafka: PrivateKafka) -> None:
    harness = KafkaHarness(private_kafka.port)
    config = harness.config("restart")
    total = 300

    async def scenario() -> tuple[set[bytes], list[Envelope]]:
        got: dict[bytes, Envelope] = {}
        async with harness.create_source(config) as source, harness.create_sink(config) as sink:
            async def consume() -> None:
                async for envelope in source:
                    got[envelope.body] = envelope
                    await source.ack(envelope)
                    if len(got) == total:
                        return

            async def send(index: int) -> None:
                while True:  # as the runtime does: retry what the sink calls retriable
                    try:
                        return await sink.send(harness.sample(index))
                    except AdapterError as exc:
                        assert exc.retriable
                        await asyncio.sleep(0.2)

            async def produce(indexes: range) -> None:
                for start in range(indexes.start, indexes.stop, 25):
                    await asyncio.gather(*(send(i) for i in range(start, min(start + 25, indexes.stop))))
            consumer = asyncio.create_task(consume())
            await produce(range(100))
            restart = asyncio.create_task(asyncio.to_thread(private_kafka.restart))
            index = 100
            while not restart.done() and index < 200:  # into the broker going down and coming back
                await send(index)
                index += 1
                await asyncio.sleep(0.02)
            await restart
            await produce(range(index, total))
            await asyncio.wait_for(consumer, 60)
        # every acknowledged offset was committed, and the commits outlived the restart
        async with harness.create_source(config) as source:
            leftover = await take(source, 1, timeout=2)
        return set(got), leftover
    got, leftover = run(scenario, timeout=120)
    assert got == {harness.sample(i).body for i in range(total)}
    assert leftover == []
