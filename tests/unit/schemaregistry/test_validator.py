"""The wire-format validator alone, compiled from schemas in memory: the hot path never raises, whatever the
bytes, and answers what docs/validation.md's rule names say."""

from __future__ import annotations

import json
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.compiler.payload.confluent import ConfluentValidator, compile_registry_payload
from gateway.errors import SchemaCompileError
from gateway.model import Origin
from gateway.schemaregistry import RegisteredSchema, RegistryPayloadSchema
from gateway.verdict import Rule
from tests.unit.schemaregistry.standin import ORDERS_PROTO, READING_V1, READING_V2, avro_payload, header

V1 = RegisteredSchema(1, "AVRO", json.dumps(READING_V1), "readings-value", 1)
V2 = RegisteredSchema(2, "AVRO", json.dumps(READING_V2), "readings-value", 2)
ORDERS = RegisteredSchema(10, "PROTOBUF", ORDERS_PROTO, "orders-value", 1)
KNOWN = MappingProxyType({1: V1.label, 2: V2.label, 10: ORDERS.label, 11: "11 (subject x version 1)"})


def _validator(*allowed: RegisteredSchema, type_name: str | None = None, fmt: str = "Avro") -> ConfluentValidator:
    payload = RegistryPayloadSchema(fmt, allowed[-1].schema, type_name, Origin("http://registry.test", ""), "main",
                                    "confluent://main/...", allowed, allowed[-1].id, KNOWN)
    return compile_registry_payload(payload)


AVRO = _validator(V1, V2)
PROTOBUF = _validator(ORDERS, type_name="com.example.Refund", fmt="Protobuf")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64), st.sampled_from([b"", header(1), header(2), header(10), header(11), header(99)]))
def test_any_bytes_get_a_verdict_never_an_exception(tail: bytes, head: bytes) -> None:
    for validator in (AVRO, PROTOBUF):
        found = validator.check_bytes(head + tail, None)
        assert found is None or all(v.rule in (Rule.DECODE, Rule.SCHEMA, Rule.LIMIT) for v in found)
        assert found is None or all(v.path.startswith("dataschema:") for v in found)


def test_the_content_type_does_not_change_the_encoding() -> None:
    body = avro_payload(1, READING_V1, {"device": "d", "temperature": 1.0})
    assert AVRO.check_bytes(body, "application/json") is None


def test_an_id_known_elsewhere_and_one_never_seen() -> None:
    elsewhere = AVRO.check_bytes(header(11) + b"x", None)
    never = AVRO.check_bytes(header(99) + b"x", None)
    assert elsewhere is not None and never is not None
    assert elsewhere[0].message.startswith("schema id 11 (subject x version 1) of registry 'main' is not one")
    assert elsewhere[0].expected == "schema id 1 (subject readings-value version 1) or 2 (subject readings-value " \
                                    "version 2)"
    assert never[0].message.startswith("schema id 99 is unknown")


def test_a_selector_must_name_a_message_of_the_schema_itself() -> None:
    with pytest.raises(SchemaCompileError, match="not a message of the .proto"):
        _validator(ORDERS, type_name="com.example.Nope", fmt="Protobuf")
    with pytest.raises(SchemaCompileError, match="registry schema id 10 \\(subject orders-value version 1\\)"):
        _validator(ORDERS, type_name="google.protobuf.Empty", fmt="Protobuf")


def test_structured_json_data_is_judged_by_the_default_schema() -> None:
    assert AVRO.check_value({"device": "d", "temperature": 1.0, "unit": "C"}) is None
    assert AVRO.check_value({"device": "d"}) is not None
