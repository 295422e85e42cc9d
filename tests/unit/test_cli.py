"""The command line as a user runs it: exit codes, --strict, formats, lint and explain output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from gateway.testing.traffic import KINDS, generate

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "config" / "demo"


def xgate(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway.cli", *args], input=stdin, capture_output=True,
                          text=True, cwd=REPO, check=False)


def lines(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


# the definition each sample maker builds messages for, read from config/demo's documents
MADE_AS = {"telemetry": "com.example.telemetry.reading", "order_placed": "com.example.orders.placed",
           "order_cancelled": "com.example.orders.cancelled", "boiler": "boiler.status", "door": "door.opened"}


def test_check_reads_stdin_and_keeps_order() -> None:
    """Verdict i is about record i: each record is made clean or with a defect, by a maker of a known definition."""
    import random

    rng = random.Random(3)
    made: list[tuple[str, str | None]] = []
    records = []
    for _ in range(40):
        make, _, defects = rng.choice(KINDS)
        defect = rng.choice(defects) if rng.random() < 0.4 else None
        made.append((make.__name__, defect))
        records.append(make(rng, defect))
    result = xgate("check", "--registry", str(DEMO), "-", stdin=lines(records))
    verdicts = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(verdicts) == 40
    assert result.returncode == 1
    assert {d is None for _, d in made} == {True, False} and len({m for m, _ in made}) >= 4
    for index, ((maker, defect), verdict) in enumerate(zip(made, verdicts, strict=True)):
        if defect is None:
            assert verdict["verdict"] == "conformant" and verdict["violations"] == [], (index, verdict)
            assert verdict["messageid"] == MADE_AS[maker], (index, maker, verdict)
        else:
            assert verdict["verdict"] == "nonconformant" and verdict["violations"], (index, maker, defect, verdict)


def test_exit_zero_when_all_conformant(tmp_path: Path) -> None:
    clean = generate(200, seed=5, defect_rate=0.0)
    source = tmp_path / "clean.jsonl"
    source.write_text(lines(clean))
    result = xgate("check", "--registry", str(DEMO), str(source))
    assert result.returncode == 0, result.stdout[-2000:]


def test_every_demo_defect_is_caught_and_every_clean_message_passes() -> None:
    import random

    from gateway.check import judge_record
    from gateway.compiler import compile_registry
    from gateway.loader import load_snapshot

    snapshot = load_snapshot([DEMO])
    ruleset = compile_registry(snapshot.registry)
    rng = random.Random(1)
    for make, _, defects in KINDS:
        for _ in range(5):
            clean = judge_record(ruleset, make(rng, None))
            assert clean.conformant, (make.__name__, clean.as_dict())
        for defect in defects:
            verdict = judge_record(ruleset, make(rng, defect))
            assert not verdict.conformant, (make.__name__, defect)
            assert verdict.violations, (make.__name__, defect)


def test_unknown_endpoint_option_is_a_usage_error() -> None:
    result = xgate("check", "--registry", str(DEMO), "--endpoint", "nope", stdin="")
    assert result.returncode == 2 and "nope" in result.stderr


def test_nothing_compiled_is_exit_two(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"endpoints": {"e": {"protocol": "KAFKA",}}}')
    result = xgate("check", "--registry", str(broken), stdin='{"protocol": "KAFKA"}\n')
    assert result.returncode == 2
    assert "broken.json:1:" in result.stderr and "trailing comma" in result.stderr


def test_document_errors_go_to_stderr_and_strict_turns_them_into_exit_two(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{ not json")
    record = generate(1, seed=2, defect_rate=0.0)[0]
    relaxed = xgate("check", "--registry", str(DEMO), "--registry", str(tmp_path / "bad.json"), "-",
                    stdin=lines([record]))
    assert relaxed.returncode == 0 and "bad.json:1:" in relaxed.stderr
    strict = xgate("check", "--strict", "--registry", str(DEMO), "--registry", str(tmp_path / "bad.json"), "-",
                   stdin=lines([record]))
    assert strict.returncode == 2 and strict.stdout == ""


def test_unreadable_line_keeps_alignment() -> None:
    good = generate(1, seed=2, defect_rate=0.0)[0]
    result = xgate("check", "--registry", str(DEMO), "-", stdin="not json\n" + lines([good]))
    first, second = (json.loads(line) for line in result.stdout.splitlines())
    assert first["violations"][0]["rule"] == "decode" and first["violations"][0]["path"] == "record"
    assert second["verdict"] == "conformant"
    assert result.returncode == 1


def test_table_counts_by_verdict_message_and_rule() -> None:
    records = generate(300, seed=9)
    result = xgate("check", "--registry", str(DEMO), "--format", "table", "-", stdin=lines(records))
    assert result.stdout.startswith("messages: 300\n")
    assert "com.example.telemetry/com.example.telemetry.reading" in result.stdout
    assert "violations by rule:" in result.stdout


def test_lint_json_names_each_file_and_exits_one_on_errors(tmp_path: Path) -> None:
    (tmp_path / "ok.json").write_text(json.dumps({"messagegroups": {"g": {"messages": {"m": {
        "envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "t"}}}}}}}))
    (tmp_path / "dangling.json").write_text(json.dumps({"endpoints": {"e": {
        "protocol": "KAFKA", "messagegroups": ["#/messagegroups/missing"]}}}))
    result = xgate("lint", "--format", "json", str(tmp_path))
    report = json.loads(result.stdout)
    assert result.returncode == 1
    by_name = {Path(f["file"]).name: f for f in report["files"]}
    assert by_name["ok.json"]["errors"] == [] and by_name["ok.json"]["messages"] == 1
    [error] = by_name["dangling.json"]["errors"]
    assert error["code"] == "dangling-ref" and error["pointer"] == "/endpoints/e/messagegroups/0"
    assert xgate("lint", str(DEMO)).returncode == 0


def test_explain_lists_each_candidate_with_its_violations(tmp_path: Path) -> None:
    record = {"endpoint": "telemetry.in", "protocol": "KAFKA", "topic": "telemetry", "key": "dev-1",
              "headers": {"ce_specversion": "1.0", "ce_type": "com.example.telemetry.reading", "ce_id": "1",
                          "ce_source": "/sites/a/devices/dev-2", "ce_time": "2026-11-21T10:00:00Z"},
              "body": "{\"temperature\": 21.5, \"unit\": \"C\"}"}
    message = tmp_path / "m.json"
    message.write_text(json.dumps(record))
    result = xgate("explain", "--registry", str(DEMO), str(message))
    assert result.returncode == 1
    assert "x com.example.telemetry/com.example.telemetry.reading" in result.stdout
    assert "[placeholder]" in result.stdout
    assert "not tried" in result.stdout and "com.example.telemetry.alarm" in result.stdout


def test_check_applies_the_message_limits_of_gateway_yaml(tmp_path: Path) -> None:
    import shutil

    import yaml

    from gateway.recorded import envelope_from_record

    config = tmp_path / "demo"
    shutil.copytree(DEMO, config)
    settings = yaml.safe_load((config / "gateway.yaml").read_text())
    settings["runtime"]["limits"] = {"max_body_bytes": 120}
    (config / "gateway.yaml").write_text(yaml.safe_dump(settings))
    records = generate(60, seed=8, defect_rate=0.0)

    def rules(directory: Path) -> list[list[str]]:
        result = xgate("check", "--registry", str(directory), "-", stdin=lines(records))
        return [[v["rule"] for v in json.loads(line)["violations"]] for line in result.stdout.splitlines()]
    assert rules(DEMO) == [[]] * 60
    # bodies over 120 bytes are judged no further, the rest as before
    expected = [["limit"] if len(envelope_from_record(r).body) > 120 else [] for r in records]
    assert ["limit"] in expected and [] in expected
    assert rules(config) == expected
