"""The payload validator contract and the helpers every format shares (the formats import this module; it
imports none of them: `compile.py` is where a format is chosen).

A validator is compiled once per schema (load time, may raise
SchemaCompileError) and then called per message. On the per-message path it
never raises and allocates nothing when the payload is valid: it returns None.
Only a failure builds Violations (validation rule 6).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from gateway import jsontext, pointers
from gateway.limits import nesting_violation
from gateway.verdict import Rule, Violation, truncate

# A payload can fail in many places; a verdict stays readable with the first few.
MAX_VIOLATIONS = 10
PATH_PREFIX = "dataschema:"

Violations = tuple[Violation, ...]


class PayloadValidator(Protocol):
    """Judges one payload against one compiled schema; None means valid."""

    kind: str

    def check_bytes(self, body: bytes, content_type: str | None) -> Violations | None:
        """A raw body (binary-mode message); `content_type` picks binary vs JSON encodings."""
        ...

    def check_value(self, value: object) -> Violations | None:
        """An already-parsed JSON value (the `data` member of a structured CloudEvent)."""
        ...


def json_pointer(parts: list[str | int] | tuple[str | int, ...]) -> str:
    """RFC 6901 pointer for a sequence of keys and indices ("" for the root)."""
    return pointers.pointer(parts)


def schema_violation(pointer: str, expected: object, actual: object, message: str) -> Violation:
    """The payload parsed but breaks the schema at `pointer` (a JSON pointer or XML path)."""
    return Violation(PATH_PREFIX + pointer, Rule.SCHEMA, expected, truncate(actual), message)


def decode_violation(expected: str, actual: object, message: str) -> Violation:
    """The payload cannot be read as the format requires."""
    return Violation(PATH_PREFIX, Rule.DECODE, expected, truncate(actual), one_line(message))


def media_type(content_type: str | None) -> str:
    """`Application/JSON; charset=utf-8` -> `application/json`."""
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


def is_json_media_type(content_type: str | None) -> bool:
    """JSON content types select the JSON encodings of Avro and Protobuf."""
    mt = media_type(content_type)
    return mt in ("application/json", "text/json") or mt.endswith("+json")


def one_line(text: object, limit: int = 300) -> str:
    """Library messages can span lines; a violation message is one line."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def check_json_body(body: bytes, check_value: Callable[[object], Violations | None]) -> Violations | None:
    """A JSON body judged by a validator's `check_value` (Avro JSON encoding, Protobuf JSON mapping)."""
    value, problem = load_json_payload(body)
    if problem is not None:
        return (problem,)
    return check_value(value)


def load_json_payload(body: bytes, unique: bool = True) -> tuple[object, Violation | None]:
    """A JSON body parsed for a validator, or the `decode` (not JSON, or a member named twice: docs/validation.md
    5.7) or `limit` (nested too deep) violation."""
    try:
        return jsontext.loads(body, unique), None
    except jsontext.TooDeep:
        return None, nesting_violation(PATH_PREFIX, "the payload")
    except jsontext.DuplicateMember as exc:
        return None, decode_violation("valid JSON with unique member names", body,
                                      f"payload names a member twice ({exc})")
    except jsontext.OutOfRange as exc:
        return None, decode_violation("valid JSON", body, f"payload is not valid JSON: {exc}")
    except ValueError:  # no parser's wording: the Python and native judges must say the same
        return None, decode_violation("valid JSON", body, "payload is not valid JSON")
