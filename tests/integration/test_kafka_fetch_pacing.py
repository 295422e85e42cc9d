"""Fetch pacing on Apache Kafka (protocol_adapters/kafka/fetch_pacing.py): the broker honours the minimum the
source sets while traffic flows, nothing is lost or read twice, a record sent while paced still arrives within
the bounded wait, and a quiet stream gets the configured minimum back.

A window of one second lets a test's modest rate (about 1.3 MB/s) pass the pacer's 64 KiB floor."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from aiokafka import AIOKafkaProducer  # type: ignore[import-untyped]

from protocol_adapters import registry as adapters
from protocol_adapters.base import EndpointConfig
from protocol_adapters.kafka.source import KafkaSource
from tests.integration.harness import start_broker
from tests.integration.proxy_harness import BROKER, create_topics

pytestmark = pytest.mark.integration

BURST, CHUNK, VALUE = 2000, 100, b"x" * 1000
MAX_WAIT_MS = 400


async def _burst(topic: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=BROKER, linger_ms=5)
    await producer.start()
    try:
        for start in range(0, BURST, CHUNK):
            sent = [await producer.send(topic, value=b"%05d" % n + VALUE) for n in range(start, start + CHUNK)]
            await asyncio.gather(*sent)
            await asyncio.sleep(0.075)
    finally:
        await producer.stop()


async def _one(topic: str, value: bytes) -> float:
    producer = AIOKafkaProducer(bootstrap_servers=BROKER)
    await producer.start()
    try:
        await (await producer.send(topic, value=value))
        return time.monotonic()
    finally:
        await producer.stop()


def test_a_paced_source_reads_everything_and_falls_back_when_the_stream_stops() -> None:
    start_broker("kafka")
    topic = f"pacing-{uuid.uuid4().hex[:8]}"
    create_topics(topic)

    async def main() -> tuple[list[bytes], int, float, float]:
        config = EndpointConfig("in", "KAFKA", (BROKER,), {
            "topic": topic, "consumergroup": f"pacing-{uuid.uuid4().hex[:8]}", "autooffsetreset": "earliest",
            "fetch_pacing_ms": 1000, "fetch_max_wait_ms": MAX_WAIT_MS})
        values: list[bytes] = []
        async with adapters.create_source(config) as source:
            assert isinstance(source, KafkaSource)
            fetcher = source._consumer._fetcher  # what aiokafka builds each fetch request from
            highest = 1
            records = aiter(source)

            async def read(count: int) -> None:
                nonlocal highest
                async with asyncio.timeout(60):
                    while count:
                        envelope = await anext(records)
                        values.append(envelope.body)
                        await source.ack(envelope)
                        highest = max(highest, fetcher._fetch_min_bytes)
                        count -= 1

            producing = asyncio.create_task(_burst(topic))
            await read(BURST)
            await producing
            sent = await _one(topic, b"while paced")
            await read(1)
            paced_delay = time.monotonic() - sent
            # nothing more comes: the empty polls bring the minimum back down
            quiet = asyncio.create_task(read(1))
            for _ in range(100):
                if fetcher._fetch_min_bytes == 1:
                    break
                await asyncio.sleep(0.1)
            sent = await _one(topic, b"after")
            await quiet
            return values, highest, paced_delay, time.monotonic() - sent

    values, highest, paced_delay, quiet_delay = asyncio.run(main())
    assert values[:BURST] == [b"%05d" % n + VALUE for n in range(BURST)]  # all, in order, once
    assert values[BURST:] == [b"while paced", b"after"]
    assert highest > 64 * 1024, "the minimum was never raised while about 1.3 MB/s came"
    assert paced_delay < MAX_WAIT_MS / 1000 + 1.0, "a record sent while paced waited beyond the bounded wait"
    assert quiet_delay < 1.0
