"""Protobuf changes by field number, after `buf breaking`'s WIRE and WIRE_JSON rules
(buf.build/docs/breaking/rules: FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED, FIELD_WIRE_COMPATIBLE_TYPE,
FIELD_WIRE_COMPATIBLE_CARDINALITY, FIELD_SAME_JSON_NAME, FIELD_SAME_ONEOF, ENUM_VALUE_NO_DELETE,
ENUM_VALUE_SAME_NAME), read for a gateway that parses a payload as the message (binary) or by protobuf's JSON
mapping. Where a case claims bytes change meaning or JSON is refused, protobuf itself shows it."""

from __future__ import annotations

import pytest
from google.protobuf import json_format, message_factory

from gateway.compat.change import Breaks
from gateway.compat.protobuf import changes
from gateway.compiler.payload.protobuf import message_descriptor

pytest.importorskip("grpc_tools", reason="the protobuf extra compiles .proto sources")

OLD = """syntax = "proto3";
message Order {
  string id = 1;
  int32 qty = 2;
  Status status = 3;
  Line line = 4;
  enum Status { NEW = 0; PAID = 1; SHIPPED = 2; }
}
message Line { string sku = 1; }
"""


def _found(new: str, old: str = OLD) -> list[tuple[str, str, Breaks]]:
    return [(f.pointer, f.kind, f.breaks) for f in changes(message_descriptor(old, "Order"),
                                                            message_descriptor(new, "Order"))]


def _class(source: str) -> type:
    return message_factory.GetMessageClass(message_descriptor(source, "Order"))


def test_a_field_removed_is_refused_by_the_json_mapping() -> None:
    new = OLD.replace("  int32 qty = 2;\n", "")
    assert _found(new) == [("/qty", "field-removed", Breaks.PRODUCERS)]
    with pytest.raises(json_format.ParseError):
        json_format.Parse('{"id": "o-1", "qty": 2}', _class(new)())
    assert "reserve its number" in changes(message_descriptor(OLD, "Order"), message_descriptor(new, "Order"))[0].reason


def test_a_field_removed_and_reserved_says_so() -> None:
    new = OLD.replace("  int32 qty = 2;\n", '  reserved 2; reserved "qty";\n')
    [found] = changes(message_descriptor(OLD, "Order"), message_descriptor(new, "Order"))
    assert (found.kind, found.breaks) == ("field-removed", Breaks.PRODUCERS) and "reserve" not in found.reason


def test_a_field_added_is_admitted_that_the_old_contract_refused() -> None:
    new = OLD.replace("  Line line = 4;\n", "  Line line = 4;\n  string note = 5;\n")
    assert _found(new) == [("/note", "field-added", Breaks.CONSUMERS)]


def test_a_number_given_another_type_reads_the_same_bytes_as_other_values() -> None:
    new = OLD.replace("int32 qty = 2;", "bool qty = 2;")  # the same varint family
    assert _found(new) == [("/qty", "type", Breaks.BOTH)]
    data = _class(OLD)(qty=7).SerializeToString()
    assert _class(new).FromString(data).qty is True  # 7 became true


def test_int32_to_int64_only_widens() -> None:
    assert _found(OLD.replace("int32 qty = 2;", "int64 qty = 2;")) == [("/qty", "type", Breaks.CONSUMERS)]


def test_a_rename_keeps_the_bytes_and_changes_the_json_member() -> None:
    new = OLD.replace("int32 qty = 2;", "int32 quantity = 2;")
    assert _found(new) == [("/quantity", "field-name", Breaks.BOTH)]
    data = _class(OLD)(qty=3).SerializeToString()
    assert _class(new).FromString(data).quantity == 3


def test_repeated_changes_what_the_bytes_mean() -> None:
    assert _found(OLD.replace("int32 qty = 2;", "repeated int32 qty = 2;")) == [("/qty", "cardinality", Breaks.BOTH)]


def test_enum_values_removed_renamed_and_added() -> None:
    assert _found(OLD.replace(" SHIPPED = 2;", "")) == [("/status", "enum-value", Breaks.BOTH)]
    assert _found(OLD.replace("SHIPPED = 2;", "DELIVERED = 2;")) == [("/status", "enum-value", Breaks.BOTH)]
    assert _found(OLD.replace("SHIPPED = 2;", "SHIPPED = 2; LOST = 3;")) == [("/status", "enum-value",
                                                                           Breaks.CONSUMERS)]


def test_nested_messages_are_compared_by_field_number() -> None:
    new = OLD.replace("message Line { string sku = 1; }", "message Line { bytes sku = 1; }")
    assert _found(new) == [("/line/sku", "type", Breaks.BOTH)]


def test_the_same_source_has_no_change() -> None:
    assert _found(OLD) == []
