"""`xgate diff`: a contract change judged on the same traffic. The expected changes come from what the demo's
traffic generator made each message to be (all conformant, with a known site, kind and endpoint), not from
the compiler under test."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from gateway import cli
from gateway.testing.traffic import generate

DEMO = Path(__file__).resolve().parents[2] / "config" / "demo"


def _edit(folder: Path, name: str) -> tuple[Path, dict[str, Any]]:
    path = folder / name
    return path, json.loads(path.read_text("utf-8"))


@pytest.fixture
def registries(tmp_path: Path) -> tuple[Path, Path]:
    old, new = tmp_path / "old", tmp_path / "new"
    for folder in (old, new):
        folder.mkdir()
        for document in DEMO.glob("*.xreg.json"):
            shutil.copy(document, folder / document.name)
    path, telemetry = _edit(new, "telemetry.xreg.json")
    reading = telemetry["messagegroups"]["com.example.telemetry"]["messages"]["com.example.telemetry.reading"]
    reading["envelopemetadata"]["source"]["value"] = "/sites/berlin/devices/{device}"  # a tightened template
    path.write_text(json.dumps(telemetry), "utf-8")
    path, orders = _edit(new, "orders.xreg.json")
    messages = orders["messagegroups"]["com.example.orders"]["messages"]
    messages["com.example.orders.placed"]["envelopemetadata"]["region"] = {"type": "string", "required": True}
    del messages["com.example.orders.cancelled"]  # a removed definition
    path.write_text(json.dumps(orders), "utf-8")
    return old, new


def _traffic(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    records = generate(600, seed=23, defect_rate=0.0)  # every message made conformant to the demo registry
    path = tmp_path / "traffic.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), "utf-8")
    return path, records


def _kind(record: dict[str, Any]) -> str:
    headers = record.get("headers") or {}
    if record["endpoint"] == "telemetry.in":
        site = headers["ce_source"].split("/")[2]
        return "reading-berlin" if site == "berlin" else "reading-elsewhere"
    if record["endpoint"] == "orders.http":
        return "placed"
    if record["endpoint"] == "orders.queue":
        return "cancelled"
    return "untouched"


def _diff(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = cli.main(["diff", "--format", "json", *args])
    return code, json.loads(capsys.readouterr().out)


def test_reports_exactly_the_messages_the_new_contract_fails(registries: tuple[Path, Path], tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    old, new = registries
    traffic, records = _traffic(tmp_path)
    kinds = [_kind(record) for record in records]
    code, report = _diff(capsys, "--registry", str(old), "--against", str(new), str(traffic))
    assert code == 1  # some message would newly fail: a CI gate refuses the change
    assert report["messages"] == len(records)
    expected = {"reading-elsewhere": kinds.count("reading-elsewhere"), "placed": kinds.count("placed"),
                "cancelled": kinds.count("cancelled")}
    assert all(expected.values()), expected  # the sample has every kind of change
    assert report["changed"] == {"tightened": sum(expected.values()), "loosened": 0, "renamed": 0}
    by_rule = {(g["definition"], g["rule"]): g["count"] for g in report["groups"]}
    assert by_rule[("com.example.telemetry/com.example.telemetry.reading", "template")] == expected["reading-elsewhere"]
    assert by_rule[("com.example.orders/com.example.orders.placed", "required")] == expected["placed"]
    assert sum(count for (definition, rule), count in by_rule.items()
               if "cancelled" in definition or rule == "no-match") == expected["cancelled"]
    # every example names a line whose record is of the kind its group is about
    for group in report["groups"]:
        for example in group["examples"]:
            kind = kinds[example["line"] - 1]
            assert kind != "untouched" and kind != "reading-berlin", (group, kind)
            assert example["old"]["verdict"] == "conformant" and example["new"]["verdict"] == "nonconformant"


def test_the_reverse_change_only_loosens(registries: tuple[Path, Path], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    old, new = registries
    traffic, records = _traffic(tmp_path)
    changed = sum(_kind(record) in ("reading-elsewhere", "placed", "cancelled") for record in records)
    code, report = _diff(capsys, "--registry", str(new), "--against", str(old), str(traffic))
    assert code == 0
    assert report["changed"] == {"tightened": 0, "loosened": changed, "renamed": 0}


def test_the_same_registry_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traffic, _ = _traffic(tmp_path)
    code, report = _diff(capsys, "--registry", str(DEMO), "--against", str(DEMO), str(traffic))
    assert (code, report["changed"], report["groups"]) == (0, {"tightened": 0, "loosened": 0, "renamed": 0}, [])


def test_a_missing_registry_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traffic, _ = _traffic(tmp_path)
    code = cli.main(["diff", "--registry", str(DEMO), "--against", str(tmp_path / "nowhere"), str(traffic)])
    assert code == 2
    assert "nowhere" in capsys.readouterr().err
