"""`xgate check` through the native checker (native/src/check.rs) against the Python reading of the same bytes.

gateway/check.py `check_stream` hands a file's bytes to the checker when the core is built; a text stream
with no bytes beneath it is read and judged line by line in Python (`_check_text`). Both must write the same
verdict lines and count the same summary, on mutated workload and demo records (the differential corpus)
and on lines that only the Python reading decides: blank and whitespace lines, every line ending, bytes that
are not UTF-8, a byte-order mark, base64 forms, other protocols, endpoints named oddly.
"""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from bench import workload
from gateway import check
from gateway.check import Summary, check_stream, native_checker
from gateway.compiler import Ruleset
from gateway.compiler.core import NativeJudge, native_available
from gateway.envelope import Envelope
from gateway.recorded import record_from_envelope
from gateway.testing import traffic
from tests.unit.compiler.mutations import mutated
from tests.unit.compiler.test_native_differential import ALL_KINDS

pytestmark = pytest.mark.skipif(not native_available(), reason="the native core is not built (make install)")

# lines whose reading the checker leaves to Python, each with its line end
ODD_LINES = [
    b"\n", b"   \n", b"\t\r\n", "\u00a0\u2003\n".encode(), b"not json\n", b"[1]\n", b"{}\n", b'{"protocol": "KAFKA"}\r',
    b'{"endpoint": null, "body": "{}"}\n', b'{"endpoint": "", "body": "{}"}\n', b'{"endpoint": "nope", "body": "{}"}\n',
    b'{"protocol": "kafka", "body": "{\\"a\\": 1}", "headers": {"ce_type": "x"}}\r\n',
    b'{"protocol": "MQTT", "topic": "t", "body": "{}"}\n', b'{"body_base64": "e30=", "headers": {}}\n',
    b'{"key_base64": "AAE=", "body": "{}"}\n', b'{"body": "\xff\xfe", "headers": {}}\n',
    b'{"body": "{}", "headers": {"ce_id": {"base64": "/w=="}}}\n', b'{"body": "{}", "partition": "1"}\n',
    b'{"body": "{}", "timestamp": 1.5}\n', b'{"body": "{}", "headers": {"a": "1", "a": "2"}}\n',
    b'{"body": "{}", "topic": 7}\n', b'{"body": ' + b"[" * 140 + b"]" * 140 + b"}\n",
]


def _records(ruleset_seeds: list[dict[str, Any]], per_kind: int, seed: int) -> list[bytes]:
    lines = []
    for _, changed, envelope in mutated(ruleset_seeds, ALL_KINDS, per_kind, random.Random(seed)):
        record = record_from_envelope(envelope) if isinstance(changed, Envelope) else changed
        lines.append(json.dumps(record).encode() + b"\n")
    return lines


class _TextOnly:
    """A text stream with no bytes beneath it: `check_stream` reads it in Python."""

    def __init__(self, data: bytes) -> None:
        self.stream = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogateescape")

    def readlines(self, hint: int) -> list[str]:
        return self.stream.readlines(hint)


def _both(ruleset: Ruleset, data: bytes, endpoint: str | None = None) -> tuple[bytes, Summary]:
    native_out, native_summary = io.BytesIO(), Summary()
    source = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogateescape")
    check_stream(ruleset, source, native_out, native_summary, endpoint)
    text_out, text_summary = io.BytesIO(), Summary()
    check_stream(ruleset, _TextOnly(data), text_out, text_summary, endpoint)  # type: ignore[arg-type]
    assert native_out.getvalue() == text_out.getvalue()
    assert native_summary == text_summary
    return native_out.getvalue(), native_summary


def _handed_back(ruleset: Ruleset, data: bytes, endpoint: str | None = None) -> tuple[int, int]:
    """(lines judged by the checker itself, lines it handed back) for one chunk."""
    checker = native_checker(NativeJudge(ruleset), endpoint)
    _, deferred, counts = checker.check(data, True)
    conformant, nonconformant, unmatched, _ = counts
    return sum(conformant) + sum(nonconformant) + unmatched, len(deferred)


@pytest.fixture()
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    # many chunks, each big enough for the checker to split it over two threads, lines cut between reads
    monkeypatch.setattr(check, "CHUNK_BYTES", 150_000)


def test_workload_lines_read_alike_natively_and_in_python(workload_ruleset: Ruleset, small_chunks: None) -> None:
    seeds = [s.record for s in workload.samples(600) if s.kind == workload.OK]
    lines = _records(seeds, per_kind=60, seed=41)
    rng = random.Random(41)
    mixed = lines + ODD_LINES * 3
    rng.shuffle(mixed)
    data = b"\xef\xbb\xbf" + b"".join(mixed) + b'{"body": "{}"}'  # a byte-order mark first, no line end last
    written, summary = _both(workload_ruleset, data)
    assert summary.total == len(written.splitlines()) > len(lines)
    assert summary.by_verdict["conformant"] > 200 and summary.by_verdict["nonconformant"] > 1000, summary
    judged, handed = _handed_back(workload_ruleset, b"".join(lines))
    # not vacuous: the checker itself judged and wrote most of the differential corpus
    assert judged >= 0.8 * len(lines), (judged, handed)


def test_an_endpoint_given_on_the_command_line(workload_ruleset: Ruleset) -> None:
    seeds = [s.record for s in workload.samples(200, seed=5)]
    lines = [json.dumps({k: v for k, v in record.items() if k != "endpoint"}).encode() + b"\n" for record in seeds]
    _, summary = _both(workload_ruleset, b"".join(lines), workload.ENDPOINT)
    assert summary.total == len(lines)
    assert _handed_back(workload_ruleset, b"".join(lines), workload.ENDPOINT) == (len(lines), 0)
    # an endpoint the registry lacks: every line is the Python reading's (an `endpoint` verdict)
    _, unknown = _both(workload_ruleset, b"".join(lines), "no-such-endpoint")
    assert unknown.by_rule["endpoint"] == len(lines)


def test_demo_lines_of_every_protocol(demo_ruleset: Ruleset, small_chunks: None) -> None:
    seeds = traffic.generate(300, seed=42, defect_rate=0.0)
    lines = _records(seeds, per_kind=20, seed=42)
    _, summary = _both(demo_ruleset, b"".join(lines))
    assert summary.total == len(lines)


def test_counts_follow_the_written_lines(workload_ruleset: Ruleset, tmp_path: Path) -> None:
    samples = workload.samples(300, seed=9)
    data = b"".join(json.dumps(s.record).encode() + b"\n" for s in samples)
    written, summary = _both(workload_ruleset, data)
    verdicts = [json.loads(line) for line in written.splitlines()]
    assert summary.by_verdict["conformant"] == sum(v["verdict"] == "conformant" for v in verdicts)
    assert sum(summary.by_rule.values()) == sum(len(v["violations"]) for v in verdicts)


def test_floats_are_written_as_orjson_writes_them(workload_ruleset: Ruleset) -> None:
    """A payload's float in a verdict line: orjson's shortest digits, a tie between two of them to the even one
    (Rust's own float formatting rounds it up: 268592061126924.125 became ...13 where orjson writes ...12)."""
    rng = random.Random(43)
    ties = [268592061126924.125, -268592061126924.125, 154364196807760.625, 205980619624491.375]
    spread = [rng.uniform(-1, 1) * 10.0 ** rng.randint(-12, 30) for _ in range(300)]
    seeds = [s.record for s in workload.samples(400, seed=12) if s.kind == workload.OK]
    lines, floats = [], []
    for value, record in zip(ties + spread, seeds * 2, strict=False):
        event = json.loads(record["body"])
        data = event["data"] if "specversion" in event else event
        data["count"] = value  # an integer in 0..100000: every one of these fails, the float its actual value
        lines.append(json.dumps(dict(record, body=json.dumps(event))).encode() + b"\n")
        floats.append(value)
    written, summary = _both(workload_ruleset, b"".join(lines))
    assert summary.by_verdict["nonconformant"] == len(lines)
    for line, value in zip(written.splitlines(), floats, strict=True):
        actuals = [v["actual"] for v in json.loads(line)["violations"] if v["path"].endswith("/count")]
        assert actuals and all(a == value for a in actuals), (line, value)
        assert orjson.dumps(value) in line, (line, orjson.dumps(value))
    assert _handed_back(workload_ruleset, b"".join(lines)) == (len(lines), 0)  # the checker wrote every line
