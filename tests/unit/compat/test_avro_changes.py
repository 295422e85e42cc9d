"""Avro schema changes by the specification's schema resolution (Avro 1.11, "Schema Resolution"), asked both
ways: the new schema reading what the old one wrote (else producers break) and the old one reading what the
new one writes (else consumers break); and bytes read by position without the writer's schema (how xgate
decodes a plain Avro payload), where a change can keep bytes decodable and change their meaning. Each case
is checked with fastavro: the bytes the old schema wrote, read by the new one (with the writer's schema for
resolution, and without it, by position)."""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pytest
from fastavro._read_common import SchemaResolutionError

from gateway.compat.avro import changes
from gateway.compat.change import Breaks

REASON = {"type": "enum", "name": "Reason", "symbols": ["CUSTOMER", "STOCK", "FRAUD"]}
OLD = {"type": "record", "name": "Cancelled", "namespace": "com.example.orders",
       "fields": [{"name": "orderid", "type": "string"}, {"name": "reason", "type": REASON}]}


def _record(*fields: dict[str, Any], reason: dict[str, Any] | None = None) -> dict[str, Any]:
    base = [{"name": "orderid", "type": "string"}, {"name": "reason", "type": reason or REASON}]
    return {**OLD, "fields": base + list(fields)}


def _found(new: Any, old: Any = OLD) -> list[tuple[str, str, Breaks]]:
    return [(f.pointer, f.kind, f.breaks) for f in changes(old, new)]


def _written(schema: Any, value: Any) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), value)
    return out.getvalue()


def _read(writer: Any, reader: Any, data: bytes) -> Any:
    return fastavro.schemaless_reader(io.BytesIO(data), fastavro.parse_schema(writer), fastavro.parse_schema(reader))


def test_an_enum_symbol_removed_changes_what_old_bytes_mean() -> None:
    """The demo's case: without STOCK, an old `STOCK` (index 1) read by position is FRAUD."""
    new = _record(reason={**REASON, "symbols": ["CUSTOMER", "FRAUD"]})
    assert _found(new) == [("/reason", "enum-symbols", Breaks.BOTH)]
    data = _written(OLD, {"orderid": "o-1", "reason": "STOCK"})
    assert _read(new, new, data)["reason"] == "FRAUD"  # by position: another meaning
    with pytest.raises(SchemaResolutionError):  # by resolution: the reader does not know STOCK
        _read(OLD, new, data)


def test_a_symbol_added_at_the_end_breaks_old_readers_only() -> None:
    new = _record(reason={**REASON, "symbols": ["CUSTOMER", "STOCK", "FRAUD", "OTHER"]})
    assert _found(new) == [("/reason", "enum-symbols", Breaks.CONSUMERS)]
    old_bytes = _written(OLD, {"orderid": "o-1", "reason": "FRAUD"})
    assert _read(OLD, new, old_bytes)["reason"] == "FRAUD"  # the new reader reads every old symbol


def test_a_symbol_added_in_the_middle_shifts_the_rest() -> None:
    new = _record(reason={**REASON, "symbols": ["CUSTOMER", "LOST", "STOCK", "FRAUD"]})
    assert _found(new) == [("/reason", "enum-symbols", Breaks.BOTH)]


def test_a_field_added_without_a_default_cannot_read_old_data() -> None:
    new = _record({"name": "note", "type": "string"})
    assert _found(new) == [("/note", "field-added", Breaks.PRODUCERS)]
    with pytest.raises(SchemaResolutionError):
        _read(OLD, new, _written(OLD, {"orderid": "o-1", "reason": "FRAUD"}))


def test_a_field_added_with_a_default_resolves_both_ways() -> None:
    new = _record({"name": "note", "type": "string", "default": ""})
    assert _found(new) == [("/note", "field-added", Breaks.NOBODY)]
    assert _read(OLD, new, _written(OLD, {"orderid": "o-1", "reason": "FRAUD"}))["note"] == ""


def test_a_field_removed_without_a_default_breaks_old_readers() -> None:
    old = _record({"name": "note", "type": "string"})
    assert _found(OLD, old) == [("/note", "field-removed", Breaks.CONSUMERS)]


def test_promotions_read_one_way_only() -> None:
    """int is promoted to long when read, not the other way round."""
    old = {"type": "record", "name": "R", "fields": [{"name": "n", "type": "int"}]}
    wider = {"type": "record", "name": "R", "fields": [{"name": "n", "type": "long"}]}
    assert _found(wider, old) == [("/n", "type", Breaks.CONSUMERS)]
    assert _found(old, wider) == [("/n", "type", Breaks.PRODUCERS)]
    assert _read(old, wider, _written(old, {"n": 7})) == {"n": 7}


def test_a_union_branch_added_breaks_old_readers() -> None:
    old = {"type": "record", "name": "R", "fields": [{"name": "n", "type": ["null", "string"]}]}
    new = {"type": "record", "name": "R", "fields": [{"name": "n", "type": ["null", "string", "int"]}]}
    assert _found(new, old) == [("/n", "type", Breaks.CONSUMERS)]


def test_fields_reordered_change_what_bytes_mean() -> None:
    new = {**OLD, "fields": list(reversed(OLD["fields"]))}
    assert _found(new) == [("/", "field-order", Breaks.BOTH)]


def test_a_renamed_field_with_its_old_name_as_alias_is_the_same_field() -> None:
    new = {**OLD, "fields": [{"name": "order", "aliases": ["orderid"], "type": "string"},
                             {"name": "reason", "type": REASON}]}
    assert _found(new) == []
