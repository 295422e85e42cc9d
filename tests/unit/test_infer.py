"""`xgate infer`: drafts from recorded traffic lint clean and accept the traffic they were made from."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gateway import cli
from gateway.check import judge_record
from gateway.compiler import compile_registry
from gateway.infer import infer
from gateway.infer.schema import infer_schema
from gateway.infer.templates import Placeholders, pattern_key, segment_values
from gateway.loader import load_snapshot
from gateway.testing.traffic import generate


def _ruleset(document: dict[str, Any], tmp_path: Path) -> Any:
    path = tmp_path / "draft.xreg.json"
    path.write_text(json.dumps(document), "utf-8")
    snapshot = load_snapshot([path])
    assert not [d for d in snapshot.diagnostics if d.severity.value == "error"], snapshot.diagnostics
    return compile_registry(snapshot.registry, snapshot.digest)


def test_a_draft_of_clean_demo_traffic_accepts_all_of_it_on_every_protocol(tmp_path: Path) -> None:
    records = generate(1500, seed=31, defect_rate=0.0)
    result = infer(list(enumerate(records, 1)))
    assert result.left_out == []
    ruleset = _ruleset(result.document, tmp_path)
    verdicts = [judge_record(ruleset, record) for record in records]
    assert all(v.conformant for v in verdicts), [v.as_dict() for v in verdicts if not v.conformant][:3]
    protocols = {record["protocol"] for record in records}
    assert protocols == {"KAFKA", "HTTP", "AMQP/1.0", "MQTT/5.0", "NATS"}  # the sample covers every protocol
    assert {e["protocol"] for e in result.document["endpoints"].values()} == protocols


def _breaks_cloudevents_or_json(record: dict[str, Any]) -> bool:
    """Told from the raw record with the standard library: a body that is not JSON, a structured event with an
    attribute name that is not lower-case alphanumeric, or a `time` that is no RFC 3339 timestamp."""
    headers = record.get("headers") or {}
    is_structured = "cloudevents" in str(headers.get("Content-Type", "")).lower()
    attributes: dict[str, Any] = {}
    if is_structured:
        try:
            attributes = json.loads(record["body"])
        except ValueError:
            return True
    else:
        attributes = {k[3:]: v for k, v in headers.items() if k.lower().startswith(("ce_", "ce-"))}
        attributes.update({k[12:]: v for k, v in (record.get("application-properties") or {}).items()
                           if k.startswith("cloudEvents")})
    if any(not re.fullmatch(r"[a-z0-9]+", name) for name in attributes if name not in ("data", "data_base64")):
        return True
    time = attributes.get("time")
    return time is not None and not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", str(time))


def test_what_no_definition_can_accept_is_left_out_with_its_reason(tmp_path: Path) -> None:
    records = generate(1500, seed=32)  # with the generator's defects
    result = infer(list(enumerate(records, 1)))
    left = {line for line, _ in result.left_out}
    broken = {line for line, record in enumerate(records, 1) if _breaks_cloudevents_or_json(record)}
    assert broken and left == broken
    ruleset = _ruleset(result.document, tmp_path)
    kept = [record for line, record in enumerate(records, 1) if line not in left]
    assert all(judge_record(ruleset, record).conformant for record in kept)


def test_varying_segments_become_shared_placeholders() -> None:
    records = generate(400, seed=33, defect_rate=0.0)
    document = infer(list(enumerate(records, 1))).document
    reading = document["messagegroups"]["telemetry.in"]["messages"]["com.example.telemetry.reading"]
    assert reading["envelopemetadata"]["source"] == {"required": True, "type": "uritemplate",
                                                     "value": "/sites/{site}/devices/{device}"}
    assert reading["envelopemetadata"]["subject"]["value"] == "{device}"  # the same text as in source
    assert reading["protocoloptions"]["key"]["value"] == "{device}"
    assert "value" not in reading["envelopemetadata"]["id"]
    door = document["messagegroups"]["facility.nats"]["messages"]["com.example.facility.door.opened"]
    assert door["protocoloptions"]["subject"]["value"] == "facility.doors.{door}"


def test_placeholders_need_a_shared_shape() -> None:
    names = Placeholders()
    assert names.template(["/a/1", "/a/2/x"], "source") is None  # different segment counts
    assert names.template(["/a/1", "/a/1"], "source") is None  # one value: the caller declares it
    assert names.template(["x1", "x2"], "subject") is None  # no structure around the varying text
    assert names.template(["/a/?q", "/a/b"], "source") is None  # a placeholder never matches ? or #
    assert names.template(["/users/7/orders/1", "/users/8/orders/2"], "source") == "/users/{user}/orders/{order}"


def test_non_cloudevents_traffic_groups_by_topic_pattern() -> None:
    values = ["plant/b1/boiler1/status", "plant/b2/boiler3/status", "plant/b1/boiler2/status", "plant/alarms"]
    seen = segment_values(values, "/.")
    keys = {pattern_key(v, seen[len(re.split("([/.])", v))], "/.") for v in values}
    assert keys == {"plant/*/*/status", "plant/alarms"}


def test_payload_schema_says_what_every_sample_shows() -> None:
    samples = [{"id": "2f1c4f0e-8a11-4b5e-9a34-6f1d2c3b4a5e", "at": "2026-11-26T10:00:00Z", "state": s, "n": n}
               for s, n in [("on", 1), ("off", 2.5), ("on", 3), ("off", 4), ("on", 5), ("on", 6), ("off", 7),
                            ("on", 8)] * 3]
    samples[0]["extra"] = True
    schema = infer_schema(samples)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    properties = schema["properties"]
    assert properties["id"] == {"type": "string", "format": "uuid"}
    assert properties["at"] == {"type": "string", "format": "date-time"}
    assert properties["state"] == {"type": "string", "enum": ["off", "on"]}
    assert properties["n"] == {"type": "number"}  # an integer and a float seen: number
    assert sorted(schema["required"]) == ["at", "id", "n", "state"]  # `extra` is in one sample only


@pytest.mark.parametrize(("values", "enum"), [
    (["on", "off"] * 12, ["off", "on"]),           # 24 samples, each value 12 times: a closed set
    (["on", "off", "on", "off"], None),            # too few samples to tell a closed set from free text
    (["ok"] * 40 + ["exploded"], None),            # a value seen once is a defect, not a legal state
    (["on"] * 150 + ["off"] * 146 + ["exploded"] * 20, None),  # the demo's defect: 6% of its boiler states
    ([f"note {n}" for n in range(30)], None),      # free text
])
def test_an_enum_needs_enough_samples_and_every_value_repeated(values: list[str], enum: list[str] | None) -> None:
    assert infer_schema(values).get("enum") == enum


def test_every_left_out_message_is_listed_or_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = generate(400, seed=7)  # with the generator's defects
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_text("".join(json.dumps(r) + "\n" for r in records) + "not json\n", "utf-8")
    assert cli.main(["infer", str(traffic), "-o", str(tmp_path / "draft.json")]) == 0
    listed = [int(n) for line in capsys.readouterr().err.splitlines() if "left out" in line
              for n in line.split("(lines ")[1].rstrip(")").split(", ")]
    assert len(listed) > 5 and 401 in listed  # all of them, the line that is not JSON too
    left = tmp_path / "left.jsonl"
    assert cli.main(["infer", str(traffic), "-o", str(tmp_path / "draft.json"), "--left-out", str(left)]) == 0
    written = [json.loads(line) for line in left.read_text("utf-8").splitlines()]
    assert sorted(entry["line"] for entry in written) == sorted(listed)
    assert all(entry["message"] == records[entry["line"] - 1] for entry in written if entry["line"] <= 400)
    assert written[-1] == {"line": 401, "reason": "lines that are not JSON", "text": "not json"}


def test_a_value_that_is_sometimes_null_keeps_its_detail() -> None:
    schema = infer_schema([None, {"x": "2026-11-26T10:00:00Z"}, {"x": "2026-11-27T10:00:00Z"}] + [None] * 3)
    assert schema["type"] == ["null", "object"]
    assert schema["properties"]["x"] == {"type": "string", "format": "date-time"} and schema["required"] == ["x"]
    assert infer_schema(["a"] * 12 + ["b"] * 12 + [None])["enum"] == ["a", "b", None]


def test_cli_writes_the_draft_and_reports_the_held_back_share(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_text("".join(json.dumps(r) + "\n" for r in generate(800, seed=34, defect_rate=0.0)), "utf-8")
    draft = tmp_path / "draft.xreg.json"
    assert cli.main(["infer", str(traffic), "-o", str(draft), "--holdout", "0.25"]) == 0
    err = capsys.readouterr().err
    assert "definitions from 600 of 600 messages" in err
    assert "held back 200: the draft accepts" in err
    assert cli.main(["lint", str(draft)]) == 0
    assert cli.main(["infer", str(tmp_path / "missing.jsonl")]) == 2
