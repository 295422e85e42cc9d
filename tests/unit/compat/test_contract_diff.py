"""`xgate diff --registry OLD --against NEW` with no traffic: the documents compared, each change with whom it
breaks, and the exit code by `--compatibility` (Confluent Schema Registry's modes: backward refuses changes
that refuse what producers send today, forward those that admit what consumers were told they would not get,
full both). The three changes issue 33 found passing the old traffic-only gate on config/demo are caught."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from gateway import cli

DEMO = Path(__file__).resolve().parents[3] / "config" / "demo"


def _copy(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    for document in DEMO.glob("*.xreg.json"):
        shutil.copy(document, folder / document.name)
    return folder


def _edit(folder: Path, name: str, change: Any) -> None:
    path = folder / name
    document = json.loads(path.read_text("utf-8"))
    change(document)
    path.write_text(json.dumps(document), "utf-8")


def _orders(document: dict[str, Any]) -> dict[str, Any]:
    return document["messagegroups"]["com.example.orders"]["messages"]


def _schema(document: dict[str, Any], name: str) -> dict[str, Any]:
    schemas = document["schemagroups"]["com.example.orders"]["schemas"]
    return next(s for key, s in schemas.items() if name in key)["versions"]["1"]["schema"]


def _diff(capsys: pytest.CaptureFixture[str], old: Path, new: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code = cli.main(["diff", "--registry", str(old), "--against", str(new), "--format", "json", *extra])
    return code, json.loads(capsys.readouterr().out)


def _changes(report: dict[str, Any]) -> set[tuple[str, str, str, str]]:
    return {(c["definition"].rpartition("/")[2], c["path"], c["kind"], c["breaks"]) for c in report["contract_changes"]}


@pytest.fixture
def demo_cases(tmp_path: Path) -> tuple[Path, Path]:
    old, new = _copy(tmp_path, "old"), _copy(tmp_path, "new")

    def orders(document: dict[str, Any]) -> None:
        _schema(document, "placed")["required"].append("currency")
        reason = _schema(document, "cancelled")["fields"][1]["type"]
        reason["symbols"].remove("STOCK")

    def telemetry(document: dict[str, Any]) -> None:
        alarm = document["messagegroups"]["com.example.telemetry"]["messages"]["com.example.telemetry.alarm"]
        alarm["envelopemetadata"]["severity"]["type"] = "string"

    _edit(new, "orders.xreg.json", orders)
    _edit(new, "telemetry.xreg.json", telemetry)
    return old, new


def test_the_three_demo_cases_are_caught_without_traffic(demo_cases: tuple[Path, Path],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _diff(capsys, *demo_cases)
    assert code == 1
    assert _changes(report) == {
        ("com.example.orders.placed", "dataschema:/currency", "required", "producers"),
        ("com.example.orders.cancelled", "dataschema:/reason", "enum-symbols", "both"),
        ("com.example.telemetry.alarm", "envelopemetadata.severity", "type", "both"),
    }
    assert report["compatibility"] == "backward" and report["refused_by_mode"] == 3


@pytest.mark.parametrize(("mode", "code"), [("backward", 0), ("forward", 1), ("full", 1), ("none", 0)])
def test_a_loosening_passes_backward_and_fails_forward(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      mode: str, code: int) -> None:
    old, new = _copy(tmp_path, "old"), _copy(tmp_path, "new")
    _edit(new, "orders.xreg.json", lambda d: _schema(d, "placed")["required"].remove("total"))
    got, report = _diff(capsys, old, new, "--compatibility", mode)
    assert _changes(report) == {("com.example.orders.placed", "dataschema:/total", "required", "consumers")}
    assert got == code


def test_definitions_removed_and_added(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = _copy(tmp_path, "old"), _copy(tmp_path, "new")

    def rename(document: dict[str, Any]) -> None:
        messages = _orders(document)
        messages["com.example.orders.voided"] = messages.pop("com.example.orders.cancelled")  # same CE type
        messages["com.example.orders.voided"]["envelopemetadata"]["type"]["value"] = "com.example.orders.voided"
        del messages["com.example.orders.placed"]

    _edit(new, "orders.xreg.json", rename)
    code, report = _diff(capsys, old, new)
    assert ("com.example.orders.placed", "", "removed", "producers") in _changes(report)
    assert ("com.example.orders.voided", "", "added", "consumers") in _changes(report)
    assert code == 1


def test_the_same_documents_change_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _diff(capsys, _copy(tmp_path, "old"), _copy(tmp_path, "new"))
    assert (code, report["contract_changes"]) == (0, [])


def test_a_traffic_file_holding_no_message_is_a_usage_error(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", "utf-8")
    code = cli.main(["diff", "--registry", str(DEMO), "--against", str(DEMO), str(empty)])
    assert code == 2
    assert "holds no recorded message" in capsys.readouterr().err


def test_protobuf_payloads_are_compared_by_field_number(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools", reason="the protobuf extra compiles .proto sources")
    from gateway.compat import compare_registries
    from tests.unit.builders import ce_message, load_files, registry

    def document(source: str) -> dict[str, Any]:
        return registry("KAFKA", {"m": ce_message("t", dataschemaformat="Protobuf/3", dataschema=source)})

    old = load_files(tmp_path / "a", {"r.xreg.json": document('syntax = "proto3"; message M { int32 n = 1; }')})
    new = load_files(tmp_path / "b", {"r.xreg.json": document('syntax = "proto3"; message M { bool n = 1; }')})
    found = compare_registries(old.snapshot.registry, new.snapshot.registry)
    assert [(c.path, c.kind, c.breaks.value) for c in found] == [("dataschema:/n", "type", "both")]


def test_against_a_shadow_folder_lays_it_over_the_active_documents(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """config/demo/shadow holds the telemetry document with the battery bound raised: the comparison is the
    active registry against that file laid over it (every other document the same: no other change)."""
    code, report = _diff(capsys, DEMO, DEMO / "shadow")
    assert _changes(report) == {("com.example.telemetry.reading", "dataschema:/battery", "minimum", "producers")}
    assert code == 1
    empty = _copy(tmp_path, "config")
    (empty / "shadow").mkdir()
    assert cli.main(["diff", "--registry", str(empty), "--against", str(empty / "shadow")]) == 2
    assert "holds no document" in capsys.readouterr().err


def test_traffic_measures_each_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each document change gets the messages whose verdict it changed, from the violations that say why; the
    demo traffic's readings with a battery under 20 are the shadow bound's, and only its."""
    from gateway.testing.traffic import generate

    records = generate(800, seed=7, defect_rate=0.0)
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_text("".join(json.dumps(record) + "\n" for record in records), "utf-8")
    low = [number for number, record in enumerate(records, 1)
           if record["endpoint"] == "telemetry.in" and "battery" in record.get("body", "")
           and json.loads(record["body"]).get("battery", 100) < 20]
    assert low  # the generator makes some
    code, report = _diff(capsys, DEMO, DEMO / "shadow", str(traffic))
    [change] = report["contract_changes"]
    assert change["measured"]["messages"] == change["measured"]["alone"] == report["changed"]["tightened"] == len(low)
    assert change["measured"]["lines"] == low[:3]
    assert report["unexplained_by_a_document_change"] == 0 and code == 1


def test_transitive_modes_compare_every_earlier_version(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Confluent's BACKWARD_TRANSITIVE: the new schema must read what every earlier version wrote. Version 1
    of `placed` had no `note`; version 2 added it as optional; version 3 makes it required. Against version 2
    alone that is one change; transitively, against version 1 too."""
    old, new = _copy(tmp_path, "old"), _copy(tmp_path, "new")

    def versions(document: dict[str, Any], count: int) -> None:
        schema = document["schemagroups"]["com.example.orders"]["schemas"]["placed"]
        first = schema["versions"]["1"]
        first.pop("isdefault", None)
        schema.pop("metadefaultversionid", None)
        schema.pop("defaultversionid", None)
        second = json.loads(json.dumps(first))
        second["schema"]["properties"]["note"] = {"type": "string"}
        schema["versions"]["2"] = second
        if count == 3:
            third = json.loads(json.dumps(second))
            third["schema"]["required"].append("note")
            schema["versions"]["3"] = third

    _edit(old, "orders.xreg.json", lambda d: versions(d, 2))
    _edit(new, "orders.xreg.json", lambda d: versions(d, 3))
    _, plain = _diff(capsys, old, new)
    assert _changes(plain) == {("com.example.orders.placed", "dataschema:/note", "required", "producers")}
    code, transitive = _diff(capsys, old, new, "--compatibility", "backward-transitive")
    reasons = sorted(c["reason"] for c in transitive["contract_changes"])
    assert reasons[0] == "`note` is now required" and reasons[1].startswith("against version 1: ")
    assert code == 1


@pytest.mark.parametrize(("before", "after", "breaks"), [
    ("symbol", "string", "consumers"),   # every symbol is a string: widened
    ("string", "uri", "producers"),      # not every string is a URI: narrowed
    ("integer", "number", "consumers"),
    ("integer", "string", "both"),       # a structured event's 7 is no string, and "x" is no integer
])
def test_an_attribute_type_change_by_the_values_each_accepts(tmp_path: Path, before: str, after: str,
                                                             breaks: str) -> None:
    from gateway.compat import compare_registries
    from tests.unit.builders import ce_message, load_files, registry

    def document(kind: str) -> dict[str, Any]:
        return registry("KAFKA", {"m": ce_message("t", {"x": {"type": kind}})})

    old = load_files(tmp_path / "a", {"r.xreg.json": document(before)})
    new = load_files(tmp_path / "b", {"r.xreg.json": document(after)})
    found = compare_registries(old.snapshot.registry, new.snapshot.registry)
    assert [(c.path, c.kind, c.breaks.value) for c in found] == [("envelopemetadata.x", "type", breaks)]


def test_against_the_shadow_folder_gateway_yaml_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """issue 33, item 4: gateway.yaml's `runtime.shadow_dir` names the candidate's folder instead of DIR/shadow;
    `--against` that folder is the same overlay the gateway judges."""
    config = _copy(tmp_path, "config")
    candidate = tmp_path / "candidate"
    shutil.copytree(DEMO / "shadow", candidate)
    (config / "gateway.yaml").write_text("runtime:\n  shadow_dir: ../candidate\n")
    code, report = _diff(capsys, config, candidate)
    assert _changes(report) == {("com.example.telemetry.reading", "dataschema:/battery", "minimum", "producers")}
    assert code == 1
