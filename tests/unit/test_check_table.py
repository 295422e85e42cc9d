"""`check` and `run` speak of the same verdicts (issue 19 item 6): a nonconformant verdict that names no message
is what `run` routes as unmatched, and `check --format table` counts it on an `unmatched` line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.check import Summary, judge_record
from gateway.cli import main
from gateway.compiler import compile_registry
from gateway.loader import load_snapshot
from gateway.runtime.router import Kind, kind_of
from gateway.verdict import Outcome

DEMO = Path(__file__).resolve().parents[2] / "config" / "demo"
CE = {"ce_specversion": "1.0", "ce_id": "1", "ce_source": "/sites/berlin/devices/dev-1",
      "ce_time": "2026-11-21T10:00:00Z"}
RECORDS = [
    # a type no definition of the endpoint has: no-match, unmatched at `run`
    {"endpoint": "telemetry.in", "protocol": "KAFKA", "topic": "xgate-demo-telemetry", "key": "dev-1",
     "headers": {**CE, "ce_type": "com.example.unknown"}, "body": "{}"},
    # the known type with a broken payload: nonconformant naming its definition
    {"endpoint": "telemetry.in", "protocol": "KAFKA", "topic": "xgate-demo-telemetry", "key": "dev-1",
     "headers": {**CE, "ce_type": "com.example.telemetry.reading"}, "body": "{\"temperature\": \"hot\"}"},
]


def test_no_match_is_nonconformant_naming_no_message_and_run_routes_it_as_unmatched() -> None:
    snapshot = load_snapshot([DEMO])
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    unknown, broken = (judge_record(ruleset, record) for record in RECORDS)
    assert unknown.outcome is Outcome.NONCONFORMANT and unknown.messageid is None
    assert [v.rule.value for v in unknown.violations] == ["no-match"]
    assert broken.outcome is Outcome.NONCONFORMANT and broken.messageid is not None
    assert (kind_of(unknown), kind_of(broken)) == (Kind.UNMATCHED, Kind.NONCONFORMANT)
    summary = Summary()
    summary.add(unknown)
    summary.add(broken)
    assert summary.unmatched == 1 and summary.by_verdict["nonconformant"] == 2


def test_the_table_shows_unmatched(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS) + "not json\n")
    assert main(["check", "--registry", str(DEMO), "--format", "table", str(tmp_path / "in.jsonl")]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["conformant", "0", "(0.0%)"]
    assert lines[2].split() == ["nonconformant", "3", "(100.0%)"]
    assert lines[3].split()[:3] == ["unmatched", "2", "(66.7%)"]


def test_the_table_does_not_depend_on_the_order_counts_arrived_in() -> None:
    # the native checker counts rules by rule, the Python reading by message: ties must render alike
    first, second = Summary(), Summary()
    for name in ("value", "specversion", "schema", "schema"):
        first.by_rule[name] += 1
    for name in ("schema", "specversion", "schema", "value"):
        second.by_rule[name] += 1
    first.total = second.total = 4
    assert first.render() == second.render()
    assert first.render().index("specversion") < first.render().index("value")
