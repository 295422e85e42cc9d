"""Routes from a source endpoint's `xgate.route.*` labels read their values as gateway.yaml's routes do: a
value that is not of its kind is a problem naming the label, never silently dropped or taken as 0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.loader import load_snapshot
from gateway.routes.resolve import Route, resolve_routes
from gateway.settings import load_settings
from tests.unit.builders import ce_message, write_doc

BROKER = [{"uri": "kafka://127.0.0.1:9092"}]


def resolve(tmp_path: Path, labels: dict[str, str], settings: dict[str, Any] | None = None,
            ) -> tuple[dict[str, Route], list[tuple[str, str | None, str]]]:
    doc = {"specversion": "1.0-rc4",
           "endpoints": {
               "k.in": {"usage": ["consumer"], "protocol": "KAFKA", "messagegroups": ["#/messagegroups/g"],
                        "protocoloptions": {"endpoints": BROKER, "options": {"topic": "in"}},
                        "labels": {"xgate.route.conformant": "k.out", **labels}},
               "k.out": {"usage": ["producer"], "protocol": "KAFKA", "messagegroups": ["#/messagegroups/g"],
                         "protocoloptions": {"endpoints": BROKER, "options": {"topic": "out"}}}},
           "messagegroups": {"g": {"messages": {"m": ce_message("t")}}}}
    write_doc(tmp_path, "registry.xreg.json", doc)
    (tmp_path / "gateway.yaml").write_text(yaml.safe_dump(settings or {}))
    loaded, problems = load_settings(tmp_path)
    assert problems == []
    routes, route_problems = resolve_routes(load_snapshot([tmp_path / "registry.xreg.json"]).registry, loaded)
    return {r.source.endpoint_id: r for r in routes}, [(p.file, p.pointer, p.message) for p in route_problems]


def test_labels_with_values_of_their_kind_make_the_route(tmp_path: Path) -> None:
    routes, problems = resolve(tmp_path, {"xgate.route.inflight": "50", "xgate.route.exactly_once": "false"})
    assert problems == []
    assert routes["k.in"].inflight == 50
    assert routes["k.in"].conformant is not None and routes["k.in"].conformant.endpoint_id == "k.out"


@pytest.mark.parametrize(("label", "value", "reason"), [
    ("inflight", "0", "expected an integer of at least 1, found '0'"),
    ("inflight", "ten", "expected an integer of at least 1, found 'ten'"),
    ("inflight", "-5", "expected an integer of at least 1, found '-5'"),
    ("exactly_once", "maybe", "expected true or false, found 'maybe'"),
])
def test_a_label_value_of_the_wrong_kind_is_a_problem_naming_the_label(tmp_path: Path, label: str, value: str,
                                                                        reason: str) -> None:
    routes, problems = resolve(tmp_path, {f"xgate.route.{label}": value})
    assert "k.in" not in routes
    assert len(problems) == 1
    file, pointer, message = problems[0]
    assert file.endswith("registry.xreg.json")
    assert pointer == f"/endpoints/k.in/labels/xgate.route.{label}"
    assert reason in message


@pytest.mark.parametrize(("value", "transactional"), [("yes", True), ("1", True), ("TRUE", True), ("no", False),
                                                     ("0", False)])
def test_a_flag_label_reads_as_gateway_yaml_flags_do(tmp_path: Path, value: str, transactional: bool) -> None:
    """gateway.yaml reads true/false, yes/no and 1/0 in any case; so does a label (before, only `true` and
    `false` counted and anything else silently meant the runtime's default)."""
    routes, problems = resolve(tmp_path, {"xgate.route.exactly_once": value})
    assert problems == []
    assert ("transactional_id" in routes["k.in"].source.extra) is transactional


def test_a_gateway_yaml_route_for_the_source_wins_and_its_labels_are_not_read(tmp_path: Path) -> None:
    routes, problems = resolve(tmp_path, {"xgate.route.inflight": "ten"},
                               {"routes": [{"source": "k.in", "conformant": "k.out", "inflight": 7}]})
    assert problems == []
    assert routes["k.in"].inflight == 7
