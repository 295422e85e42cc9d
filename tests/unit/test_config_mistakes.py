"""Configuration mistakes a user can make (issue 17): one line with file and pointer, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from gateway.loader import load_snapshot
from tests.unit.test_cli import xgate


def _scaffold(tmp_path: Path) -> Path:
    config = tmp_path / "cfg"
    assert xgate("init", str(config), "http", "nats").returncode == 0
    return config


def test_an_adapter_option_that_cannot_be_read_fails_startup_in_one_line_exit_two(tmp_path: Path) -> None:
    config = _scaffold(tmp_path)
    document = config / "http.xreg.yaml"
    document.write_text(document.read_text().replace("maxbodysize: 1048576", "maxbodysize: 1MB"))
    done = xgate("run", "--config", str(config), "--metrics-address", "")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "ExceptionGroup" not in done.stderr
    [line] = [x for x in done.stderr.splitlines() if "maxbodysize" in x]
    # one line at the option itself, with what was found (the one options check of lint, run and reload)
    assert line.startswith(f"{document}#/endpoints/http.in/protocoloptions/maxbodysize: error")
    assert "found '1MB'" in line


def test_usage_that_is_not_a_list_of_strings_is_an_error_at_its_pointer(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps({"endpoints": {"e": {"protocol": "NATS", "usage": 5}}}))
    snapshot = load_snapshot([tmp_path])
    [error] = [d for d in snapshot.diagnostics if d.severity.value == "error"]
    assert (error.file, error.pointer) == (str(tmp_path / "a.json"), "/endpoints/e/usage")
    assert "usage must be a list of strings" in error.message


def test_kafka_bootstrap_servers_in_the_rc4_form_are_the_endpoint_addresses(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps({"endpoints": {"k": {
        "protocol": "KAFKA", "usage": ["consumer"],
        "protocoloptions": {"endpoints": [{"bootstrap.servers": ["b1:9092", "b2:9092"]}], "topic": "t"}}}}))
    snapshot = load_snapshot([tmp_path])
    assert snapshot.registry.endpoints["k"].attrs["endpoints"] == ["b1:9092", "b2:9092"]


def test_lint_warns_about_a_route_that_forwards_nothing(tmp_path: Path) -> None:
    config = _scaffold(tmp_path)
    settings = yaml.safe_load((config / "gateway.yaml").read_text())
    settings["routes"] = [{"source": "nats.in", "policy": "forward"}]
    (config / "gateway.yaml").write_text(yaml.safe_dump(settings))
    done = xgate("lint", str(config))
    assert done.returncode == 0
    assert "route from 'nats.in' has no destination: every message it receives is acknowledged and dropped" \
        in done.stdout
    assert "1 warnings" in done.stdout


def test_a_number_beyond_a_double_is_reported_out_of_range_not_as_null(tmp_path: Path) -> None:
    """Issue 17 defect 10: `1e400` was judged as `null is not of type "number"`."""
    (tmp_path / "r.json").write_text(json.dumps({"endpoints": {"in": {"usage": ["consumer"], "protocol": "KAFKA",
        "messages": {"m": {"protocoloptions": {"topic": "t"}, "dataschemaformat": "JsonSchema/draft-07",
                           "dataschema": {"properties": {"v": {"type": "number", "maximum": 150}}}}}}}}))
    record = {"endpoint": "in", "protocol": "KAFKA", "topic": "t"}
    lines = "".join(json.dumps({**record, "body": body}) + "\n"
                    for body in ('{"v": 1e400}', '{"v": -1e400}', '{"v": 150.0000000000000001}'))
    done = xgate("check", "--registry", str(tmp_path), stdin=lines)
    over, under, rounded = (json.loads(line) for line in done.stdout.splitlines())
    for verdict, text in ((over, "1e400"), (under, "-1e400")):
        [violation] = verdict["violations"]
        assert violation["rule"] == "decode"
        assert f"the number {text} is out of range" in violation["message"] and "null" not in violation["message"]
    assert rounded["verdict"] == "conformant"  # read as the double 150.0 (docs/decisions.md: numbers are IEEE 754 doubles)
