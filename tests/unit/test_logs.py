"""`xgate run`'s logging: a level and a format from the flags or the environment, structured fields kept."""

from __future__ import annotations

import json
import logging

import pytest

from gateway import logs
from gateway.cli import main


def _record(text: str, **fields: object) -> logging.LogRecord:
    record = logging.LogRecord("xgate.reload", logging.INFO, __file__, 1, text, (), None)
    record.fields = fields
    return record


def test_json_format_is_one_object_with_the_fields() -> None:
    line = logs.JsonFormatter(worker=1).format(_record("reload applied", outcome="applied", routes=["a"]))
    entry = json.loads(line)
    assert entry["message"] == "reload applied" and entry["level"] == "info" and entry["logger"] == "xgate.reload"
    assert entry["worker"] == 1 and entry["outcome"] == "applied" and entry["routes"] == ["a"]
    assert entry["time"].endswith("+00:00")


def test_a_field_cannot_hide_the_records_own_keys() -> None:
    entry = json.loads(logs.JsonFormatter(None).format(_record("real", message="forged", level="error")))
    assert entry["message"] == "real" and entry["level"] == "info"


def test_text_format_keeps_the_fields_on_the_message_line() -> None:
    line = logs.TextFormatter(None).format(_record("reload failed", outcome="failed"))
    assert line.endswith('reload failed {"outcome": "failed"}')


def test_the_environment_gives_the_defaults_and_a_flag_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(logs.LEVEL_ENV, "warning")
    monkeypatch.setenv(logs.FORMAT_ENV, "json")
    logs.configure()
    root = logging.getLogger()
    assert root.level == logging.WARNING and isinstance(root.handlers[0].formatter, logs.JsonFormatter)
    logs.configure("debug", "text")
    assert root.level == logging.DEBUG and isinstance(root.handlers[0].formatter, logs.TextFormatter)


def test_run_refuses_an_unknown_level_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--config", "/nonexistent", "--log-level", "loud"]) == 2
    assert "log level: expected one of debug, info, warning, error, found 'loud'" in capsys.readouterr().err
