"""Dead letters' `xgate-*` headers written by the core (native/src/reasons.rs) against remap.reason_headers.

A Kafka to Kafka route's records read in place are judged by `Core.judge_fetched`, which, given a ReasonWriter,
writes each nonconformant record's headers itself (gateway/runtime/record_lane.py sends them). Here the mutated
workload messages of the differential test (tests/unit/compiler/test_native_differential.py), written into
Kafka record batches as a broker would hand them out, are judged so; every header list the core wrote must
equal, pair for pair, what remap.reason_headers writes from the same result, and where it wrote none
(text beyond ASCII, a value orjson does not write), remap.py's own text must be one the core may not write.
"""

from __future__ import annotations

import json
import random
from typing import Any

import orjson
import pytest

from bench import workload
from gateway.compiler import Ruleset
from gateway.compiler.core import NativeJudge, kafka_record, native_available
from gateway.recorded import envelope_from_record
from gateway.runtime.remap import reason_headers
from gateway.verdict import Outcome
from tests.unit.adapters.test_kafka_in_place import batch
from tests.unit.compiler.mutations import mutated
from tests.unit.compiler.test_native_differential import ALL_KINDS

pytestmark = pytest.mark.skipif(not native_available(), reason="the native core is not built (make install)")
SOURCE = "workload.in"


def judged(ruleset: Ruleset, records: list[tuple[Any, ...]]) -> tuple[NativeJudge, list[Any], list[Any], list[int]]:
    """The records (kafka_record's shape) as plain record batches of 50, offsets from 1,000 on, judged in place
    with the core writing dead letters' headers: the judge, each record's result, the headers written for it
    and its offset."""
    judge = NativeJudge(ruleset)
    position = judge.endpoint_position(SOURCE)
    assert position is not None
    spans = []
    for start in range(0, len(records), 50):
        data = batch([(key, value, headers or []) for _, _, key, headers, value, _ in records[start:start + 50]],
                     1000 + start)
        spans.append(("bench-in", 2, data, 0, len(data)))
    found = judge.judge_fetched(position, spans, judge.reason_writer(SOURCE))
    assert found is not None
    _, results, written = found
    assert written is not None and len(written) == len(results) == len(records)
    return judge, results, written, list(range(1000, 1000 + len(records)))


def writable(record: tuple[Any, ...]) -> bool:
    """A record a Kafka batch holds as it is: bytes (or None) key, value and header values, str header names."""
    _, _, key, headers, value, _ = record
    parts_ok = all(part is None or isinstance(part, bytes) for part in (key, value))
    return parts_ok and all(isinstance(n, str) and (v is None or isinstance(v, bytes)) for n, v in headers or [])


def orjson_ascii(value: Any) -> bool:
    """Whether remap.py writes `value` with orjson (its text ASCII), the only text the core writes."""
    try:
        return orjson.dumps(value, default=str).isascii()
    except TypeError:  # an integer past 64 bits
        return False


def expected(judge: NativeJudge, result: Any, offset: int) -> list[tuple[str, str]]:
    number = result[0]
    group, message = judge.ids[number] if number is not None else (None, None)
    return reason_headers(Outcome.NONCONFORMANT.value, group, message, judge.violation_dicts(result), SOURCE,
                          "bench-in", {"topic": "bench-in", "partition": 2, "offset": offset})


def test_the_cores_dead_letter_headers_are_reason_headers(workload_ruleset: Ruleset) -> None:
    seeds = [s.record for s in workload.samples(600) if s.kind == workload.OK]
    records = [kafka_record(envelope) for _, _, envelope in mutated(seeds, ALL_KINDS, 120, random.Random(41))]
    judge, results, written, offsets = judged(workload_ruleset, [record for record in records if writable(record)])
    compared = left = 0
    for result, headers, offset in zip(results, written, offsets, strict=True):
        if result is None or result.__class__ is int:
            assert headers is None  # headers only for what did not conform
            continue
        python = expected(judge, result, offset)
        if headers is None:  # left to remap.py: its text is one the core does not write
            left += 1
            assert not orjson_ascii(judge.violation_dicts(result)), python
            continue
        assert headers == python
        compared += 1
    # not vacuous: thousands compared, and some left to remap.py (the quirks' text beyond ASCII)
    assert compared >= 2000 and left >= 1, (compared, left)


def _long_texts(value: Any) -> Any:
    """Every number in a payload replaced by a long text (each a type violation whose message repeats it)."""
    if isinstance(value, dict):
        return {name: _long_texts(member) for name, member in value.items()}
    if isinstance(value, list):
        return [_long_texts(item) for item in value]
    return "x" * 600 if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def test_many_violations_are_cut_as_reason_headers_cuts_them(workload_ruleset: Ruleset) -> None:
    records = []
    for sample in workload.samples(40):
        record = list(kafka_record(envelope_from_record(sample.record)))
        if sample.kind == workload.OK and record[3]:  # binary mode: the value is the payload
            record[4] = json.dumps(_long_texts(json.loads(record[4]))).encode()
            records.append(tuple(record))
    judge, results, written, offsets = judged(workload_ruleset, records)
    cut = 0
    for result, headers, offset in zip(results, written, offsets, strict=True):
        python = expected(judge, result, offset)
        assert headers == python
        cut += "more violations" in python[3][1]
    assert cut >= 3, cut  # the case this test is about
