"""validation rule 5.7, one reading only: duplicate member names in a JSON body or structured event (any depth)
and header/attribute bytes that are not UTF-8 are `decode` (issue 17 defect 9, issue 19 item 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway import jsontext
from gateway.compiler import compile_registry
from gateway.envelope import Envelope
from gateway.limits import Limits
from tests.unit.builders import b64, bad, ce_message, kafka_ce, load_doc, ok, registry, shape

READING = {"type": "object", "properties": {"value": {"type": "integer", "maximum": 100}}}
STRUCTURED = {"content-type": "application/cloudevents+json"}


@pytest.fixture
def loaded(tmp_path: Path) -> Any:
    message = ce_message("t", {"blob": {"type": "binary"}}, dataschemaformat="JsonSchema/draft-07",
                         dataschema=READING)
    return load_doc(tmp_path, registry("KAFKA", {"m": message}))


def _event(**members: Any) -> str:
    return json.dumps({"specversion": "1.0", "id": "1", "source": "/s", "type": "t", **members})


@pytest.mark.parametrize("body", ['{"value": 999, "value": 20}', '{"value": 20, "value": 20}',
                                  '{"value": 1, "x": {"a": 1, "a": 2}}', '{"x": [{"k": "a:b", "k": "c"}]}',
                                  '{"value": 1, "value": 2, "pad": "\\u003a"}'])
def test_a_binary_body_naming_a_member_twice_is_decode(loaded: Any, body: str) -> None:
    assert shape(loaded.judge(kafka_ce("t", body=body))) == bad("g", "m", ("dataschema:", "decode"))


def test_the_same_members_once_each_pass(loaded: Any) -> None:
    assert shape(loaded.judge(kafka_ce("t", body='{"value": 20, "t": "12:00:00", "x": {"value": 1}}'))) == \
        ok("g", "m")


@pytest.mark.parametrize("body", [
    '{"specversion": "1.0", "id": "1", "source": "/s", "type": "x", "type": "t"}',
    _event(data={"value": 1})[:-1] + ', "data": {"value": 1}}',
    _event()[:-1] + ', "data": {"value": 999, "value": 1}}',
])
def test_a_structured_event_naming_a_member_twice_is_decode(loaded: Any, body: str) -> None:
    verdict = loaded.judge({"protocol": "KAFKA", "topic": "t", "headers": STRUCTURED, "body": body})
    assert not verdict.conformant
    assert [v.rule.value for v in verdict.violations] == ["decode"]


def test_the_duplicate_check_can_be_switched_off(tmp_path: Path) -> None:
    message = ce_message("t", dataschemaformat="JsonSchema/draft-07", dataschema=READING)
    loaded = load_doc(tmp_path, registry("KAFKA", {"m": message}))
    lenient = compile_registry(loaded.snapshot.registry, loaded.snapshot.digest, Limits(reject_duplicate_keys=False))
    headers = [("ce_specversion", b"1.0"), ("ce_id", b"1"), ("ce_source", b"/s"), ("ce_type", b"t")]
    binary = Envelope("KAFKA", {"topic": "t", "headers": headers}, b'{"value": 999, "value": 20}', endpoint="ep")
    structured = Envelope("KAFKA", {"topic": "t", "headers": [("content-type", b"application/cloudevents+json")]},
                          (_event()[:-1] + ', "data": {"value": 999, "value": 20}}').encode(), endpoint="ep")
    assert lenient.classify(binary).conformant and lenient.classify(structured).conformant  # the last value counts
    assert not loaded.ruleset.classify(binary).conformant and not loaded.ruleset.classify(structured).conformant


def test_settings_read_the_switch(tmp_path: Path) -> None:
    from gateway.settings import load_limits

    path = tmp_path / "gateway.yaml"
    path.write_text("runtime:\n  limits:\n    reject_duplicate_keys: false\n", "utf-8")
    assert load_limits(path) == (Limits(reject_duplicate_keys=False), [])
    path.write_text("runtime:\n  limits:\n    reject_duplicate_keys: 3\n", "utf-8")
    limits, problems = load_limits(path)
    assert limits.reject_duplicate_keys is True and problems[0].pointer == "/runtime/limits/reject_duplicate_keys"


@pytest.mark.parametrize("header", ["ce_source", "ce_id", "ce_myext"])
def test_a_ce_header_that_is_not_utf8_is_decode(loaded: Any, header: str) -> None:
    verdict = loaded.judge(kafka_ce("t", body='{"value": 1}', extra_headers={header: {"base64": b64(b"\xff\xfe/x")}}))
    assert not verdict.conformant
    assert (f"envelopemetadata.{header[3:]}", "decode") in shape(verdict)[3]


def test_non_utf8_bytes_pass_where_the_attribute_is_binary(loaded: Any) -> None:
    record = kafka_ce("t", body='{"value": 1}', extra_headers={"ce_blob": {"base64": b64(b"\xff\xfe")}})
    assert shape(loaded.judge(record)) == ok("g", "m")


def test_a_declared_kafka_header_that_is_not_utf8_is_decode(tmp_path: Path) -> None:
    message = ce_message("t", protocol="KAFKA",
                         protocoloptions={"headers": {"x-tenant": {"type": "string", "required": True}}})
    loaded = load_doc(tmp_path, registry("KAFKA", {"m": message}))
    record = kafka_ce("t", extra_headers={"x-tenant": {"base64": b64(b"\xc3\x28")}})
    assert shape(loaded.judge(record)) == bad("g", "m", ("protocoloptions.headers.x-tenant", "decode"))


def test_jsontext_finds_duplicates_at_any_depth_and_only_then() -> None:
    assert jsontext.loads(b'{"a": {"b": [1, {"c": 2}]}, "t": "x:y"}', unique=True) == \
        {"a": {"b": [1, {"c": 2}]}, "t": "x:y"}
    with pytest.raises(jsontext.DuplicateMember, match="'c'"):
        jsontext.loads(b'{"a": {"b": [1, {"c": 2, "c": 2}]}}', unique=True)
    with pytest.raises(jsontext.DuplicateMember):  # past orjson (a 100-digit integer): json decides
        jsontext.loads('{"a": 1' + "0" * 100 + ', "a": 1}', unique=True)
    assert jsontext.loads(b'{"a": 1, "a": 2}') == {"a": 2}  # without `unique`, as before


@pytest.mark.parametrize("protocol", ["NATS", "HTTP"])
def test_header_bytes_an_adapter_could_not_read_are_decode(tmp_path: Path, protocol: str) -> None:
    loaded = load_doc(tmp_path, registry(protocol, {"m": ce_message("t")}))
    headers = [("ce-specversion", "1.0"), ("ce-id", "1"), ("ce-source", "/s"), ("ce-type", "t")]
    fields: dict[str, Any] = {"subject": "s"} if protocol == "NATS" else {"method": "POST", "path": "/"}
    good = Envelope(protocol, {**fields, "headers": headers}, b"", endpoint="ep")
    raw = Envelope(protocol, {**fields, "headers": [*headers, ("ce-myext", b"\xff\xfe")]}, b"", endpoint="ep")
    assert loaded.ruleset.classify(good).conformant
    verdict = loaded.ruleset.classify(raw)
    assert shape(verdict) == bad("g", "m", ("envelopemetadata.myext", "decode"))
