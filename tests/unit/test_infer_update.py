"""`xgate infer --update EXISTING`: a reviewed contract widened only where new traffic is refused, each
loosening reported, the reviewer's edits kept, new types drafted beside the reviewed definitions."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from gateway import cli
from gateway.infer import infer
from gateway.infer.draft import read_sample, refused
from gateway.infer.update import update
from gateway.testing.traffic import generate


def _records(count: int, seed: int) -> list[tuple[int, Any]]:
    return list(enumerate(generate(count, seed=seed, defect_rate=0.0), 1))


def _reviewed() -> dict[str, Any]:
    """A draft from clean demo traffic, then a reviewer's edits: descriptions, and a bound the traffic holds."""
    document = copy.deepcopy(infer(_records(600, 5)).document)
    for group in document["messagegroups"].values():
        for mid, message in group["messages"].items():
            message["description"] = f"reviewed: {mid}"
    reading = document["schemagroups"]["telemetry.in"]["schemas"]["com.example.telemetry.reading"]
    reading["versions"]["1"]["schema"]["properties"]["battery"]["maximum"] = 100  # the reviewer's bound
    return document


def _readings_in_fahrenheit(records: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
    changed = []
    for number, record in records:
        record = copy.deepcopy(record)
        headers = record.get("headers") or {}
        if headers.get("ce_type") == "com.example.telemetry.reading" and '"unit"' in record.get("body", ""):
            body = json.loads(record["body"])
            body["unit"] = "F"
            record["body"] = json.dumps(body)
        changed.append((number, record))
    return changed


def _samples(records: list[tuple[int, Any]]) -> list[Any]:
    return [s for s in (read_sample(n, r) for n, r in records) if not isinstance(s, str)]


def test_only_the_refused_place_is_widened_and_every_edit_stays() -> None:
    reviewed = _reviewed()
    traffic = _readings_in_fahrenheit(_records(400, 9))
    assert refused(reviewed, _samples(traffic))  # the reviewed contract refuses the new unit
    result = update(reviewed, traffic)
    assert refused(result.document, _samples(traffic)) == [] and result.left_out == []
    assert any("com.example.telemetry.reading dataschema:/unit" in line for line in result.widened)
    schema = result.document["schemagroups"]["telemetry.in"]["schemas"]["com.example.telemetry.reading"]
    properties = schema["versions"]["1"]["schema"]["properties"]
    before = reviewed["schemagroups"]["telemetry.in"]["schemas"]["com.example.telemetry.reading"]
    assert properties["unit"]["anyOf"][0] == before["versions"]["1"]["schema"]["properties"]["unit"]
    assert properties["battery"]["maximum"] == 100  # the reviewer's bound, untouched
    descriptions = [m["description"] for g in result.document["messagegroups"].values()
                    for m in g["messages"].values()]
    assert all(d.startswith("reviewed: ") for d in descriptions)


def test_traffic_the_contract_accepts_changes_nothing() -> None:
    reviewed = _reviewed()
    result = update(reviewed, _records(300, 11))
    assert (result.document, result.widened, result.added) == (reviewed, [], [])


def test_a_type_no_definition_names_is_drafted_beside_the_reviewed_ones() -> None:
    reviewed = _reviewed()
    del reviewed["messagegroups"]["facility.mqtt"]  # the reviewed contract never saw the boilers
    reviewed["endpoints"]["facility.mqtt"]["messagegroups"] = []
    traffic = _records(300, 13)
    result = update(reviewed, traffic)
    assert result.added and all(name.startswith("facility.mqtt/") for name in result.added)
    assert result.document["endpoints"]["facility.mqtt"]["protocoloptions"] == \
        reviewed["endpoints"]["facility.mqtt"]["protocoloptions"]  # the reviewed endpoint keeps its address
    assert refused(result.document, _samples(traffic)) == []


def test_a_loosening_that_does_not_help_is_not_made() -> None:
    """A `time` that is no timestamp, or a missing `specversion`, fails CloudEvents' own rules whatever the
    definition declares: nothing reviewed is dropped for them, and those messages are left out."""
    reviewed = _reviewed()
    traffic = [(n, r) for n, r in enumerate(generate(400, seed=7), 1)]  # with the generator's defects
    result = update(reviewed, traffic)
    assert not any("time: type" in line or "specversion" in line for line in result.widened), result.widened
    reasons = {reason for _, reason in result.left_out}
    assert {"type at envelopemetadata.time", "specversion at envelopemetadata.specversion"} <= reasons


def test_cli_writes_the_widened_document_and_lists_each_loosening(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    existing = tmp_path / "reviewed.xreg.json"
    existing.write_text(json.dumps(_reviewed()), "utf-8")
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_text("".join(json.dumps(r) + "\n" for _, r in _readings_in_fahrenheit(_records(200, 3))), "utf-8")
    out = tmp_path / "updated.xreg.json"
    assert cli.main(["infer", str(traffic), "--update", str(existing), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "place(s) widened" in err and "widened telemetry.in/com.example.telemetry.reading dataschema:/unit" in err
    assert cli.main(["check", "--registry", str(out), str(traffic)]) == 0  # every message accepted now
    not_a_document = tmp_path / "list.json"
    not_a_document.write_text("[]", "utf-8")
    assert cli.main(["infer", str(traffic), "--update", str(not_a_document)]) == 2
