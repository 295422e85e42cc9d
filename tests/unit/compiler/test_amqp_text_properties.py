"""AMQP properties and application-properties in their native type or as text (validation rule 5.3, 5.7):
`"priority": "2"` is a valid `integer` and `"express": "true"` a valid `boolean`, as 2 and true are; text that is
not the type's canonical form is still a `type` violation. Judged through `xgate check` on recorded messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.cli import main

DOCUMENT = {"messagegroups": {"orders": {"messages": {"order.created": {
    "protocol": "AMQP/1.0",
    "protocoloptions": {
        "properties": {"subject": {"value": "order.created", "required": True},
                       "message-id": {"type": "string"}},
        "application-properties": {"priority": {"type": "integer", "required": True},
                                   "express": {"type": "boolean", "required": True},
                                   "weight": {"type": "number"},
                                   "lane": {"type": "integer", "value": 3}},
    }}}}},
    "endpoints": {"orders.in": {"usage": ["consumer"], "protocol": "AMQP/1.0",
                                "messagegroups": ["#/messagegroups/orders"]}}}


def judge(tmp_path: Path, capsys: pytest.CaptureFixture[str], app: dict[str, Any]) -> list[dict[str, Any]]:
    (tmp_path / "orders.xreg.json").write_text(json.dumps(DOCUMENT))
    record = {"endpoint": "orders.in", "protocol": "AMQP/1.0", "body": "{}",
              "properties": {"subject": "order.created", "message-id": "m-1"}, "application-properties": app}
    (tmp_path / "in.jsonl").write_text(json.dumps(record) + "\n")
    main(["check", "--registry", str(tmp_path / "orders.xreg.json"), str(tmp_path / "in.jsonl")])
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


@pytest.mark.parametrize("app", [
    {"priority": 2, "express": True},
    {"priority": "2", "express": "true"},
    {"priority": "+02", "express": "false", "weight": "1.5e3", "lane": "3"},
    {"priority": -7, "express": False, "weight": 2, "lane": 3},
], ids=["native", "text", "text-canonical-forms", "native-all"])
def test_native_and_text_forms_are_both_conformant(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   app: dict[str, Any]) -> None:
    [verdict] = judge(tmp_path, capsys, app)
    assert verdict["verdict"] == "conformant", verdict
    assert verdict["messageid"] == "order.created"


@pytest.mark.parametrize("app, path, rule", [
    ({"priority": "two", "express": "true"}, "protocoloptions.application-properties.priority", "type"),
    ({"priority": "2", "express": "yes"}, "protocoloptions.application-properties.express", "type"),
    ({"priority": "2.5", "express": "true"}, "protocoloptions.application-properties.priority", "type"),
    ({"priority": "9999999999", "express": "true"}, "protocoloptions.application-properties.priority", "type"),
    ({"priority": "2", "express": "true", "lane": "4"}, "protocoloptions.application-properties.lane", "value"),
    ({"priority": True, "express": "true"}, "protocoloptions.application-properties.priority", "type"),
])
def test_text_outside_the_canonical_form_is_still_a_violation(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              app: dict[str, Any], path: str, rule: str) -> None:
    [verdict] = judge(tmp_path, capsys, app)
    assert verdict["verdict"] == "nonconformant"
    assert [(v["path"], v["rule"]) for v in verdict["violations"]] == [(path, rule)]
