"""Payload validators: JSON Schema, Avro, Protobuf, XSD (offline, fast).

protoc runs for three distinct .proto texts only; the validator module caches
compiled files by content, so the fixtures below cost three protoc calls.
"""

from __future__ import annotations

import io
from typing import Any

import orjson
import pytest
from fastavro import parse_schema, schemaless_writer

from gateway.compiler.payload import (
    SchemaFormat,
    compile_payload_validator,
    implied_content_types,
    normalize_schema_format,
)
from gateway.errors import SchemaCompileError
from gateway.verdict import Rule

JSON07 = SchemaFormat("jsonschema", "draft-07")
JSON2020 = SchemaFormat("jsonschema", "2020-12")
AVRO = SchemaFormat("avro", "1.11.2")
PROTO = SchemaFormat("protobuf", "3")
XSD10 = SchemaFormat("xsd", "1.0")
XSD11 = SchemaFormat("xsd", "1.1")


# --- format names -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "version"),
    [
        ("JsonSchema/draft-07", "jsonschema", "draft-07"),
        ("JSONSchema/Draft-07", "jsonschema", "draft-07"),
        ("JSONSchema/draft-07version", "jsonschema", "draft-07"),
        ("JSONSchema/Draft/2019-09", "jsonschema", "2019-09"),
        ("JSONSchema/Draft/2020-12", "jsonschema", "2020-12"),
        ("JSONSchema/Draft-04", "jsonschema", "draft-04"),
        ("jsonschema/draft-06", "jsonschema", "draft-06"),
        ("JSONSchema/Unknown", "jsonschema", "unknown"),
        ("JSONSchema", "jsonschema", "draft-07"),
        ("JSON/1.0", "jsonschema", "draft-07"),
        ("Avro", "avro", ""),
        ("Avro/1.8.2", "avro", "1.8.2"),
        ("AVRO/1.11.2", "avro", "1.11.2"),
        ("Protobuf/3", "protobuf", "3"),
        ("Proto/3", "protobuf", "3"),
        ("Protobuf/2.0", "protobuf", "2"),
        ("XSD/1.0", "xsd", "1.0"),
        ("XMLSchema/1.1", "xsd", "1.1"),
        ("  xsd  ", "xsd", "1.0"),
    ],
)
def test_format_aliases_normalize(text: str, kind: str, version: str) -> None:
    assert normalize_schema_format(text) == SchemaFormat(kind, version)


@pytest.mark.parametrize("text", ["JsonStructure/draft-02", "", "Thrift/0.13", "CSV"])
def test_unknown_format_names_are_none(text: str) -> None:
    assert normalize_schema_format(text) is None


def test_implied_content_types() -> None:
    assert implied_content_types("jsonschema") == ("application/json",)
    assert implied_content_types("avro") == ("application/avro", "avro/binary")
    assert implied_content_types("protobuf") == ("application/protobuf", "application/x-protobuf")
    assert implied_content_types("xsd") == ("application/xml", "text/xml")
    assert implied_content_types("nope") == ()


def test_unsupported_kind_is_a_compile_error() -> None:
    with pytest.raises(SchemaCompileError, match="unsupported"):
        compile_payload_validator(SchemaFormat("thrift", ""), {})


# --- JSON Schema --------------------------------------------------------------------------

TELEMETRY = {
    "type": "object",
    "required": ["temperature"],
    "properties": {"temperature": {"type": "number", "minimum": -50}, "a/b": {"type": "string"}},
}


def test_jsonschema_valid_payload_is_none() -> None:
    v = compile_payload_validator(JSON07, TELEMETRY)
    assert v.kind == "jsonschema"
    assert v.check_bytes(b'{"temperature": 21.5}', "application/json") is None
    assert v.check_value({"temperature": 21.5}) is None


def test_jsonschema_violation_carries_pointer_keyword_and_value() -> None:
    v = compile_payload_validator(JSON07, TELEMETRY)
    result = v.check_value({"temperature": -60})
    assert result is not None and len(result) == 1
    (violation,) = result
    assert violation.path == "dataschema:/temperature"
    assert violation.rule is Rule.SCHEMA
    assert violation.expected == "minimum: -50"
    assert violation.actual == -60
    assert "minimum" in violation.message


def test_jsonschema_root_and_escaped_pointers() -> None:
    v = compile_payload_validator(JSON07, TELEMETRY)
    root = v.check_value([1])
    assert root is not None and root[0].path == "dataschema:" and root[0].expected == 'type: "object"'
    escaped = v.check_value({"temperature": 1, "a/b": 3})
    assert escaped is not None and escaped[0].path == "dataschema:/a~1b"


def test_jsonschema_bad_bytes_are_decode_not_schema() -> None:
    v = compile_payload_validator(JSON07, TELEMETRY)
    for body in (b"{", b"", b"\xff\xfe", b'{"temperature": NaN}'):
        result = v.check_bytes(body, "application/json")
        assert result is not None and result[0].rule is Rule.DECODE, body
        assert result[0].path == "dataschema:" and result[0].expected == "valid JSON"
    schema_failure = v.check_bytes(b"{}", None)
    assert schema_failure is not None and schema_failure[0].rule is Rule.SCHEMA


def test_jsonschema_non_json_value_is_reported_not_raised() -> None:
    v = compile_payload_validator(JSON07, TELEMETRY)
    result = v.check_value({1, 2})
    assert result is not None and result[0].rule is Rule.DECODE


def test_jsonschema_violations_are_capped() -> None:
    schema = {"required": [f"p{i}" for i in range(25)]}
    result = compile_payload_validator(JSON07, schema).check_value({})
    assert result is not None and len(result) == 10
    assert {v.expected for v in result} >= {'required: "p0"', 'required: "p9"'}


def test_jsonschema_draft_follows_format_version() -> None:
    schema = {"dependentRequired": {"a": ["b"]}}  # a 2019-09 keyword, unknown to draft-07
    assert compile_payload_validator(JSON07, schema).check_value({"a": 1}) is None
    assert compile_payload_validator(JSON2020, schema).check_value({"a": 1}) is not None
    unknown = SchemaFormat("jsonschema", "unknown")  # no $schema: 2020-12
    assert compile_payload_validator(unknown, schema).check_value({"a": 1}) is not None


def test_jsonschema_dollar_schema_wins_over_format_version() -> None:
    draft4 = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "maximum": 5,
        "exclusiveMaximum": True,  # boolean form: draft-04 only
    }
    v = compile_payload_validator(JSON2020, draft4)
    assert v.check_value(4) is None
    assert v.check_value(5) is not None
    draft7 = {"$schema": "https://json-schema.org/draft-07/schema", "dependentRequired": {"a": ["b"]}}
    assert compile_payload_validator(JSON2020, draft7).check_value({"a": 1}) is None


def test_jsonschema_formats_are_annotations() -> None:
    v = compile_payload_validator(JSON07, {"format": "email"})
    assert v.check_value("not an email") is None


def test_jsonschema_schema_as_text() -> None:
    v = compile_payload_validator(JSON07, '{"type": "integer"}')
    assert v.check_value(3) is None and v.check_value("3") is not None


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [({"type": 12}, "/type"), ({"properties": {"a": {"minimum": "x"}}}, "/properties/a/minimum")],
)
def test_jsonschema_invalid_schema_raises_with_pointer(schema: object, pointer: str) -> None:
    with pytest.raises(SchemaCompileError) as info:
        compile_payload_validator(JSON07, schema, where="schemagroups/g/schemas/s")
    assert info.value.pointer == pointer
    assert str(info.value).startswith("schemagroups/g/schemas/s: invalid JSON Schema")


def test_jsonschema_non_schema_values_raise() -> None:
    for schema in (12, "{not json", ["a"]):
        with pytest.raises(SchemaCompileError):
            compile_payload_validator(JSON07, schema)


def test_jsonschema_remote_ref_is_refused_at_compile() -> None:
    schema = {"properties": {"n": {"$ref": "http://localhost:1234/integer.json"}}}
    with pytest.raises(SchemaCompileError, match=r"http://localhost:1234/integer\.json") as info:
        compile_payload_validator(JSON07, schema)
    assert "not fetched" in str(info.value)


def test_jsonschema_metaschema_ref_resolves_offline() -> None:
    # Meta-schemas ship with jsonschema-rs: no retrieval needed.
    v = compile_payload_validator(JSON07, {"$ref": "http://json-schema.org/draft-07/schema#"})
    assert v.check_value({"type": "string"}) is None
    assert v.check_value({"type": 12}) is not None


# --- Avro ---------------------------------------------------------------------------------

READING = {
    "type": "record",
    "name": "Reading",
    "namespace": "com.example",
    "fields": [
        {"name": "device", "type": "string"},
        {"name": "temperature", "type": "double"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "raw", "type": "bytes", "default": ""},
    ],
}
ALERT = {
    "type": "record",
    "name": "Alert",
    "namespace": "com.example",
    "fields": [{"name": "reading", "type": "Reading"}, {"name": "level", "type": "int"}],
}


def _avro_bytes(schema: Any, datum: Any) -> bytes:
    out = io.BytesIO()
    schemaless_writer(out, parse_schema(schema), datum)
    return out.getvalue()


GOOD_READING = {"device": "d1", "temperature": 21.5, "note": "ok", "raw": b"\x00\xff"}


def test_avro_binary_valid() -> None:
    v = compile_payload_validator(AVRO, READING)
    assert v.kind == "avro"
    body = _avro_bytes(READING, GOOD_READING)
    assert v.check_bytes(body, "application/avro") is None
    assert v.check_bytes(body, None) is None


def test_avro_leftover_and_truncated_bytes_are_decode() -> None:
    v = compile_payload_validator(AVRO, READING)
    body = _avro_bytes(READING, GOOD_READING)
    leftover = v.check_bytes(body + b"\x00\x00", "avro/binary")
    assert leftover is not None and leftover[0].rule is Rule.DECODE
    assert "2 bytes left over" in leftover[0].message
    truncated = v.check_bytes(body[:-3], "avro/binary")
    assert truncated is not None and truncated[0].rule is Rule.DECODE
    bad_union = v.check_bytes(b"\x04d1" + b"\x00" * 8 + b"\x09", None)  # union index 9 does not exist
    assert bad_union is not None and bad_union[0].rule is Rule.DECODE


def test_avro_type_selector_reads_a_named_record() -> None:
    union = [READING, ALERT]
    alert = {"reading": GOOD_READING, "level": 3}
    body = _avro_bytes(
        {**ALERT, "fields": [{"name": "reading", "type": READING}, {"name": "level", "type": "int"}]}, alert
    )
    for name in ("Alert", "com.example.Alert", ".com.example.Alert"):
        v = compile_payload_validator(AVRO, union, type_name=name)
        assert v.check_bytes(body, None) is None
        assert v.check_value({"reading": {"device": "d", "temperature": 1.0}, "level": 1}) is None
    # Without a selector the body must start with a union branch index.
    whole = compile_payload_validator(AVRO, union)
    assert whole.check_bytes(body, None) is not None
    assert whole.check_bytes(b"\x02" + body, None) is None
    with pytest.raises(SchemaCompileError, match="Nope"):
        compile_payload_validator(AVRO, union, type_name="Nope")


def test_avro_json_encoding_wraps_unions() -> None:
    v = compile_payload_validator(AVRO, READING)
    wrapped = {"device": "d1", "temperature": 1, "note": {"string": "x"}, "raw": "\u00ff"}
    assert v.check_value(wrapped) is None
    assert v.check_bytes(orjson.dumps(wrapped), "application/json; charset=utf-8") is None
    assert v.check_value({"device": "d1", "temperature": 2.5}) is None  # defaults fill the rest
    unwrapped = v.check_value({"device": "d1", "temperature": 1.0, "note": "x"})
    assert unwrapped is not None and unwrapped[0].rule is Rule.SCHEMA
    missing = v.check_value({"temperature": 1.0})
    assert missing is not None and missing[0].rule is Rule.SCHEMA


def test_avro_json_type_errors_name_the_field() -> None:
    v = compile_payload_validator(AVRO, [READING, ALERT], type_name="Alert")
    result = v.check_value({"reading": {"device": 7, "temperature": 1.0}, "level": "high"})
    assert result is not None and all(x.rule is Rule.SCHEMA for x in result)
    assert {x.path for x in result} <= {"dataschema:/reading/device", "dataschema:/level"}
    assert result[0].path in ("dataschema:/reading/device", "dataschema:/level")
    level = compile_payload_validator(AVRO, READING).check_value({"device": "d", "temperature": "hot"})
    assert level is not None and level[0].path == "dataschema:/temperature" and level[0].actual == "hot"


def test_avro_json_body_that_is_not_json_is_decode() -> None:
    v = compile_payload_validator(AVRO, READING)
    result = v.check_bytes(b'{"device": ', "application/json")
    assert result is not None and result[0].rule is Rule.DECODE


def test_avro_schema_as_text_and_primitive() -> None:
    v = compile_payload_validator(AVRO, orjson.dumps(READING).decode())
    assert v.check_bytes(_avro_bytes(READING, GOOD_READING), None) is None
    long_v = compile_payload_validator(AVRO, "long")
    assert long_v.check_bytes(b"\x02", None) is None
    assert long_v.check_value(1) is None and long_v.check_value("1") is not None


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "record", "name": "R", "fields": [{"name": "a", "type": "nope"}]},
        {"type": "record", "name": "R"},
        {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int", "default": "x"}]},
        {"type": "enum", "name": "E", "symbols": ["A", "A"]},
        "{not json",
        12,
    ],
)
def test_avro_bad_schema_raises(schema: object) -> None:
    with pytest.raises(SchemaCompileError):
        compile_payload_validator(AVRO, schema)


# --- Protobuf -----------------------------------------------------------------------------

PROTO3 = """
syntax = "proto3";
package demo;
import "google/protobuf/timestamp.proto";

message Reading {
  double temperature = 1;
  google.protobuf.Timestamp at = 2;
  Inner inner = 3;
  message Inner { int32 v = 1; }
}

message Alert { string text = 1; int32 level = 2; }
"""

PROTO2 = """
syntax = "proto2";
package legacy;

message Order {
  required int32 id = 1;
  optional string name = 2;
  repeated Line lines = 3;
  message Line { required string sku = 1; }
}
"""


def test_protobuf_first_message_by_default_and_binary() -> None:
    v = compile_payload_validator(PROTO, PROTO3)
    assert v.kind == "protobuf"
    # temperature = 1.5 (field 1, fixed64), inner.v = 3 (field 3, length-delimited).
    body = b"\x09\x00\x00\x00\x00\x00\x00\xf8\x3f\x1a\x02\x08\x03"
    assert v.check_bytes(body, "application/protobuf") is None
    assert v.check_bytes(b"", None) is None
    corrupt = v.check_bytes(b"\xff\xff\xff", "application/x-protobuf")
    assert corrupt is not None and corrupt[0].rule is Rule.DECODE and "demo.Reading" in corrupt[0].message


def test_protobuf_type_selector() -> None:
    for name in ("Alert", "demo.Alert"):
        v = compile_payload_validator(PROTO, PROTO3, type_name=name)
        assert v.check_value({"text": "hot", "level": 2}) is None
        assert v.check_value({"temperature": 1.0}) is not None  # a Reading field, not an Alert one
    nested = compile_payload_validator(PROTO, PROTO3, type_name="Reading.Inner")
    assert nested.check_value({"v": 1}) is None
    with pytest.raises(SchemaCompileError, match="Nope"):
        compile_payload_validator(PROTO, PROTO3, type_name="Nope")


def test_protobuf_json_mapping() -> None:
    v = compile_payload_validator(PROTO, PROTO3)
    good = {"temperature": 21.5, "at": "2024-05-01T10:00:00Z", "inner": {"v": 3}}
    assert v.check_value(good) is None
    assert v.check_bytes(orjson.dumps(good), "application/json") is None
    wrong = v.check_value({"temperature": "hot"})
    assert wrong is not None and wrong[0].rule is Rule.SCHEMA and wrong[0].path == "dataschema:/temperature"
    nested = v.check_value({"inner": {"v": "x"}})
    assert nested is not None and nested[0].path == "dataschema:/inner/v"
    unknown = v.check_value({"nope": 1})
    assert unknown is not None and unknown[0].rule is Rule.SCHEMA
    timestamp = v.check_value({"at": "yesterday"})
    assert timestamp is not None and timestamp[0].rule is Rule.SCHEMA
    not_json = v.check_bytes(b'{"temperature": ', "application/json")
    assert not_json is not None and not_json[0].rule is Rule.DECODE
    scalar = v.check_value(5)
    assert scalar is not None and scalar[0].rule is Rule.SCHEMA


def test_protobuf_proto2_required_fields() -> None:
    v = compile_payload_validator(SchemaFormat("protobuf", "2"), PROTO2)
    # name = "x" (field 2) and one empty line (field 3): id and lines[0].sku are missing.
    result = v.check_bytes(b"\x12\x01x\x1a\x00", None)
    assert result is not None and all(x.rule is Rule.SCHEMA for x in result)
    assert [x.path for x in result] == ["dataschema:/id", "dataschema:/lines/0/sku"]
    assert v.check_bytes(b"\x08\x07", None) is None  # id = 7
    json_missing = v.check_value({"name": "x"})
    assert json_missing is not None and json_missing[0].path == "dataschema:/id"
    assert v.check_value({"id": 1, "lines": [{"sku": "a"}]}) is None


def test_protobuf_compiles_once_per_source() -> None:
    a = compile_payload_validator(PROTO, PROTO3, type_name="Alert")
    b = compile_payload_validator(PROTO, PROTO3, type_name="Alert")
    assert a._cls is b._cls  # type: ignore[attr-defined]  # the cached pool served both


def test_protobuf_syntax_error_carries_protoc_text() -> None:
    bad = 'syntax = "proto3";\nmessage X { int32 a = 1 }\n'
    with pytest.raises(SchemaCompileError, match=r'schema\.proto:2:\d+: Expected ";"'):
        compile_payload_validator(PROTO, bad)
    with pytest.raises(SchemaCompileError):  # cached failure, same answer
        compile_payload_validator(PROTO, bad)
    with pytest.raises(SchemaCompileError):
        compile_payload_validator(PROTO, {"not": "text"})


# --- XSD ----------------------------------------------------------------------------------

READING_XSD = """<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"
    targetNamespace="urn:example" xmlns="urn:example" elementFormDefault="qualified">
  <xs:element name="reading">
    <xs:complexType>
      <xs:sequence>
        <xs:element name="temperature" type="xs:decimal"/>
        <xs:element name="unit" type="xs:string" minOccurs="0"/>
      </xs:sequence>
      <xs:attribute name="id" type="xs:int" use="required"/>
    </xs:complexType>
  </xs:element>
  <xs:element name="note" type="xs:string"/>
</xs:schema>"""

GOOD_XML = b'<reading xmlns="urn:example" id="1"><temperature>21.5</temperature></reading>'


def test_xsd_valid_and_invalid() -> None:
    v = compile_payload_validator(XSD10, READING_XSD)
    assert v.kind == "xsd"
    assert v.check_bytes(GOOD_XML, "application/xml") is None
    assert v.check_bytes(b'<note xmlns="urn:example">hi</note>', "text/xml") is None
    bad = v.check_bytes(b'<reading xmlns="urn:example" id="1"><temperature>hot</temperature></reading>', None)
    assert bad is not None and bad[0].rule is Rule.SCHEMA
    assert bad[0].path == "dataschema:/reading/temperature" and bad[0].actual == "hot"
    stranger = v.check_bytes(b"<other/>", None)
    assert stranger is not None and stranger[0].rule is Rule.SCHEMA


def test_xsd_malformed_is_decode() -> None:
    v = compile_payload_validator(XSD10, READING_XSD)
    for body in (b'<reading xmlns="urn:example"><temperature>1', b"", b"/etc/passwd", b"not xml"):
        result = v.check_bytes(body, None)
        assert result is not None and result[0].rule is Rule.DECODE, body


def test_xsd_refuses_entities() -> None:
    v = compile_payload_validator(XSD10, READING_XSD)
    bomb = b'<!DOCTYPE r [<!ENTITY a "aaaa">]><note xmlns="urn:example">&a;</note>'
    result = v.check_bytes(bomb, None)
    assert result is not None and result[0].rule is Rule.DECODE


def test_xsd_element_selector() -> None:
    v = compile_payload_validator(XSD10, READING_XSD, type_name="reading")
    assert v.check_bytes(GOOD_XML, None) is None
    other = v.check_bytes(b'<note xmlns="urn:example">hi</note>', None)
    assert other is not None and other[0].rule is Rule.SCHEMA and "reading" in str(other[0].expected)
    qualified = compile_payload_validator(XSD10, READING_XSD, type_name="{urn:example}note")
    assert qualified.check_bytes(b'<note xmlns="urn:example">hi</note>', None) is None
    with pytest.raises(SchemaCompileError, match="nope"):
        compile_payload_validator(XSD10, READING_XSD, type_name="nope")


def test_xsd_check_value_takes_xml_text_only() -> None:
    v = compile_payload_validator(XSD10, READING_XSD)
    assert v.check_value(GOOD_XML.decode()) is None
    not_text = v.check_value({"temperature": 1})
    assert not_text is not None and not_text[0].rule is Rule.SCHEMA and not_text[0].expected == "XML text"


def test_xsd_version_selects_xsd11() -> None:
    xsd = """<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
      <xs:element name="range"><xs:complexType>
        <xs:attribute name="min" type="xs:int"/><xs:attribute name="max" type="xs:int"/>
        <xs:assert test="@min le @max"/>
      </xs:complexType></xs:element></xs:schema>"""
    v = compile_payload_validator(XSD11, xsd)
    assert v.check_bytes(b'<range min="1" max="2"/>', None) is None
    assert v.check_bytes(b'<range min="3" max="2"/>', None) is not None
    with pytest.raises(SchemaCompileError):  # xs:assert is not XSD 1.0
        compile_payload_validator(XSD10, xsd)


@pytest.mark.parametrize(
    "schema",
    [
        "<xs:schema",
        "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'><xs:element name='a' type='xs:nope'/></xs:schema>",
        "schema.xsd",
        (
            "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema' xmlns:x='urn:x'>"
            "<xs:import namespace='urn:x' schemaLocation='http://localhost:1234/x.xsd'/>"
            "<xs:element name='a' type='x:T'/></xs:schema>"
        ),
        12,
    ],
)
def test_xsd_bad_schema_raises(schema: object) -> None:
    with pytest.raises(SchemaCompileError):
        compile_payload_validator(XSD10, schema)
