"""The native core's producer batches (native/src/batch_writer.rs) against aiokafka's own builder: the same
bytes for the same records, the same records a batch at the same size, the same size estimate and the same
partitions as the sink's Python partitioner."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import pytest
from aiokafka.record.default_records import (  # type: ignore[import-untyped]
    DefaultRecordBatch,
    DefaultRecordBatchBuilder,
)

from protocol_adapters.kafka.mapping import OutgoingRecord, forwarded_record
from protocol_adapters.kafka.partitioning import murmur2_python

xgate_core = pytest.importorskip("xgate_core")


@dataclass
class Consumed:
    """What the writer reads of aiokafka's ConsumerRecord."""

    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    timestamp: int


def random_record(rng: random.Random) -> Consumed:
    def part(most: int) -> bytes | None:
        return None if rng.random() < 0.15 else rng.randbytes(rng.choice([0, 1, 7, 63, 64, 200, most]))
    headers = [(rng.choice(["ce_type", "ce_id", "é-ü", "", "x" * 130]), part(300)) for _ in range(rng.randrange(5))]
    # timestamps far apart and before the first one: deltas of every varint width and sign
    return Consumed(part(40), part(3000), headers, rng.choice([0, 1_700_000_000_000, 1_700_000_000_000 + rng.randrange(
        -10**9, 10**9)]))


def added_for(rng: random.Random) -> list[tuple[str, str]] | None:
    return None if rng.random() < 0.5 else [("xgate-reason", rng.choice(["", "nonconformant", "ünïcode"] * 2))]


def aiokafka_batches(records: list[Consumed], added: list[Any], batch_size: int) -> list[bytes]:
    """The batches aiokafka's builder makes of `records`, each started when the one before is full."""
    batches: list[bytes] = []
    builder, offset = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, 0, batch_size), 0
    for record, extra in zip(records, added, strict=True):
        out = forwarded_record(record, None, (), extra or ())
        if builder.append(offset, out.timestamp_ms, out.key, out.value, out.headers) is None:
            batches.append(bytes(builder.build()))
            builder, offset = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, 0, batch_size), 0
            assert builder.append(offset, out.timestamp_ms, out.key, out.value, out.headers) is not None
        offset += 1
    batches.append(bytes(builder.build()))
    return batches


def native_batches(records: list[Any], added: list[Any] | None, batch_size: int) -> list[bytes]:
    batches: list[bytes] = []
    indexes, start = list(range(len(records))), 0
    while start < len(indexes):
        writer = xgate_core.BatchWriter(batch_size)
        stop = writer.extend(records, indexes, start, None, added)
        assert stop > start, "an empty batch takes any record"
        assert writer.closed() == (stop < len(indexes))
        batches.append(writer._build())
        start = stop
    return batches


@pytest.mark.parametrize("seed", range(12))
def test_batches_are_aiokafkas_byte_for_byte(seed: int) -> None:
    rng = random.Random(seed)
    records = [random_record(rng) for _ in range(rng.randrange(1, 120))]
    added = [added_for(rng) for _ in records]
    batch_size = rng.choice([1, 300, 4096, 16384, 1 << 20])
    assert native_batches(records, added, batch_size) == aiokafka_batches(records, added, batch_size)
    # the same records as OutgoingRecord tuples (the sink's send_many) give the same bytes
    outgoing = [forwarded_record(record, None, (), extra or ()) for record, extra in zip(records, added, strict=True)]
    assert native_batches(outgoing, None, batch_size) == aiokafka_batches(records, added, batch_size)


def test_append_and_producer_state_as_aiokafkas_builder() -> None:
    ours, theirs = xgate_core.BatchWriter(1000, transactional=True), DefaultRecordBatchBuilder(2, 0, 1, -1, -1, 0, 1000)
    for index, value in enumerate([b"a" * 400, b"b" * 400, b"c" * 400]):
        fits = ours.append(timestamp=5 + index, key=b"k", value=value, headers=[("h", None)])
        assert (fits is not None) == (theirs.append(index, 5 + index, b"k", value, [("h", None)]) is not None)
    assert ours.closed() and ours.record_count() == 2 and ours.size() == theirs.size()
    assert ours.append(timestamp=None, key=None, value=b"late", headers=None) is None
    ours._set_producer_state(77, 3, 1200)
    theirs.set_producer_state(77, 3, 1200)
    built = ours._build()
    assert built == bytes(theirs.build()) and ours._build() is built  # built once: a retry sends the same bytes
    batch = DefaultRecordBatch(built)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.is_transactional) == (77, 3, 1200, True)
    batch.validate_crc()


def test_a_record_without_a_timestamp_is_stamped_now() -> None:
    import time
    writer = xgate_core.BatchWriter(1000)
    before = int(time.time() * 1000)
    writer.extend([Consumed(None, b"v", [], -1)], [0], 0)
    [entry] = list(DefaultRecordBatch(writer._build()))
    assert before <= entry.timestamp <= int(time.time() * 1000) + 1


def test_a_part_of_the_wrong_type_is_refused_by_name() -> None:
    writer = xgate_core.BatchWriter(1000)
    with pytest.raises(TypeError, match="value must be bytes or None, not str"):
        writer.extend([Consumed(None, "text", [], 0)], [0], 0)  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(6))
def test_partitions_and_sizes_as_the_sink_chooses_them(seed: int) -> None:
    rng = random.Random(seed)
    records = [random_record(rng) for _ in range(300)]
    added = [added_for(rng) for _ in records]
    partitions = sorted(rng.sample(range(12), rng.randrange(1, 6)))
    default_key = rng.choice([None, b"fallback"])
    max_size = rng.choice([100, 800, 3000, 1 << 20])
    groups, alone = xgate_core.partition_records(records, partitions, partitions[-1], None, max_size, default_key,
                                                 added)
    expected_alone: list[int] = []
    expected: dict[int, list[int]] = {}
    for index, (record, extra) in enumerate(zip(records, added, strict=True)):
        out = forwarded_record(record, default_key, (), extra or ())
        if DefaultRecordBatchBuilder.estimate_size_in_bytes(out.key, out.value, out.headers) > max_size:
            expected_alone.append(index)
            continue
        partition = (partitions[-1] if out.key is None
                     else partitions[(murmur2_python(out.key) & 0x7FFFFFFF) % len(partitions)])
        expected.setdefault(partition, []).append(index)
    assert alone == expected_alone
    assert groups == list(expected.items())
    fixed, _ = xgate_core.partition_records(records, partitions, 0, 9, 1 << 30)
    assert fixed == [(9, list(range(len(records))))]


def test_outgoing_records_keep_their_nulls() -> None:
    record = OutgoingRecord(None, None, [("n", None), ("v", b"1")], 12)
    writer = xgate_core.BatchWriter(1000)
    writer.extend([record], [0], 0)
    [entry] = list(DefaultRecordBatch(writer._build()))
    assert (entry.key, entry.value, list(entry.headers), entry.timestamp) == (None, None, [("n", None), ("v", b"1")], 12)
