"""The Kafka sink's shared open batches (protocol_adapters/kafka/outbox.py), against a stand-in for aiokafka's
producer that hands batches over one at a time per partition, as aiokafka's accumulator does."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka.record.default_records import DefaultRecordBatch  # type: ignore[import-untyped]

from protocol_adapters.base import EndpointConfig
from protocol_adapters.kafka.mapping import OutgoingRecord
from protocol_adapters.kafka.outbox import Outbox
from protocol_adapters.kafka.sink import KafkaSink, create_sink


class Builder:
    def __init__(self, room: int) -> None:
        self.values: list[bytes] = []
        self.room = room
        self.closed = False

    def append(self, *, timestamp: int | None, key: bytes | None, value: bytes, headers: Any) -> object | None:
        assert not self.closed, "a record joined a batch already handed over"
        if len(self.values) == self.room:
            return None
        self.values.append(value)
        return object()

    def close(self) -> None:
        self.closed = True


class Producer:
    """send_batch returns once the previous batch of the partition has 'drained' (the test lets it)."""

    def __init__(self, room: int = 3) -> None:
        self.room = room
        self.handed: list[tuple[int, list[bytes]]] = []
        self.delivery: list[asyncio.Future[None]] = []
        self.drain = asyncio.Event()
        self.refuse: set[int] = set()  # handover numbers that fail

    def create_batch(self) -> Builder:
        return Builder(self.room)

    async def send_batch(self, builder: Builder, topic: str, *, partition: int) -> asyncio.Future[None]:
        if self.handed:  # the one before must leave first
            await self.drain.wait()
            self.drain.clear()
        self.handed.append((partition, values_of(builder)))
        if len(self.handed) - 1 in self.refuse:
            raise RuntimeError("refused")
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.delivery.append(future)
        return future


def values_of(builder: Any) -> list[bytes]:
    """The values in a batch: this file's Builder's, or those of the native core's BatchWriter, which a sink
    uses where the core is built (read back as aiokafka reads a fetched batch)."""
    if isinstance(builder, Builder):
        return builder.values
    return [entry.value for entry in DefaultRecordBatch(builder._build())]


def record(value: bytes) -> OutgoingRecord:
    return OutgoingRecord(value, None, [], None)


async def settle(producer: Producer) -> None:
    for future in producer.delivery:
        if not future.done():
            future.set_result(None)
    await asyncio.sleep(0)


def test_records_that_arrive_while_a_batch_waits_leave_together_in_order() -> None:
    async def scenario() -> None:
        producer = Producer(room=100)
        outbox = Outbox(producer, "out")
        first = [outbox.add(0, record(b"a%d" % i)) for i in range(2)]
        await asyncio.sleep(0)  # the flusher hands the first batch over
        later = [outbox.add(0, record(b"b%d" % i)) for i in range(5)]  # the producer still holds the first
        assert first[0] is first[1] and len({id(b) for b in later}) == 1 and later[0] is not first[0]
        producer.drain.set()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert producer.handed == [(0, [b"a0", b"a1"]), (0, [b"b0", b"b1", b"b2", b"b3", b"b4"])]
        await settle(producer)
        assert first[0].delivered.done() and later[0].delivered.result() is None
    asyncio.run(scenario())


def test_a_full_batch_is_followed_by_a_new_one_and_partitions_do_not_share() -> None:
    async def scenario() -> None:
        producer = Producer(room=2)
        outbox = Outbox(producer, "out")
        batches = [outbox.add(0, record(b"%d" % i)) for i in range(5)] + [outbox.add(1, record(b"p1"))]
        assert len({id(b) for b in batches[:5]}) == 3 and batches[5] not in batches[:5]
        for _ in range(6):
            producer.drain.set()
            await asyncio.sleep(0)
        assert sorted(producer.handed) == [(0, [b"0", b"1"]), (0, [b"2", b"3"]), (0, [b"4"]), (1, [b"p1"])]
    asyncio.run(scenario())


def test_a_refused_batch_fails_its_own_records_only() -> None:
    async def scenario() -> None:
        producer = Producer(room=1)
        producer.refuse = {0}
        outbox = Outbox(producer, "out")
        refused, kept = outbox.add(0, record(b"x")), outbox.add(0, record(b"y"))
        for _ in range(3):
            producer.drain.set()
            await asyncio.sleep(0)
        await settle(producer)
        with pytest.raises(RuntimeError):
            refused.delivered.result()
        assert kept.delivered.result() is None
    asyncio.run(scenario())


def test_closing_fails_what_was_never_handed_over() -> None:
    async def scenario() -> None:
        producer = Producer(room=1)
        outbox = Outbox(producer, "out")
        handed, queued = outbox.add(0, record(b"x")), outbox.add(0, record(b"y"))
        await asyncio.sleep(0)
        await asyncio.sleep(0)  # the first handed over; the second waits for it to drain
        await outbox.close()
        assert queued.delivered.done() and isinstance(queued.delivered.exception(), asyncio.CancelledError)
        await settle(producer)
        assert handed.delivered.result() is None
    asyncio.run(scenario())


class PartitionedProducer(Producer):
    async def partitions_for(self, topic: str) -> set[int]:
        return {0}


def test_a_caller_cancelled_while_it_waits_leaves_the_batch_it_shares_to_the_others() -> None:
    """KafkaSink waits on the batches its records joined: cancelling one caller (a route's batch at shutdown)
    must neither cancel the batch nor fail the records other callers put in it."""
    async def scenario() -> None:
        sink: KafkaSink = create_sink(EndpointConfig("k.out", "KAFKA", ("tcp://127.0.0.1:9",), {"topic": "out"}))
        producer = PartitionedProducer(room=100)
        sink._producer = producer  # connected: what aiokafka's producer would be
        held = asyncio.create_task(sink._send_all([record(b"held")]))
        await asyncio.sleep(0)
        await asyncio.sleep(0)  # the first batch is handed over; the next ones wait for it to drain
        cancelled = asyncio.create_task(sink._send_all([record(b"c1")]))
        kept = asyncio.create_task(sink._send_all([record(b"k1")]))
        await asyncio.sleep(0)
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        producer.drain.set()
        for _ in range(3):
            await asyncio.sleep(0)
        assert producer.handed == [(0, [b"held"]), (0, [b"c1", b"k1"])]  # the shared batch left whole
        await settle(producer)
        assert await kept == [None] and await held == [None]
    asyncio.run(scenario())


def test_extend_fills_native_batches_in_order_and_starts_new_ones_when_full() -> None:
    """Outbox.extend with the native core's BatchWriter: a partition's records split over batches that fill
    up, in call order; records that arrive while the batches before them are handed over leave together."""
    xgate_core = pytest.importorskip("xgate_core")

    async def scenario() -> None:
        producer = Producer()
        outbox = Outbox(producer, "out", lambda: xgate_core.BatchWriter(300))  # room for about two records
        records = [record(b"v%02d" % i + b"." * 100) for i in range(5)]
        first = outbox.extend(0, records, [0, 1, 2], None, None)
        await asyncio.sleep(0)  # the flusher hands the first batch over; the second waits for it to leave
        later = outbox.extend(0, records, [3, 4], None, None)
        assert [indexes for _, indexes in first] == [[0, 1], [2]] and first[0][0] is not first[1][0]
        assert [indexes for _, indexes in later] == [[3, 4]] and later[0][0] not in (first[0][0], first[1][0])
        for _ in range(4):
            producer.drain.set()
            await asyncio.sleep(0)
        assert [[value[:3] for value in values] for _, values in producer.handed] == [
            [b"v00", b"v01"], [b"v02"], [b"v03", b"v04"]]
        await settle(producer)
        assert all(batch.delivered.result() is None for batch, _ in first + later)
    asyncio.run(scenario())
