"""validation rule 5.3 and 8 (text forms): every property type, in text form (header strings) and typed form
(JSON / AMQP values), passing and failing; then 5.4 value comparison after reading text as the declared type."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.compiler.types import CHECKERS, INT_MAX, INT_MIN, canonical_type, checker, coerce, parse_timestamp
from tests.unit.builders import b64, bad, load_doc, ok, registry, shape

# --- the checkers themselves --------------------------------------------------------------------------

TEXT_CASES: list[tuple[str, str, bool]] = [
    # string
    ("string", "anything at all", True),
    ("string", "", True),
    # symbol: [A-Za-z0-9_]+
    ("symbol", "abc_DEF_123", True),
    ("symbol", "a-b", False),
    ("symbol", "a b", False),
    ("symbol", "", False),
    ("symbol", "é", False),
    # integer: [+-]?[0-9]+, leading zeros allowed, -2^31 .. 2^31-1
    ("integer", "0", True),
    ("integer", "42", True),
    ("integer", "+42", True),
    ("integer", "-42", True),
    ("integer", "007", True),
    ("integer", str(INT_MAX), True),
    ("integer", str(INT_MIN), True),
    ("integer", str(INT_MAX + 1), False),
    ("integer", str(INT_MIN - 1), False),
    ("integer", "1.0", False),
    ("integer", "1e3", False),
    ("integer", "0x10", False),
    ("integer", "", False),
    ("integer", " 1", False),
    ("integer", "one", False),
    # number: decimal or exponent forms
    ("number", "1", True),
    ("number", "-1.5", True),
    ("number", "+0.25", True),
    ("number", "1e10", True),
    ("number", "1.5E-3", True),
    ("number", "007.5", True),
    ("number", "abc", False),
    ("number", "1e", False),
    ("number", "NaN", False),
    ("number", "Infinity", False),
    ("number", "0x10", False),
    ("number", "", False),
    # boolean: true / false only
    ("boolean", "true", True),
    ("boolean", "false", True),
    ("boolean", "True", False),
    ("boolean", "FALSE", False),
    ("boolean", "1", False),
    ("boolean", "yes", False),
    # binary: base64 in text forms
    ("binary", "AAAA", True),
    ("binary", "aGVsbG8=", True),
    ("binary", "aGk=", True),
    ("binary", "abc", False),
    ("binary", "!!!!", False),
    ("binary", "aGVsbG8", False),
    # timestamp: RFC 3339 with offset required
    ("timestamp", "2024-05-01T12:00:00Z", True),
    ("timestamp", "2024-05-01T12:00:00.123456789+02:00", True),
    ("timestamp", "2024-05-01T12:00:00-05:30", True),
    ("timestamp", "2024-05-01t12:00:00z", True),
    ("timestamp", "2024-05-01T12:00:00", False),
    ("timestamp", "2024-05-01", False),
    ("timestamp", "2024-13-01T00:00:00Z", False),
    ("timestamp", "2024-02-30T00:00:00Z", False),
    ("timestamp", "2024-05-01T25:00:00Z", False),
    ("timestamp", "2024-05-01T12:00:00+0200", False),
    ("timestamp", "1714564800", False),
    # duration: ISO 8601 / RFC 3339 P...
    ("duration", "P1D", True),
    ("duration", "PT1H30M", True),
    ("duration", "P1Y2M3DT4H5M6S", True),
    ("duration", "P1W", True),
    ("duration", "PT0.5S", True),
    ("duration", "P", False),
    ("duration", "PT", False),
    ("duration", "1D", False),
    ("duration", "P1H", False),
    ("duration", "PT1D", False),
    ("duration", "P1DT", False),
    ("duration", "p1d", False),
    # uri: absolute
    ("uri", "https://example.com/a?b=c#d", True),
    ("uri", "urn:isbn:0451450523", True),
    ("uri", "mailto:someone@example.com", True),
    ("uri", "/relative/path", False),
    ("uri", "example.com", False),
    ("uri", "http://exa mple.com", False),
    ("uri", "https://example.com/%zz", False),
    ("uri", "", False),
    # urireference: absolute or relative
    ("urireference", "/relative/path", True),
    ("urireference", "https://example.com", True),
    ("urireference", "../a?b#c", True),
    ("urireference", "with space", False),
    ("urireference", "/bad%zzpercent", False),
    ("urireference", "/a<b>", False),
    # uritemplate
    ("uritemplate", "/devices/{id}", True),
    ("uritemplate", "/devices/42", True),
    ("uritemplate", "/devices with space", False),
    # any / var
    ("any", "whatever", True),
    ("var", "whatever", True),
]


@pytest.mark.parametrize(("type_name", "value", "expected"), TEXT_CASES)
def test_text_form(type_name: str, value: str, expected: bool) -> None:
    assert checker(type_name)(value, True) is expected


TYPED_CASES: list[tuple[str, Any, bool]] = [
    ("string", "x", True),
    ("string", 1, False),
    ("string", None, False),
    ("symbol", "abc", True),
    ("symbol", 1, False),
    ("integer", 1, True),
    ("integer", -(2**31), True),
    ("integer", 2**31 - 1, True),
    ("integer", 2**31, False),
    ("integer", "1", False),
    ("integer", 1.5, False),
    ("integer", True, False),
    ("number", 1, True),
    ("number", 1.5, True),
    ("number", -1e300, True),
    ("number", "1.5", False),
    ("number", False, False),
    ("boolean", True, True),
    ("boolean", False, True),
    ("boolean", "true", False),
    ("boolean", 1, False),
    ("binary", b"\x00\xff", True),
    ("binary", 1, False),
    ("timestamp", "2024-05-01T12:00:00Z", True),
    ("timestamp", 1714564800, False),
    ("uri", "https://x.example", True),
    ("uri", 5, False),
    ("any", None, True),
    ("any", {"a": 1}, True),
]


@pytest.mark.parametrize(("type_name", "value", "expected"), TYPED_CASES)
def test_typed_form(type_name: str, value: Any, expected: bool) -> None:
    assert checker(type_name)(value, False) is expected


def test_every_type_of_the_contract_has_a_checker() -> None:
    for name in ("string", "symbol", "integer", "number", "boolean", "binary", "timestamp", "duration", "uri",
                 "urireference", "uritemplate", "any", "var"):
        assert name in CHECKERS


@pytest.mark.parametrize(("written", "canonical"), [
    ("Integer", "integer"), ("uri-reference", "urireference"), ("URITemplate", "uritemplate"),
    ("uri-template", "uritemplate"), (" Boolean ", "boolean"), ("TIMESTAMP", "timestamp"), (None, None)])
def test_type_names_are_case_insensitive(written: str | None, canonical: str | None) -> None:
    assert canonical_type(written) == canonical


def test_parse_timestamp_keeps_the_offset() -> None:
    a = parse_timestamp("2024-05-01T12:00:00Z")
    b = parse_timestamp("2024-05-01T14:00:00+02:00")
    assert a is not None and a == b
    assert parse_timestamp("2024-05-01T12:00:00") is None


@pytest.mark.parametrize(("value", "type_name", "text", "expected"), [
    ("1", "integer", True, 1),
    ("007", "integer", True, 7),
    ("+7", "integer", True, 7),
    ("1e0", "number", True, 1),
    ("1.50", "number", True, 1.5),
    ("true", "boolean", True, True),
    ("false", "boolean", True, False),
    ("aGk=", "binary", True, b"hi"),
    (True, "string", False, "true"),
    (5, "string", False, "5"),
])
def test_coerce_reads_text_as_the_declared_type(value: Any, type_name: str, text: bool, expected: Any) -> None:
    assert coerce(value, type_name, text) == expected


# --- through the whole pipeline: text form in KAFKA headers ----------------------------------------------


def _kafka_header_ruleset(tmp_path: Path, type_name: str, value: Any = None) -> Any:
    propdef: dict[str, Any] = {"type": type_name, "required": True}
    if value is not None:
        propdef["value"] = value
    doc = registry("KAFKA", {"m": {"protocol": "KAFKA", "protocoloptions": {"headers": {"p": propdef}}}})
    return load_doc(tmp_path, doc)


def _kafka(header: Any) -> dict[str, Any]:
    return {"protocol": "KAFKA", "topic": "any", "headers": {"p": header}}


E2E_TEXT = [
    ("string", "hello", "<non-UTF-8 bytes, see below>"),
    ("symbol", "device_01", "device-01"),
    ("integer", "007", "7.0"),
    ("integer", "2147483647", "2147483648"),
    ("number", "-1.25e3", "1,5"),
    ("boolean", "false", "False"),
    ("binary", "aGVsbG8=", "hello"),
    ("timestamp", "2024-05-01T12:00:00+02:00", "2024-05-01T12:00:00"),
    ("duration", "PT15M", "15M"),
    ("uri", "https://example.com/x", "/x"),
    ("urireference", "/x?y=1", "/x y"),
    ("uritemplate", "/x/{y}", "/x y"),
]


@pytest.mark.parametrize(("type_name", "good", "wrong"), E2E_TEXT)
def test_header_types_pass_and_fail(tmp_path: Path, type_name: str, good: str, wrong: str) -> None:
    loaded = _kafka_header_ruleset(tmp_path, type_name)
    assert loaded.errors == []
    assert shape(loaded.judge(_kafka(good))) == ok("g", "m")
    wrong_header: Any = {"base64": b64(b"\xff\xfe")} if type_name == "string" else wrong
    rule = "decode" if type_name == "string" else "type"  # validation rule 5.7: bytes that are not UTF-8
    assert shape(loaded.judge(_kafka(wrong_header))) == bad("g", "m", ("protocoloptions.headers.p", rule))


def test_non_utf8_header_bytes_only_match_binary(tmp_path: Path) -> None:
    raw = {"base64": b64(b"\xff\x00\xfe")}
    for type_name in ("string", "any", "urireference", "symbol"):
        loaded = _kafka_header_ruleset(tmp_path / type_name, type_name)
        verdict = loaded.judge(_kafka(raw))
        # validation rule 5.7: `decode` unless the declared type is binary (`any` included)
        assert shape(verdict) == bad("g", "m", ("protocoloptions.headers.p", "decode")), type_name
    loaded = _kafka_header_ruleset(tmp_path / "binary", "binary")
    assert shape(loaded.judge(_kafka(raw))) == ok("g", "m")


def test_binary_header_value_compares_as_bytes(tmp_path: Path) -> None:
    loaded = _kafka_header_ruleset(tmp_path, "binary", b64(b"\xff\x00\xfe"))
    assert shape(loaded.judge(_kafka({"base64": b64(b"\xff\x00\xfe")}))) == ok("g", "m")
    assert shape(loaded.judge(_kafka({"base64": b64(b"\xff\x00\xfd")}))) == \
        bad("g", "m", ("protocoloptions.headers.p", "value"))


# --- typed form in AMQP application-properties ---------------------------------------------------------


def _amqp_ruleset(tmp_path: Path, type_name: str, value: Any = None) -> Any:
    propdef: dict[str, Any] = {"type": type_name, "required": True}
    if value is not None:
        propdef["value"] = value
    doc = registry("AMQP/1.0", {"m": {"protocol": "AMQP/1.0",
                                      "protocoloptions": {"application-properties": {"p": propdef}}}})
    return load_doc(tmp_path, doc)


def _amqp(value: Any) -> dict[str, Any]:
    return {"protocol": "AMQP/1.0", "properties": {"subject": "s"}, "application-properties": {"p": value}}


E2E_TYPED = [
    ("string", "hello", 5),
    ("symbol", "abc", "a b"),
    ("integer", 5, "5x"),  # AMQP text in canonical form ("5") is an integer too: validation rule 5.7
    ("integer", -(2**31), 2**31),
    ("integer", 7, 7.5),
    ("integer", 1, True),
    ("number", 2.5, "2.5.1"),
    ("number", 3, False),
    ("boolean", True, "yes"),
    ("boolean", False, 0),
    ("binary", {"base64": b64(b"\x00\xff")}, 17),
    ("timestamp", "2024-05-01T12:00:00Z", "2024-05-01T12:00:00"),
    ("duration", "P2D", 2),
    ("uri", "urn:x:y", "x/y"),
    ("urireference", "x/y", 1),
]


@pytest.mark.parametrize(("type_name", "good", "wrong"), E2E_TYPED)
def test_typed_values_pass_and_fail(tmp_path: Path, type_name: str, good: Any, wrong: Any) -> None:
    loaded = _amqp_ruleset(tmp_path, type_name)
    assert shape(loaded.judge(_amqp(good))) == ok("g", "m")
    assert shape(loaded.judge(_amqp(wrong))) == bad("g", "m", ("protocoloptions.application-properties.p", "type"))


# --- 5.4: values compare after reading the header text as the declared type ---------------------------


@pytest.mark.parametrize(("type_name", "value", "equal", "different"), [
    ("integer", 1, ["1", "01", "+1", "0001"], ["2", "-1"]),
    ("number", 1.5, ["1.5", "1.50", "15e-1", "+1.5"], ["1.4"]),
    ("number", 100, ["100", "1e2", "100.0"], ["101"]),
    ("boolean", True, ["true"], ["false"]),
    ("boolean", False, ["false"], ["true"]),
    ("timestamp", "2024-05-01T12:00:00Z", ["2024-05-01T12:00:00Z", "2024-05-01T14:00:00+02:00",
                                          "2024-05-01T12:00:00.000Z"], ["2024-05-01T12:00:01Z"]),
    ("string", "1", ["1"], ["01", "1.0"]),
])
def test_value_compares_as_declared_type(tmp_path: Path, type_name: str, value: Any, equal: list[str],
                                         different: list[str]) -> None:
    loaded = _kafka_header_ruleset(tmp_path, type_name, value)
    for text in equal:
        assert shape(loaded.judge(_kafka(text))) == ok("g", "m"), text
    for text in different:
        assert shape(loaded.judge(_kafka(text))) == bad("g", "m", ("protocoloptions.headers.p", "value")), text


def test_value_given_as_text_in_the_document_compares_as_type(tmp_path: Path) -> None:
    # `"value": "1"` with `type: integer` and a header "01": both read as the integer 1
    loaded = _kafka_header_ruleset(tmp_path, "integer", "1")
    assert shape(loaded.judge(_kafka("01"))) == ok("g", "m")


def test_type_failure_is_reported_before_value(tmp_path: Path) -> None:
    loaded = _kafka_header_ruleset(tmp_path, "integer", 1)
    assert shape(loaded.judge(_kafka("one"))) == bad("g", "m", ("protocoloptions.headers.p", "type"))


def test_typed_value_matches_typed_field(tmp_path: Path) -> None:
    loaded = _amqp_ruleset(tmp_path, "integer", 5)
    assert shape(loaded.judge(_amqp(5))) == ok("g", "m")
    assert shape(loaded.judge(_amqp(6))) == bad("g", "m", ("protocoloptions.application-properties.p", "value"))


def test_value_without_type_implies_the_json_type(tmp_path: Path) -> None:
    # silent point (assumed): a header declared `{"value": 5}` without a type is read as an integer
    doc = registry("KAFKA", {"m": {"protocol": "KAFKA", "protocoloptions": {"headers": {"p": {"value": 5}}}}})
    loaded = load_doc(tmp_path, doc)
    assert shape(loaded.judge(_kafka("5"))) == ok("g", "m")
    assert shape(loaded.judge(_kafka("005"))) == ok("g", "m")
    assert shape(loaded.judge(_kafka("6"))) == bad("g", "m", ("protocoloptions.headers.p", "value"))
