"""validation rule 5.6 and 8 through the whole pipeline: the payload of a judged message against each schema
format (JSON Schema drafts, Avro binary and JSON, Protobuf with `:TypeName`, XSD), `schema` vs `decode`, and a
schema that fails to compile as a load error. (Validator internals: test_payload.py.)"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_writer

from gateway.errors import Severity
from tests.unit.builders import b64, bad, ce_message, http_ce, kafka_ce, load_doc, ok, registry, shape

# --- JSON Schema ----------------------------------------------------------------------------------------

READING = {"type": "object", "required": ["temperature"],
           "properties": {"temperature": {"type": "number", "maximum": 150}}, "additionalProperties": False}


@pytest.fixture
def json_def(tmp_path: Path) -> Any:
    message = ce_message("t", dataschemaformat="JsonSchema/draft-07", dataschema=READING)
    return load_doc(tmp_path, registry("KAFKA", {"m": message}))


def test_json_payload_passes(json_def: Any) -> None:
    assert shape(json_def.judge(kafka_ce("t", body='{"temperature": 21.5}'))) == ok("g", "m")


@pytest.mark.parametrize(("body", "violations"), [
    ('{"temperature": 200}', [("dataschema:/temperature", "schema")]),
    ('{"temperature": "hot"}', [("dataschema:/temperature", "schema")]),
    ('{}', [("dataschema:", "schema")]),
    ('{"temperature": 1, "x": 2}', [("dataschema:", "schema")]),
    ('[1]', [("dataschema:", "schema")]),
])
def test_json_payload_fails_its_schema(json_def: Any, body: str, violations: list[tuple[str, str]]) -> None:
    verdict = json_def.judge(kafka_ce("t", body=body))
    assert shape(verdict) == bad("g", "m", *violations)


@pytest.mark.parametrize("body", ['{"temperature": ', "not json", "", "{'a': 1}"])
def test_invalid_json_body_in_binary_mode_is_decode(json_def: Any, body: str) -> None:
    # section 8: invalid JSON for a JSON Schema in binary mode is `decode`, not `schema`
    assert shape(json_def.judge(kafka_ce("t", body=body))) == bad("g", "m", ("dataschema:", "decode"))


def test_json_payload_in_structured_mode_is_the_data_member(tmp_path: Path) -> None:
    message = ce_message("t", dataschemaformat="JsonSchema/draft-07", dataschema=READING)
    loaded = load_doc(tmp_path, registry("HTTP", {"m": message}))
    event = {"specversion": "1.0", "id": "1", "source": "/s", "type": "t", "datacontenttype": "application/json"}
    rec = {"protocol": "HTTP", "method": "POST", "path": "/", "headers": {"content-type": "application/cloudevents+json"}}
    assert shape(loaded.judge({**rec, "body": json.dumps({**event, "data": {"temperature": 3}})})) == ok("g", "m")
    assert shape(loaded.judge({**rec, "body": json.dumps({**event, "data": {"temperature": 300}})})) == \
        bad("g", "m", ("dataschema:/temperature", "schema"))


def test_json_schema_without_cloudevents(tmp_path: Path) -> None:
    message = {"protocol": "NATS", "protocoloptions": {"subject": "r"}, "dataschemaformat": "JSONSchema/Draft-07",
               "dataschema": READING}
    loaded = load_doc(tmp_path, registry("NATS", {"m": message}))
    assert shape(loaded.judge({"protocol": "NATS", "subject": "r", "body": '{"temperature": 1}'})) == ok("g", "m")
    assert shape(loaded.judge({"protocol": "NATS", "subject": "r", "body": '{"temperature": 999}'})) == \
        bad("g", "m", ("dataschema:/temperature", "schema"))
    assert shape(loaded.judge({"protocol": "NATS", "subject": "r", "body": '{"temperature"'})) == \
        bad("g", "m", ("dataschema:", "decode"))


PREFIX = {"type": "array", "prefixItems": [{"type": "string"}]}
DEPENDENT = {"type": "object", "dependentRequired": {"a": ["b"]}}
DRAFT4 = {"type": "number", "maximum": 5, "exclusiveMaximum": True}


@pytest.mark.parametrize(("fmt", "schema", "body", "conformant"), [
    ("JsonSchema/draft-07", PREFIX, "[1]", True),            # prefixItems is not a draft-07 keyword
    ("JSONSchema/Draft/2020-12", PREFIX, "[1]", False),
    ("JSONSchema/Draft/2020-12", PREFIX, '["a"]', True),
    ("JsonSchema/draft-07", {**PREFIX, "$schema": "https://json-schema.org/draft/2020-12/schema"}, "[1]", False),
    ("JsonSchema/draft-07", DEPENDENT, '{"a": 1}', True),
    ("JSONSchema/Draft/2019-09", DEPENDENT, '{"a": 1}', False),
    ("JSONSchema/Draft/2019-09", DEPENDENT, '{"a": 1, "b": 2}', True),
    ("JSONSchema/Draft-04", DRAFT4, "5", False),
    ("JSONSchema/Draft-04", DRAFT4, "4.9", True),
    ("JsonSchema/draft-06", {"type": "number", "exclusiveMaximum": 5}, "5", False),
    ("JsonSchema/draft-06", {"type": "number", "exclusiveMaximum": 5}, "4", True),
])
def test_json_schema_draft_by_format_or_dollar_schema(tmp_path: Path, fmt: str, schema: Any, body: str,
                                                       conformant: bool) -> None:
    loaded = load_doc(tmp_path, registry("KAFKA", {"m": ce_message("t", dataschemaformat=fmt, dataschema=schema)}))
    assert loaded.errors == []
    verdict = loaded.judge(kafka_ce("t", body=body))
    assert verdict.conformant is conformant
    if not conformant:
        assert [v.rule.value for v in verdict.violations] == ["schema"]


def test_schema_that_fails_to_compile_is_a_load_error(tmp_path: Path) -> None:
    messages = {"broken": ce_message("b", dataschemaformat="JsonSchema/draft-07", dataschema={"type": 5}),
                "fine": ce_message("f")}
    loaded = load_doc(tmp_path, registry("KAFKA", messages))
    assert [d.code for d in loaded.ruleset.diagnostics if d.severity is Severity.ERROR] == ["schema-compile"]
    # the broken definition is left out; the other one still works
    assert shape(loaded.judge(kafka_ce("f"))) == ok("g", "fine")
    verdict = loaded.judge(kafka_ce("b", body="{}"))
    assert (verdict.outcome.value, verdict.messagegroupid, verdict.messageid) == ("nonconformant", None, None)
    assert [v.rule.value for v in verdict.violations] == ["no-match"]


# --- Avro -------------------------------------------------------------------------------------------------

AVRO = {"type": "record", "name": "Reading", "namespace": "xg",
        "fields": [{"name": "id", "type": "string"}, {"name": "value", "type": "double"}]}
AVRO_UNION = [{"type": "record", "name": "A", "namespace": "xg", "fields": [{"name": "a", "type": "int"}]},
              {"type": "record", "name": "B", "namespace": "xg", "fields": [{"name": "b", "type": "string"}]}]


def _avro(schema: Any, datum: Any) -> bytes:
    out = io.BytesIO()
    schemaless_writer(out, parse_schema(schema), datum)
    return out.getvalue()


@pytest.fixture
def avro_def(tmp_path: Path) -> Any:
    messages = {"m": ce_message("t", dataschemaformat="Avro/1.11", dataschema=AVRO),
                "j": ce_message("j", {"datacontenttype": {"value": "application/json"}},
                                dataschemaformat="Avro/1.11", dataschema=AVRO)}
    loaded = load_doc(tmp_path, registry("KAFKA", messages))
    assert loaded.errors == []
    return loaded


def test_avro_binary_passes(avro_def: Any) -> None:
    body = _avro(AVRO, {"id": "x", "value": 1.5})
    assert shape(avro_def.judge(kafka_ce("t", body_base64=b64(body)))) == ok("g", "m")
    record = kafka_ce("t", body_base64=b64(body), extra_headers={"content-type": "avro/binary"})
    assert shape(avro_def.judge(record)) == ok("g", "m")


def test_avro_leftover_bytes_are_decode(avro_def: Any) -> None:
    body = _avro(AVRO, {"id": "x", "value": 1.5}) + b"\x00"
    verdict = avro_def.judge(kafka_ce("t", body_base64=b64(body)))
    assert shape(verdict) == bad("g", "m", ("dataschema:", "decode"))


def test_avro_truncated_bytes_are_decode(avro_def: Any) -> None:
    body = _avro(AVRO, {"id": "x", "value": 1.5})[:-3]
    assert shape(avro_def.judge(kafka_ce("t", body_base64=b64(body)))) == bad("g", "m", ("dataschema:", "decode"))


def test_avro_decode_message_is_reproducible(avro_def: Any) -> None:
    # a double cut short makes fastavro name its stream object; the verdict must not carry its address
    body = _avro(AVRO, {"id": "x", "value": 1.5})[:-3]
    first, second = (avro_def.judge(kafka_ce("t", body_base64=b64(body))).violations[0].message for _ in range(2))
    assert first == second
    assert " at 0x" not in first


def test_avro_json_encoding_for_json_content_types(avro_def: Any) -> None:
    good = kafka_ce("j", body='{"id": "x", "value": 1.5}', extra_headers={"content-type": "application/json"})
    assert shape(avro_def.judge(good)) == ok("g", "j")
    wrong = kafka_ce("j", body='{"id": 5, "value": 1.5}', extra_headers={"content-type": "application/json"})
    verdict = avro_def.judge(wrong)
    assert (verdict.outcome.value, verdict.messageid) == ("nonconformant", "j")
    assert [v.rule.value for v in verdict.violations] == ["schema"]
    broken = kafka_ce("j", body='{"id": ', extra_headers={"content-type": "application/json"})
    assert shape(avro_def.judge(broken)) == bad("g", "j", ("dataschema:", "decode"))


def test_avro_json_content_type_without_declaration_disagrees(avro_def: Any) -> None:
    # Avro implies application/avro or avro/binary (5.5): application/json is a content-type violation
    record = kafka_ce("t", body='{"id": "x", "value": 1.5}', extra_headers={"content-type": "application/json"})
    verdict = avro_def.judge(record)
    assert ("envelopemetadata.datacontenttype", "content-type") in [(v.path, v.rule.value) for v in verdict.violations]
    assert not verdict.conformant


def test_avro_type_selector(tmp_path: Path) -> None:
    schemagroups = {"sg": {"schemas": {"u": {"format": "Avro/1.11", "versions": {"1": {"schema": AVRO_UNION}}}}}}
    messages = {"b": ce_message("b", dataschemaformat="Avro/1.11", dataschemauri="#/schemagroups/sg/schemas/u:xg.B")}
    loaded = load_doc(tmp_path, registry("KAFKA", messages, schemagroups=schemagroups))
    assert loaded.errors == []
    as_b = _avro(AVRO_UNION[1], {"b": "hello"})
    assert shape(loaded.judge(kafka_ce("b", body_base64=b64(as_b)))) == ok("g", "b")
    as_a = _avro(AVRO_UNION[0], {"a": 150})  # zig-zag varint 150 = 2 bytes: not a valid string for B
    verdict = loaded.judge(kafka_ce("b", body_base64=b64(as_a)))
    assert shape(verdict) == bad("g", "b", ("dataschema:", "decode"))


def test_avro_in_structured_mode_uses_the_json_encoding(tmp_path: Path) -> None:
    loaded = load_doc(tmp_path, registry("HTTP", {"m": ce_message("t", dataschemaformat="Avro", dataschema=AVRO)}))
    event = {"specversion": "1.0", "id": "1", "source": "/s", "type": "t"}
    rec = {"protocol": "HTTP", "method": "POST", "path": "/", "headers": {"content-type": "application/cloudevents+json"}}
    assert shape(loaded.judge({**rec, "body": json.dumps({**event, "data": {"id": "a", "value": 2.0}})})) == \
        ok("g", "m")
    verdict = loaded.judge({**rec, "body": json.dumps({**event, "data": {"id": "a"}})})
    assert (verdict.outcome.value, [v.rule.value for v in verdict.violations]) == ("nonconformant", ["schema"])


# --- Protobuf ------------------------------------------------------------------------------------------

PROTO = 'syntax = "proto2";\npackage xg.test;\nmessage A { required int32 x = 1; }\nmessage B { required string name = 2; }\n'
PROTO_A = b"\x08\x05"          # A{x: 5}
PROTO_B = b"\x12\x03abc"       # B{name: "abc"}
PROTO_BROKEN = b"\x0a\x05ab"   # length 5, two bytes follow


@pytest.fixture
def proto_def(tmp_path: Path) -> Any:
    schemagroups = {"sg": {"schemas": {"p": {"format": "Protobuf/2", "versions": {"1": {"schema": PROTO}}}}}}
    messages = {
        "first": ce_message("first", dataschemaformat="Protobuf/2", dataschemauri="#/schemagroups/sg/schemas/p"),
        "b": ce_message("b", dataschemaformat="Protobuf/2", dataschemauri="#/schemagroups/sg/schemas/p:B"),
        "bfull": ce_message("bfull", dataschemaformat="Proto/2",
                            dataschemauri="/schemagroups/sg/schemas/p/versions/1:xg.test.B"),
        "inline": ce_message("inline", dataschemaformat="Protobuf/2", dataschema=PROTO)}
    loaded = load_doc(tmp_path, registry("KAFKA", messages, schemagroups=schemagroups))
    assert loaded.errors == []
    return loaded


@pytest.mark.parametrize(("type_value", "messageid", "passes", "fails"), [
    ("first", "first", PROTO_A, PROTO_B),     # no selector: the first message of the file (A)
    ("inline", "inline", PROTO_A, PROTO_B),
    ("b", "b", PROTO_B, PROTO_A),
    ("bfull", "bfull", PROTO_B, PROTO_A),
])
def test_protobuf_type_selection(proto_def: Any, type_value: str, messageid: str, passes: bytes,
                                 fails: bytes) -> None:
    assert shape(proto_def.judge(kafka_ce(type_value, body_base64=b64(passes)))) == ok("g", messageid)
    missing = "/x" if passes == PROTO_A else "/name"
    assert shape(proto_def.judge(kafka_ce(type_value, body_base64=b64(fails)))) == \
        bad("g", messageid, (f"dataschema:{missing}", "schema"))


def test_unparsable_protobuf_is_decode(proto_def: Any) -> None:
    assert shape(proto_def.judge(kafka_ce("b", body_base64=b64(PROTO_BROKEN)))) == bad("g", "b", ("dataschema:", "decode"))


def test_unknown_protobuf_type_selector_is_a_load_error(tmp_path: Path) -> None:
    schemagroups = {"sg": {"schemas": {"p": {"format": "Protobuf/2", "versions": {"1": {"schema": PROTO}}}}}}
    messages = {"z": ce_message("z", dataschemaformat="Protobuf/2", dataschemauri="#/schemagroups/sg/schemas/p:Zed")}
    loaded = load_doc(tmp_path, registry("KAFKA", messages, schemagroups=schemagroups))
    assert "schema-compile" in loaded.codes(Severity.ERROR)
    assert [v.rule.value for v in loaded.judge(kafka_ce("z")).violations] == ["no-match"]


# --- XSD ---------------------------------------------------------------------------------------------------

XSD = ('<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:element name="r"><xs:complexType><xs:sequence>'
       '<xs:element name="n" type="xs:int"/></xs:sequence></xs:complexType></xs:element></xs:schema>')


@pytest.mark.parametrize("fmt", ["XSD/1.0", "XMLSchema/1.1", "xsd"])
def test_xsd_payload(tmp_path: Path, fmt: str) -> None:
    loaded = load_doc(tmp_path, registry("HTTP", {"m": ce_message("t", dataschemaformat=fmt, dataschema=XSD)}))
    assert loaded.errors == []
    assert shape(loaded.judge(http_ce("t", body="<r><n>5</n></r>"))) == ok("g", "m")
    assert shape(loaded.judge(http_ce("t", body="<r><n>five</n></r>"))) == bad("g", "m", ("dataschema:/r/n", "schema"))
    assert shape(loaded.judge(http_ce("t", body="<q/>"))) == bad("g", "m", ("dataschema:/q", "schema"))
    assert shape(loaded.judge(http_ce("t", body="<r><n>5</n>"))) == bad("g", "m", ("dataschema:", "decode"))


def test_schema_format_aliases_select_the_validator(tmp_path: Path) -> None:
    messages = {f"m{i}": ce_message(f"t{i}", dataschemaformat=fmt, dataschema=READING)
                for i, fmt in enumerate(["JsonSchema/draft-07", "JSONSchema/draft-07", "JSON", "jsonschema",
                                         "JSONSchema/Draft-07"])}
    loaded = load_doc(tmp_path, registry("KAFKA", messages))
    assert loaded.errors == [] and loaded.warnings == []
    for i in range(5):
        assert shape(loaded.judge(kafka_ce(f"t{i}", body='{"temperature": 1000}'))) == \
            bad("g", f"m{i}", ("dataschema:/temperature", "schema"))
