"""JSON text read the same way everywhere a message carries it: fast, complete, one reading, never too deep.

orjson reads nearly everything, several times faster than json; what it refuses is read again by json,
which decides and explains (orjson refuses a few documents json accepts, such as integers beyond 64 bits;
json's NaN and Infinity are refused as orjson refuses them, and so is a number beyond the range of an IEEE 754
double, such as 1e400, which json would read as infinity: numbers are read as doubles, so 150.0000000000000001
is 150.0, and a number no double holds is refused as out of range rather than judged as something else).
A value nested deeper than gateway/limits.py's MAX_NESTING is refused whatever reads it: json's parser
recurses once per level (past orjson's own limit of 1024 it would exhaust the stack), and so do the
validators the value goes on to.

Duplicate member names (validation rule 5.7) are refused when `unique` is set: orjson and msgspec
keep the last value silently, so the text is checked beside the value. Every `:` outside a string
follows a member name, and orjson writes one `:` per member plus the colons inside strings (it escapes no
colon). Without a `\\u` escape in the text (the only way to write a colon that is not a colon), equal colon
counts in the text and in orjson's rewrite of the value mean every member of the text survived: no
duplicate. Any other case is decided exactly by json with a pairs hook (rare: `\\u` escapes or duplicates).
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

from gateway.errors import GatewayError
from gateway.limits import MAX_NESTING, json_too_deep, nesting_exceeds


class TooDeep(GatewayError, ValueError):
    """JSON nested deeper than MAX_NESTING levels."""


class DuplicateMember(GatewayError, ValueError):
    """An object of the JSON text names one member twice (validation rule 5.7)."""


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON (RFC 8259 has no NaN or Infinity)")


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise DuplicateMember(f"member {name!r} appears twice in one object")
            seen.add(name)
    return found


class OutOfRange(GatewayError, ValueError):
    """A number beyond the range of an IEEE 754 double (a verdict names it: docs/decisions.md)."""


def _double(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise OutOfRange(f"the number {text[:40]} is out of range (JSON numbers are read as IEEE 754 doubles, "
                         "at most about 1.8e308)")
    return value


def loads(raw: bytes | str, unique: bool = False) -> Any:
    """The value of JSON text; ValueError when it is not JSON (UnicodeDecodeError included), TooDeep when it
    nests too deep, DuplicateMember (with `unique`) when an object names a member twice."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            value = json.loads(raw, parse_constant=_not_json, parse_float=_double,
                               object_pairs_hook=_unique_pairs if unique else None)
        except RecursionError:
            raise TooDeep(f"nested deeper than {MAX_NESTING} levels") from None
        if json_too_deep(raw, value):
            raise TooDeep(f"nested deeper than {MAX_NESTING} levels")
        return value  # json with the hook has already refused duplicates
    if raw.__class__ is bytes:
        # one C pass keeps only the bytes both guards count: brackets, colons, backslashes
        marks = raw.translate(None, _NOT_MARKS) if len(raw) > MAX_NESTING else raw
        if len(raw) > MAX_NESTING and marks.count(b"{") + marks.count(b"[") > MAX_NESTING and \
                nesting_exceeds(value):
            raise TooDeep(f"nested deeper than {MAX_NESTING} levels")
        if unique and value.__class__ in (dict, list) and \
                (marks.count(b":") != orjson.dumps(value).count(b":") or b"\\" in marks and b"\\u" in raw) and \
                _exact_duplicate(raw):
            raise DuplicateMember(duplicate_name(raw))
        return value
    if json_too_deep(raw, value):
        raise TooDeep(f"nested deeper than {MAX_NESTING} levels")
    if unique and value.__class__ in (dict, list) and has_duplicate_members(raw, value):
        raise DuplicateMember(duplicate_name(raw))
    return value


# every byte but `{ [ : \`: deleted by bytes.translate, so that one pass leaves what the guards count
_NOT_MARKS = bytes(b for b in range(256) if b not in b"{[:\\")


def _exact_duplicate(raw: bytes | str) -> bool:
    try:
        json.loads(raw, object_pairs_hook=_unique_pairs)
    except DuplicateMember:
        return True
    return False


def has_duplicate_members(raw: bytes | str, value: Any) -> bool:
    """Whether the JSON text `raw`, which orjson read as `value`, names a member twice in one object."""
    if raw.__class__ is str:
        if raw.count(":") == orjson.dumps(value).count(b":") and "\\u" not in raw:
            return False
    elif raw.count(b":") == orjson.dumps(value).count(b":") and b"\\u" not in raw:  # type: ignore[arg-type]
        return False
    return _exact_duplicate(raw)


def duplicate_name(raw: bytes | str) -> str:
    """The message naming the first duplicate member of `raw` (known to have one)."""
    try:
        json.loads(raw, object_pairs_hook=_unique_pairs)
    except DuplicateMember as exc:
        return str(exc)
    return "a member appears twice in one object"
