"""A produce request's record batches judged (gateway/proxy/judging.py): the core's in-place reading of plain
batches gives what aiokafka's reader and the core's record judging give for the same records, and whatever
the core does not read (compressed, corrupt, legacy) takes the reader's way with the same outcome."""

from __future__ import annotations

import json
import random

import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder  # type: ignore[import-untyped]
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder  # type: ignore[import-untyped]
from aiokafka.record.util import calc_crc32c  # type: ignore[import-untyped]

from gateway.compiler.core import NativeJudge, native_available
from gateway.proxy.judging import BatchVerdicts, _failed, decode, judge
from tests.unit.runtime.test_pipeline import reference_ruleset

pytestmark = pytest.mark.skipif(not native_available(), reason="the native core is not built (make install)")
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@pytest.fixture(scope="module")
def native(tmp_path_factory: pytest.TempPathFactory) -> NativeJudge:
    return NativeJudge(reference_ruleset(tmp_path_factory.mktemp("registry")))


Record = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def cloudevent(number: int, kind: str = "ok") -> Record:
    headers: list[tuple[str, bytes | None]] = [
        ("ce_specversion", b"1.0"), ("ce_id", str(number).encode()), ("ce_source", b"/s"),
        ("ce_type", b"com.example.other" if kind == "unknown" else b"com.example.reading"),
        ("content-type", b"application/json"), ("trace", None)]
    body = {"v": "not a number"} if kind == "invalid" else {"v": number}
    return (f"k{number}".encode() if number % 3 else None, json.dumps(body).encode(), headers)


def position(native: NativeJudge) -> int:
    found = native.endpoint_position("in")
    assert found is not None
    return found


def batch(records: list[Record], codec: str = "none", log_append_time: bool = False) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=CODECS[codec], is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for offset, (key, value, headers) in enumerate(records):
        builder.append(offset, timestamp=1_700_000_000_000 + offset, key=key, value=value, headers=headers)
    data = bytearray(builder.build())
    if log_append_time:
        data[22] |= 0x08  # the attributes' timestamp type; the CRC is written again below
        data[17:21] = calc_crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


def by_reader(native: NativeJudge, data: bytes) -> BatchVerdicts:
    """The same data the way the proxy judged every batch before the core read them: aiokafka's reader, then
    the core over the decoded records."""
    records, corrupt = decode("in", 0, data)
    if corrupt is not None or not records:
        return BatchVerdicts(len(records), records, [], corrupt)
    results = native.judge_records(position(native), records)
    return BatchVerdicts(len(records), records, _failed(native, "in", records, enumerate(results)))


def same(native: NativeJudge, data: bytes) -> BatchVerdicts:
    judged, expected = judge(native, "in", "in", 0, data), by_reader(native, data)
    assert (judged.count, judged.corrupt) == (expected.count, expected.corrupt)
    assert [(i, v.as_dict()) for i, v in judged.failed] == [(i, v.as_dict()) for i, v in expected.failed]
    for index, _ in judged.failed:  # what a refusal and a dead letter name
        assert judged.records[index] == expected.records[index]
    return judged


def test_a_conformant_plain_batch_is_read_by_the_core_alone(native: NativeJudge) -> None:
    data = batch([cloudevent(n) for n in range(20)])
    assert native.judge_batches(position(native), "in", 0, data) == (20, [])
    judged = same(native, data)
    assert (judged.count, judged.records, judged.failed) == (20, [], [])


def test_what_does_not_conform_is_named_by_index_and_record(native: NativeJudge) -> None:
    records = [cloudevent(n, "invalid" if n == 3 else "unknown" if n == 7 else "ok") for n in range(10)]
    data = batch(records) + batch([cloudevent(10, "invalid")])
    judged = same(native, data)
    assert judged.count == 11
    assert [(index, verdict.outcome.value, verdict.messageid) for index, verdict in judged.failed] == [
        (3, "nonconformant", "reading"), (7, "nonconformant", None), (10, "nonconformant", "reading")]
    assert judged.records[3][2:5] == (records[3][0], records[3][2], records[3][1])


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_a_compressed_batch_is_decoded_by_the_reader(native: NativeJudge, codec: str) -> None:
    data = batch([cloudevent(n, "invalid" if n == 2 else "ok") for n in range(5)], codec)
    assert native.judge_batches(position(native), "in", 0, data) is None
    assert [i for i, _ in same(native, data).failed] == [2]


def test_log_append_time_batches_agree(native: NativeJudge) -> None:
    same(native, batch([cloudevent(n, "invalid" if n == 1 else "ok") for n in range(3)], log_append_time=True))


def test_corrupt_and_legacy_data_take_the_readers_way(native: NativeJudge) -> None:
    good = batch([cloudevent(n) for n in range(4)])
    flipped = bytearray(good)
    flipped[-3] ^= 0xFF
    assert same(native, bytes(flipped)).corrupt == "a record batch whose CRC does not match its contents"
    assert same(native, good[:-5]).count == 0  # a cut batch: the reader stops before it, nothing to judge
    legacy = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    legacy.append(0, timestamp=1, key=None, value=cloudevent(0)[1])
    assert same(native, bytes(legacy.build())).count == 1


def test_random_batches_agree_with_the_reader(native: NativeJudge) -> None:
    """Batches of every shape the proxy meets, each judged both ways: counts, indexes and verdicts equal."""
    rng = random.Random(31)
    kinds = ["ok", "ok", "ok", "invalid", "unknown"]
    for round_ in range(150):
        records = [cloudevent(rng.randrange(1000), rng.choice(kinds)) for _ in range(rng.randrange(1, 30))]
        for index, (key, value, headers) in enumerate(records):
            change = rng.randrange(8)
            if change == 0:
                records[index] = (key, None, headers)  # a tombstone
            elif change == 1:
                records[index] = (key, value, [h for h in headers if h[0] != "ce_id"])
            elif change == 2:
                records[index] = (key, b"{not json", headers)
            elif change == 3:
                records[index] = (key, value, [*headers, ("ce_time", b"not a time"), ("\u00e9t\u00e9", b"\xff")])
        codec = rng.choice(["none", "none", "none", "gzip"])
        data = b"".join(batch(records[at:at + 7], codec) for at in range(0, len(records), 7))
        judged = same(native, data)
        assert judged.count == len(records), round_
        read_by_core = native.judge_batches(position(native), "in", 0, data) is not None
        assert read_by_core == (codec == "none"), round_


def test_data_the_core_does_not_know_the_endpoint_of_is_judged_in_python(native: NativeJudge) -> None:
    assert judge(native, "nowhere", "in", 0, batch([cloudevent(1)])).count == 1
    assert judge(native, "in", "in", 0, None) == BatchVerdicts(0, [], [])
