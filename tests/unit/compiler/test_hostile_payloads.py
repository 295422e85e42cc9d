"""Payloads built to hang, exhaust or escape a validator: each gets a verdict at once and touches nothing.

XML entity bombs and external entities, regular-expression bombs for XSD and JSON Schema patterns,
Avro bodies that nest or repeat without bound, deeply nested Protobuf and XML."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from gateway.compiler.core import native_available
from gateway.compiler.payload import SchemaFormat, compile_payload_validator
from gateway.compiler.payload.avro_scan import MAX_EMPTY_ITEMS
from gateway.compiler.payload.explain_bound import UNLISTED, explain_depth
from gateway.errors import SchemaCompileError
from tests.unit.builders import ce_message, http_ce, kafka_ce, load_doc, registry
from tests.unit.compiler.test_check_native import _both, _handed_back

XSD = SchemaFormat("xsd", "1.0")
AVRO = SchemaFormat("avro", "1.11")
JSON = SchemaFormat("jsonschema", "draft-07")


def _rules(found: Any) -> list[str]:
    return [v.rule.value for v in found or ()]


# a catastrophic case (exponential backtracking, entity expansion) takes minutes of CPU; this thread's CPU time
# is not stretched by the other processes of a loaded machine, as wall-clock time is, so a generous bound on it
# still tells the two apart
CPU_SECONDS = 10.0


def _timed(call: Any) -> Any:
    started = time.thread_time()
    result = call()
    assert time.thread_time() - started < CPU_SECONDS
    return result


def _xsd(pattern: str) -> Any:
    return compile_payload_validator(XSD, (
        '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:element name="r"><xs:simpleType>'
        f'<xs:restriction base="xs:string"><xs:pattern value="{pattern}"/></xs:restriction></xs:simpleType>'
        '</xs:element></xs:schema>'))


# --- XML ----------------------------------------------------------------------------------------------

LAUGHS = ('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "lollollollollol">'
          + "".join(f'<!ENTITY {chr(98 + n)} "{("&" + chr(97 + n) + ";") * 10}">' for n in range(9))
          + ']><r>&j;</r>')


@pytest.mark.parametrize("body", [
    LAUGHS,                                                                               # 10^9 "lol"s
    '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>',  # external entity
    '<?xml version="1.0"?><!DOCTYPE r SYSTEM "file:///etc/passwd"><r/>',                  # external DTD
    '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY % p SYSTEM "http://127.0.0.1:9/x.dtd"> %p;]><r/>',
])
def test_entities_are_refused_not_expanded_or_fetched(body: str) -> None:
    found = _timed(lambda: _xsd(".*").check_bytes(body.encode(), "application/xml"))
    assert _rules(found) == ["decode"]
    assert "root:" not in str(found[0].actual) + found[0].message  # nothing of /etc/passwd was read


def test_a_pattern_bomb_runs_in_linear_time() -> None:
    validator = _xsd("(a|aa)+")  # Python's re: exponential in the run of a's before the `!`
    assert _timed(lambda: validator.check_bytes(b"<r>" + b"a" * 100_000 + b"!</r>", None))
    assert validator.check_bytes(b"<r>aaaa</r>", None) is None


@pytest.mark.parametrize(("pattern", "good", "bad"), [
    (r"\d+", "12\u0663", "1a"),              # XSD \d is every Unicode decimal digit
    (r"\s", " ", "\u00a0"),                  # XSD \s is space, tab, CR, LF only
    (r"\w+", "a\u00e9", "a_"),               # XSD \w excludes punctuation, `_` too
    (r"[\w.]+", "a.b", "a b"),
    (r"\p{Lu}\P{Lu}", "Ab", "AB"),
    ("a{2,3}", "aa", "aaaa"),
])
def test_xsd_pattern_meanings_survive_the_engine_swap(pattern: str, good: str, bad: str) -> None:
    validator = _xsd(pattern)
    assert validator.check_bytes(f"<r>{good}</r>".encode(), None) is None
    assert _rules(validator.check_bytes(f"<r>{bad}</r>".encode(), None)) == ["schema"]


def test_a_pattern_the_linear_engine_cannot_take_is_a_compile_error() -> None:
    with pytest.raises(SchemaCompileError, match="linear-time"):
        _xsd(r"\p{Cs}")  # surrogates: no XML text holds them, and no UTF-8 engine either


def test_xml_nested_past_the_limit() -> None:
    validator = _xsd(".*")
    for depth in (129, 5000, 100_000):
        body = ("<r>" * depth + "</r>" * depth).encode()
        assert _rules(_timed(lambda: validator.check_bytes(body, None))) == ["limit"]


# --- JSON Schema patterns ------------------------------------------------------------------------------

def test_json_schema_patterns_run_in_linear_time() -> None:
    validator = compile_payload_validator(JSON, {"type": "string", "pattern": "^(a|aa)+$"})
    assert _rules(_timed(lambda: validator.check_value("a" * 100_000 + "!"))) == ["schema"]
    validator = compile_payload_validator(JSON, {"patternProperties": {"^(a+)+$": {"type": "integer"}}})
    assert _rules(_timed(lambda: validator.check_value({"a" * 50_000 + "!": "x", "aa": "y"}))) == ["schema"]


@pytest.mark.parametrize(("pattern", "hostile", "fitting"), [
    ("^(a+)+$", "a" * 30 + "b", "aaaa"),                # exponential in Python's re (issue 35, item 1)
    ("[a-z]+@[a-z]+", "a" * 200_000, "ab@cd"),          # quadratic in Python's re (issue 35, item 2)
])
def test_the_accepting_pass_searches_patterns_in_linear_time(tmp_path: Path, pattern: str, hostile: str,
                                                             fitting: str) -> None:
    """The Python judge's accepting pass (payload/native.py: a msgspec decode, then the patterns) on a
    protocol the native core does not take: the patterns run on the regex crate there too."""
    loaded = load_doc(tmp_path, registry("HTTP", {"m": ce_message(
        "t", dataschemaformat="JsonSchema/draft-07",
        dataschema={"type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string", "pattern": pattern}}})}))
    assert not loaded.errors

    def judged(name: str) -> Any:
        return loaded.judge(http_ce(body=json.dumps({"name": name}),
                                    extra_headers={"content-type": "application/json"}))

    refused = _timed(lambda: judged(hostile))
    assert (refused.outcome.value, [(v.path, v.rule.value) for v in refused.violations]) == \
        ("nonconformant", [("dataschema:/name", "schema")])
    assert judged(fitting).conformant


@pytest.mark.parametrize(("schema", "pointer"), [
    ({"properties": {"a": {"type": "string", "pattern": "^(?!admin).*$"}}}, "/properties/a/pattern"),
    ({"patternProperties": {"(a)\\1": {}}}, "/patternProperties/(a)\\1"),
])
def test_patterns_needing_backtracking_are_refused(schema: dict[str, Any], pointer: str) -> None:
    with pytest.raises(SchemaCompileError, match="lookaround or backreferences") as caught:
        compile_payload_validator(JSON, schema)
    assert caught.value.pointer == pointer


def test_the_refusal_names_the_file_and_the_pattern(tmp_path: Path) -> None:
    message = ce_message("t", dataschemaformat="JsonSchema/draft-07",
                         dataschema={"properties": {"id": {"pattern": "^(?=x)"}}})
    loaded = load_doc(tmp_path, registry(None, {"m": message}), name="lookahead.xreg.json")
    [error] = loaded.errors
    assert error.file.endswith("lookahead.xreg.json") and "^(?=x)" in error.message
    assert error.pointer.endswith("/properties/id/pattern")


# --- Avro ---------------------------------------------------------------------------------------------

LIST = {"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]}


def test_recursive_avro_data_nested_past_the_limit() -> None:
    validator = compile_payload_validator(AVRO, LIST)
    assert validator.check_bytes(b"\x02" * 127 + b"\x00", None) is None  # 128 records
    assert _rules(validator.check_bytes(b"\x02" * 128 + b"\x00", None)) == ["limit"]
    assert _rules(_timed(lambda: validator.check_bytes(b"\x02" * 1_000_000 + b"\x00", None))) == ["limit"]


def test_a_record_holding_itself_without_a_union_never_ends() -> None:
    validator = compile_payload_validator(AVRO, {"type": "record", "name": "A", "fields": [{"name": "a", "type": "A"}]})
    assert _rules(validator.check_bytes(b"", None)) == ["limit"]


@pytest.mark.parametrize("items", ["null", {"type": "record", "name": "E", "fields": []},
                                   {"type": "fixed", "name": "Z", "size": 0}])
def test_items_that_take_no_bytes_are_counted(items: Any) -> None:
    validator = compile_payload_validator(AVRO, {"type": "array", "items": items})
    assert validator.check_bytes(b"\x06\x00", None) is None  # three items in two bytes: valid
    claim = MAX_EMPTY_ITEMS + 1
    body = bytes([(claim << 1) & 0x7F | 0x80, (claim << 1) >> 7 & 0x7F | 0x80, (claim << 1) >> 14, 0])
    assert _rules(_timed(lambda: validator.check_bytes(body, None))) == ["limit"]


def test_a_corrupt_body_of_a_scanned_schema_is_decode() -> None:
    validator = compile_payload_validator(AVRO, LIST)
    assert _rules(validator.check_bytes(b"\x04", None)) == ["decode"]  # union branch 2 of 2
    assert _rules(validator.check_bytes(b"\x02\x02", None)) == ["decode"]  # truncated


# --- Protobuf -----------------------------------------------------------------------------------------

def test_protobuf_nesting_is_bounded_by_the_runtime() -> None:
    validator = compile_payload_validator(SchemaFormat("protobuf", "3"),
                                          'syntax = "proto3"; message N { N next = 1; }')
    body = b""
    for _ in range(200):
        body = b"\x0a" + _varint(len(body)) + body
    assert _rules(_timed(lambda: validator.check_bytes(body, None))) == ["decode"]


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        value, digit = value >> 7, value & 0x7F
        out.append(digit | (0x80 if value else 0))
        if not value:
            return bytes(out)


# --- JSON Schema: listing the errors of a recursive combinator ------------------------------------------

# two branches of one anyOf that both lead back to it: jsonschema-rs decides validity at once but lists the
# errors by walking both branches at every level (10.9 s at 16 levels, minutes at 20, before the bound)
FORKING = {"anyOf": [{"type": "array", "items": {"$ref": "#"}},
                     {"type": "array", "minItems": 1, "items": {"$ref": "#"}}, {"type": "string"}]}


def _nested(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


@pytest.mark.parametrize(("schema", "bound"), [
    (FORKING, 6),
    ({"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}}, None),  # a tree
    ({"anyOf": [{"type": "null"}, {"$ref": "#/definitions/n"}],
      "definitions": {"n": {"properties": {"next": {"$ref": "#"}}}}}, None),                      # a list
    ({"allOf": [{"$ref": "#/definitions/x"}] * 3, "definitions": {"x": {"items": {"$ref": "#"}}}}, 4),
    ({"$ref": "#"}, -1),                                                                          # itself
    ({"definitions": {f"a{i}": {"anyOf": [{"$ref": f"#/definitions/a{i + 1}"}] * 2} for i in range(20)},
      "$ref": "#/definitions/a0"}, -1),                                                           # 2^20 paths
    (True, None),
])
def test_how_deep_errors_are_listed(schema: Any, bound: int | None) -> None:
    assert explain_depth(schema) == bound


def test_listing_the_errors_of_a_forking_recursive_schema_is_bounded() -> None:
    validator = compile_payload_validator(JSON, FORKING)
    shallow = validator.check_value(json.loads(_nested(5)))
    assert [(v.path, v.rule.value) for v in shallow or ()] == [("dataschema:", "schema")]
    assert "anyOf" in shallow[0].message  # itemised as the engine says it
    for depth in (7, 20, 120):
        deep = _timed(lambda depth=depth: validator.check_value(json.loads(_nested(depth))))
        assert [(v.path, v.rule.value, v.message) for v in deep or ()] == [("dataschema:", "schema", UNLISTED)]
    assert validator.check_value(json.loads("[" * 30 + '"x"' + "]" * 30)) is None  # validity is not bounded


@pytest.mark.skipif(not native_available(), reason="the native core is not built (make install)")
def test_the_core_bounds_the_listing_as_the_python_judge_does(tmp_path: Path) -> None:
    loaded = load_doc(tmp_path, registry("KAFKA", {"m": ce_message(
        "t", dataschemaformat="JsonSchema/draft-07", dataschema=FORKING)}))
    assert not loaded.errors
    lines = b"".join(json.dumps(kafka_ce(body=_nested(depth), extra_headers={"ce_datacontenttype": "application/json"})
                                ).encode() + b"\n" for depth in (3, 6, 7, 16, 40))
    started = time.thread_time()
    out, summary = _both(loaded.ruleset, lines)  # the native checker and the Python judge write the same
    assert time.thread_time() - started < CPU_SECONDS
    assert _handed_back(loaded.ruleset, lines) == (5, 0)  # the core judged every line itself
    messages = [json.loads(line)["violations"][0]["message"] for line in out.splitlines()]
    assert [message == UNLISTED for message in messages] == [False, False, True, True, True]
    assert summary.by_verdict["nonconformant"] == 5 and summary.by_rule["schema"] == 5
