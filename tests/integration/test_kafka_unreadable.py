"""A batch the Kafka source cannot read does not stop it (issue 35, item 3), on Apache Kafka.

Three batches of five records go to one partition: gzip, lz4, gzip. The source is made unable to read lz4
(aiokafka is told the codec's library is missing, as it was before cramjam was installed), so the middle
batch fails every fetch from its first offset on. The source must hand out the ten readable records, skip
the five, count them, and commit past them once the records before are acknowledged."""

from __future__ import annotations

import asyncio
import uuid

import aiokafka.codec
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from protocol_adapters import registry as adapters
from protocol_adapters.base import EndpointConfig
from tests.integration.harness import start_broker
from tests.integration.proxy_harness import BROKER, create_topics

pytestmark = pytest.mark.integration


async def _produce(topic: str) -> None:
    for number, codec in enumerate(("gzip", "lz4", "gzip")):
        producer = AIOKafkaProducer(bootstrap_servers=BROKER, compression_type=codec, linger_ms=100)
        await producer.start()
        try:
            batch = producer.create_batch()
            for item in range(5):
                batch.append(key=None, value=f"{codec}-{number}-{item}".encode(), timestamp=None)
            batch.close()
            await (await producer.send_batch(batch, topic, partition=0))
        finally:
            await producer.stop()


async def _committed(topic: str, group: str) -> int | None:
    consumer = AIOKafkaConsumer(bootstrap_servers=BROKER, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        return await consumer.committed(TopicPartition(topic, 0))  # type: ignore[no-any-return]
    finally:
        await consumer.stop()


def test_an_unreadable_batch_is_skipped_counted_and_committed_past(monkeypatch: pytest.MonkeyPatch) -> None:
    start_broker("kafka")
    topic, group = f"unreadable-{uuid.uuid4().hex[:8]}", f"unreadable-{uuid.uuid4().hex[:8]}"
    create_topics(topic)

    async def main() -> tuple[list[bytes], int, int | None]:
        await _produce(topic)
        monkeypatch.setattr(aiokafka.codec, "has_lz4", lambda: False)  # the reading side only
        config = EndpointConfig("in", "KAFKA", (BROKER,), {"topic": topic, "consumergroup": group,
                                                          "commit_interval_ms": 50})
        values: list[bytes] = []
        async with adapters.create_source(config) as source:
            async with asyncio.timeout(60):
                async for envelope in source:
                    values.append(envelope.body)
                    await source.ack(envelope)
                    if len(values) == 10:
                        break
            skipped = source.take_unreadable()
            for _ in range(100):  # the commit loop runs every 50 ms
                if await _committed(topic, group) == 15:
                    break
                await asyncio.sleep(0.1)
        return values, skipped, await _committed(topic, group)

    values, skipped, committed = asyncio.run(main())
    assert values == [f"gzip-{n}-{i}".encode() for n in (0, 2) for i in range(5)]
    assert skipped == 5
    assert committed == 15  # past the skipped batch: a restart does not read it again
