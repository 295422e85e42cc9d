"""A Kafka source's fetched batches read in place (protocol_adapters/kafka/in_place.py, native/src/fetched.rs):
a fetch's data handed out as aiokafka hands it out, but every plain batch whole; the records the core reads in
place are aiokafka's ConsumerRecords field for field, judged alike, and written into producer batches byte for
byte as the ConsumerRecords are; a batch tracked by its last offset counts its messages and can be expanded."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from aiokafka.consumer import fetcher  # type: ignore[import-untyped]
from aiokafka.record.default_records import DefaultRecordBatchBuilder  # type: ignore[import-untyped]
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder  # type: ignore[import-untyped]
from aiokafka.record.memory_records import MemoryRecords  # type: ignore[import-untyped]
from aiokafka.record.util import calc_crc32c  # type: ignore[import-untyped]
from aiokafka.structs import TopicPartition  # type: ignore[import-untyped]

from gateway.compiler.core import NativeJudge, native_available
from protocol_adapters.kafka import in_place
from protocol_adapters.kafka.offsets import PartitionOffsets
from tests.unit.runtime.test_pipeline import reference_ruleset

pytestmark = pytest.mark.skipif(not native_available(), reason="the native core is not built (make install)")
TP = TopicPartition("in", 3)
Record = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def random_record(rng: random.Random, number: int) -> Record:
    def part(most: int) -> bytes | None:
        return None if rng.random() < 0.1 else rng.randbytes(rng.choice([0, 1, 9, most]))
    kind = rng.choice(["ok", "ok", "ok", "invalid", "unknown", "noise"])
    if kind == "noise":
        return (part(30), part(500), [(rng.choice(["é", "", "h"]), part(40)) for _ in range(rng.randrange(4))])
    headers: list[tuple[str, bytes | None]] = [
        ("ce_specversion", b"1.0"), ("ce_id", str(number).encode()), ("ce_source", b"/s"),
        ("ce_type", b"com.example.other" if kind == "unknown" else b"com.example.reading"),
        ("content-type", b"application/json"), ("trace", None)]
    body = {"v": "not a number"} if kind == "invalid" else {"v": number}
    return (part(12), json.dumps(body).encode(), headers)


def batch(records: list[Record], base: int, codec: int = 0, log_append_time: bool = False) -> bytes:
    """A batch as the broker stores it: base offset `base`, timestamps from 1_700_000_000_000 on."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 22)
    for delta, (key, value, headers) in enumerate(records):
        builder.append(delta, timestamp=1_700_000_000_000 + delta * 7, key=key, value=value, headers=headers)
    data = bytearray(builder.build())
    data[0:8] = base.to_bytes(8, "big")  # not under the CRC: the broker sets it
    if log_append_time:
        data[22] |= 0x08
        data[17:21] = calc_crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


def legacy(base: int) -> bytes:
    builder = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    builder.append(0, timestamp=1_700_000_000_000, key=None, value=b'{"v": 1}')
    data = bytearray(builder.build())
    data[0:8] = base.to_bytes(8, "big")
    return bytes(data)


def fetch_data(rng: random.Random) -> tuple[bytes, list[int]]:
    """A fetch's partition data: plain batches, one gzip, one log-append-time, one cut short at the end; and the
    record count of each plain batch in order."""
    parts: list[bytes] = []
    counts: list[int] = []
    offset = 100
    for kind in ["plain", "plain", "gzip", "appended", "plain"]:
        records = [random_record(rng, offset + i) for i in range(rng.randrange(1, 40))]
        parts.append(batch(records, offset, codec=1 if kind == "gzip" else 0, log_append_time=kind == "appended"))
        if kind != "gzip":
            counts.append(len(records))
        offset += len(records)
    cut = batch([random_record(rng, offset)], offset)
    return b"".join(parts) + cut[: len(cut) // 2], counts


def aiokafkas(data: bytes, fetch_offset: int = 0) -> list[Any]:
    return list(fetcher.PartitionRecords(TP, MemoryRecords(data), None, fetch_offset, None, None, True,
                                         fetcher.READ_UNCOMMITTED))


def in_place_items(data: bytes, fetch_offset: int = 0) -> tuple[list[Any], int]:
    in_place.install()
    reader = fetcher.PartitionRecords(TP, fetcher.MemoryRecords(data), None, fetch_offset, None,
                                      in_place.read_in_place, True, fetcher.READ_UNCOMMITTED)
    return list(reader), reader.next_fetch_offset


@pytest.fixture(scope="module")
def native(tmp_path_factory: pytest.TempPathFactory) -> NativeJudge:
    return NativeJudge(reference_ruleset(tmp_path_factory.mktemp("registry")))


def judged(native: NativeJudge, items: list[Any]) -> tuple[Any, list[Any], Any]:
    position = native.endpoint_position("in")
    assert position is not None
    found = native.judge_fetched(position, [(TP.topic, TP.partition, b.data, b.start, b.end) for b in items])
    assert found is not None
    return found


@pytest.mark.parametrize("seed", range(8))
def test_plain_batches_whole_and_the_rest_as_aiokafka_reads_them(seed: int) -> None:
    data, counts = fetch_data(random.Random(seed))
    items, position = in_place_items(data)
    expected = aiokafkas(data)
    batches = [item for item in items if isinstance(item, in_place.InPlaceBatch)]
    assert [b.count for b in batches] == counts
    # the position ends where aiokafka's does, and every record is there once, in order
    assert position == aiokafkas_position(data)
    expanded: list[Any] = []
    for item in items:
        expanded += in_place.records_of(TP, item) if isinstance(item, in_place.InPlaceBatch) else [item]
    assert expanded == expected
    for b in batches:  # tracked by its last offset
        assert b.offset == in_place.records_of(TP, b)[-1].offset and b.first == in_place.records_of(TP, b)[0].offset


def aiokafkas_position(data: bytes) -> int:
    reader = fetcher.PartitionRecords(TP, MemoryRecords(data), None, 0, None, None, True, fetcher.READ_UNCOMMITTED)
    list(reader)
    return int(reader.next_fetch_offset)


def test_a_batch_that_begins_before_the_position_is_left_to_aiokafka() -> None:
    data = batch([random_record(random.Random(1), n) for n in range(10)], 50)
    items, position = in_place_items(data, fetch_offset=55)
    assert items == aiokafkas(data, 55) and [r.offset for r in items] == list(range(55, 60)) and position == 60


def test_older_magics_are_aiokafkas_to_read() -> None:
    data = legacy(7) + legacy(8)  # aiokafka reads a fetch of one magic: it takes the first batch's for all
    items, position = in_place_items(data)
    assert items == aiokafkas(data) and [r.offset for r in items] == [7, 8] and position == 9


def test_a_bad_crc_is_aiokafkas_to_refuse() -> None:
    data = bytearray(batch([random_record(random.Random(2), 1)], 0))
    data[-1] ^= 1
    import xgate_core
    assert xgate_core.split_batches(bytes(data)) == [(0, len(data), 0, -1, -1)]
    with pytest.raises(Exception, match="CRC"):
        in_place_items(bytes(data))


def test_other_consumers_read_as_aiokafka_does() -> None:
    data, _ = fetch_data(random.Random(3))
    in_place.install()
    reader = fetcher.PartitionRecords(TP, fetcher.MemoryRecords(data), None, 0, None, None, True,
                                      fetcher.READ_UNCOMMITTED)
    assert list(reader) == aiokafkas(data)


@pytest.mark.parametrize("seed", range(6))
def test_records_read_in_place_are_consumer_records_and_judged_alike(native: NativeJudge, seed: int) -> None:
    data, _ = fetch_data(random.Random(seed))
    items, _ = in_place_items(data)
    batches = [item for item in items if isinstance(item, in_place.InPlaceBatch)]
    fetched, results, _ = judged(native, batches)
    records = [record for b in batches for record in in_place.records_of(TP, b)]
    assert len(fetched) == len(records) == len(results)
    assert [in_place.consumer_record(TP, fetched.record(i)) for i in range(len(fetched))] == records
    position = native.endpoint_position("in")
    assert position is not None
    assert results == native.judge_records(position, records)
    assert fetched.value_bytes() == sum(len(r.value or b"") for r in records)


@pytest.mark.parametrize("seed", range(6))
def test_producer_batches_from_records_read_in_place_are_the_same_bytes(native: NativeJudge, seed: int) -> None:
    import xgate_core
    rng = random.Random(seed)
    data, _ = fetch_data(rng)
    items, _ = in_place_items(data)
    fetched, _, _ = judged(native, [item for item in items if isinstance(item, in_place.InPlaceBatch)])
    records = [in_place.consumer_record(TP, fetched.record(i)) for i in range(len(fetched))]
    chosen = sorted(rng.sample(range(len(records)), rng.randrange(1, len(records) + 1)))
    selected, listed = fetched.select(chosen), [records[i] for i in chosen]
    added = [None if rng.random() < 0.5 else [("xgate-reason", "ü")] for _ in chosen]
    for key in (None, b"fallback"):
        assert (xgate_core.partition_records(selected, [0, 1, 2], 1, None, 600, key, added)
                == xgate_core.partition_records(listed, [0, 1, 2], 1, None, 600, key, added))
        for size in (1, 700, 1 << 20):
            assert written(selected, size, key, added) == written(listed, size, key, added)


def written(records: Any, size: int, key: bytes | None, added: list[Any]) -> list[bytes]:
    import xgate_core
    out, indexes, start = [], list(range(len(records))), 0
    while start < len(indexes):
        writer = xgate_core.BatchWriter(size)
        start = writer.extend(records, indexes, start, key, added)
        out.append(writer._build())
    return out


def test_a_batch_counts_its_messages_until_the_commit_point_passes_it() -> None:
    part = PartitionOffsets()
    part.track_many([9, 19, 20], {9: 9, 19: 9})  # offsets 0-9 and 10-19 as two batches, then a record
    assert part.messages == 21
    assert part.ack_many([19]) is False and part.messages == 21  # out of order: nothing passed yet
    assert part.ack_many([9]) is True and part.commit_to == 20 and part.messages == 1
    assert part.ack(20) and part.commit_to == 21 and part.messages == 0 and not part.heavy


def test_an_expanded_batch_is_settled_record_by_record() -> None:
    part = PartitionOffsets()
    part.track_many([4, 9], {4: 4, 9: 4})
    part.expand(9, [5, 6, 8, 9])  # offset 7 compacted away
    assert list(part.order) == [4, 5, 6, 8, 9] and part.messages == 9
    assert part.ack_many([4]) and part.commit_to == 5
    assert part.ack(6) is False and part.pending(5) and not part.pending(6)
    assert part.ack_many([5, 8, 9]) and part.commit_to == 10 and part.messages == 0


def overlong_batch(base: int) -> bytes:
    """A plain batch whose lengths are written in more varint bytes than they need (valid Kafka, which readers
    accept): the writer must write such records from their parts, not copy their bytes."""
    def varint(value: int, overlong: bool) -> bytes:
        zigzag = (value << 1) ^ (value >> 63)
        assert zigzag < 0x80
        return bytes([zigzag | 0x80, 0]) if overlong else bytes([zigzag])
    records = b""
    for delta, overlong in enumerate([True, False, True]):
        body = (b"\x00" + varint(delta, False) + varint(delta, False) + varint(1, overlong) + b"k"
                + varint(8, overlong) + b'{"v": 1}' + varint(1, overlong) + varint(2, overlong) + b"ce"
                + varint(1, overlong) + b"x")
        records += varint(len(body), False) + body
    after_crc = ((0).to_bytes(2, "big") + (2).to_bytes(4, "big") + (1_700_000_000_000).to_bytes(8, "big") * 2
                 + (-1).to_bytes(8, "big", signed=True) + (-1).to_bytes(2, "big", signed=True)
                 + (-1).to_bytes(4, "big", signed=True) + (3).to_bytes(4, "big") + records)
    return (base.to_bytes(8, "big") + (len(after_crc) + 9).to_bytes(4, "big") + (0).to_bytes(4, "big") + b"\x02"
            + calc_crc32c(after_crc).to_bytes(4, "big") + after_crc)


def test_records_with_overlong_lengths_are_written_as_from_their_parts(native: NativeJudge) -> None:
    items, _ = in_place_items(overlong_batch(40))
    assert len(items) == 1 and isinstance(items[0], in_place.InPlaceBatch)
    fetched, _, _ = judged(native, items)
    records = [in_place.consumer_record(TP, fetched.record(i)) for i in range(len(fetched))]
    assert records == aiokafkas(overlong_batch(40))
    added = [None, [("xgate-reason", "r")], [("xgate-reason", "r")]]
    for size in (1, 1 << 20):
        assert written(fetched, size, None, added) == written(records, size, None, added)
