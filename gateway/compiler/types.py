"""Property types of validation rule 5.3, checked on typed (JSON) or text (header) values.

Each checker is a plain function `(value, text) -> bool`; `text` says the
value arrived as a header string and is judged in its canonical string form.
`coerce` reads a value as its declared type so that `"1"` equals 1.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_SYMBOL = re.compile(r"[A-Za-z0-9_]+")
_TIMESTAMP = re.compile(
    r"(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})[Tt](?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2})(?P<frac>\.[0-9]+)?"
    r"(?P<offset>[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])")
_DURATION = re.compile(
    r"P(?!$)(?:[0-9]+(?:[.,][0-9]+)?Y)?(?:[0-9]+(?:[.,][0-9]+)?M)?(?:[0-9]+(?:[.,][0-9]+)?W)?"
    r"(?:[0-9]+(?:[.,][0-9]+)?D)?(?:T(?=[0-9])(?:[0-9]+(?:[.,][0-9]+)?H)?(?:[0-9]+(?:[.,][0-9]+)?M)?"
    r"(?:[0-9]+(?:[.,][0-9]+)?S)?)?")
# one character class, with `%` in it: a percent sign not followed by two hex digits is caught by _BAD_PERCENT
# (a single repeated class runs several times faster in `re` than an alternation per character)
_URI_CHARS = r"A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%"
_URI_REFERENCE = re.compile(rf"[{_URI_CHARS}]*")
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_URI = re.compile(rf"[A-Za-z][A-Za-z0-9+.\-]*:[{_URI_CHARS}]*")
_URI_TEMPLATE = re.compile(r"(?:[^{}\s]|\{[A-Za-z0-9_.%,*:]+\})*")
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")

STRING_LIKE = frozenset({"string", "symbol", "uri", "urireference", "uritemplate"})
ANY_TIMESTAMPS = frozenset({"0000-01-01T00:00:00Z", "01-01-0000T00:00:00Z"})
KNOWN_TYPES = frozenset({"string", "symbol", "integer", "number", "boolean", "binary", "timestamp", "duration",
                         "uri", "urireference", "uritemplate", "any", "var", "map", "object", "array"})

# spellings seen in documents
TYPE_ALIASES = {"uri-reference": "urireference", "uri-template": "uritemplate", "int": "integer",
                "bool": "boolean", "double": "number", "float": "number", "long": "integer",
                "datetime": "timestamp", "date-time": "timestamp", "bytes": "binary", "str": "string"}


def canonical_type(name: str | None) -> str | None:
    if name is None:
        return None
    lowered = name.strip().lower()
    return TYPE_ALIASES.get(lowered, lowered)


# the common spelling (upper-case T and Z, at most 6 fraction digits), which fromisoformat reads as it stands;
# offsets within RFC 3339's 00:00-23:59 (fromisoformat alone would read `+05:75` as `+06:15`)
_PLAIN_TIMESTAMP = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])")


def parse_timestamp(text: str) -> datetime | None:
    if _PLAIN_TIMESTAMP.fullmatch(text) is not None:
        try:
            return datetime.fromisoformat(text)
        except ValueError:  # out of range: month 13, February 30, hour 24
            return None
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        return None
    offset = match["offset"].upper().replace("Z", "+00:00")
    frac = (match["frac"] or "")[:7].ljust(7, "0") if match["frac"] else ""
    try:
        return datetime.fromisoformat(f"{match['date']}T{match['time']}{frac}{offset}")
    except ValueError:
        return None


def _is_int(value: Any, text: bool) -> bool:
    if text:
        if not isinstance(value, str) or _INT_TEXT.fullmatch(value) is None:
            return False
        # the range has 10 digits: longer text (leading zeros aside) is out of it, and int() refuses 4301 digits
        digits = value.lstrip("+-").lstrip("0")
        return len(digits) <= 10 and INT_MIN <= (-1 if value[0] == "-" else 1) * int(digits or "0") <= INT_MAX
    return isinstance(value, int) and not isinstance(value, bool) and INT_MIN <= value <= INT_MAX


def _is_number(value: Any, text: bool) -> bool:
    if text:
        return isinstance(value, str) and _NUMBER_TEXT.fullmatch(value) is not None
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_bool(value: Any, text: bool) -> bool:
    return value in ("true", "false") if text else isinstance(value, bool)


def _is_binary(value: Any, text: bool) -> bool:
    if isinstance(value, (bytes, bytearray)):
        return True
    if not isinstance(value, str) or len(value) % 4 != 0 or _BASE64.fullmatch(value) is None:
        return False
    try:
        base64.b64decode(value, validate=True)
        return True
    except (binascii.Error, ValueError):
        return False


def _is_string(value: Any, text: bool) -> bool:
    return isinstance(value, str)


def _is_symbol(value: Any, text: bool) -> bool:
    return isinstance(value, str) and _SYMBOL.fullmatch(value) is not None


def _is_timestamp(value: Any, text: bool) -> bool:
    return isinstance(value, str) and parse_timestamp(value) is not None


def _is_duration(value: Any, text: bool) -> bool:
    return isinstance(value, str) and _DURATION.fullmatch(value) is not None


def _percent_ok(value: str) -> bool:
    return "%" not in value or _BAD_PERCENT.search(value) is None


def _is_uri(value: Any, text: bool) -> bool:
    return isinstance(value, str) and _URI.fullmatch(value) is not None and _percent_ok(value)


def _is_urireference(value: Any, text: bool) -> bool:
    return isinstance(value, str) and _URI_REFERENCE.fullmatch(value) is not None and _percent_ok(value)


def _is_uritemplate(value: Any, text: bool) -> bool:
    # a message carries the expanded value; a template-shaped text is tolerated as well
    return isinstance(value, str) and (_is_urireference(value, text) or _URI_TEMPLATE.fullmatch(value) is not None)


def _is_any(value: Any, text: bool) -> bool:
    return True


def _is_map(value: Any, text: bool) -> bool:
    return isinstance(value, dict)


def _is_array(value: Any, text: bool) -> bool:
    return isinstance(value, list)


CHECKERS: dict[str, Callable[[Any, bool], bool]] = {
    "string": _is_string, "symbol": _is_symbol, "integer": _is_int, "number": _is_number, "boolean": _is_bool,
    "binary": _is_binary, "timestamp": _is_timestamp, "duration": _is_duration, "uri": _is_uri,
    "urireference": _is_urireference, "uritemplate": _is_uritemplate, "any": _is_any, "var": _is_any,
    "map": _is_map, "object": _is_map, "array": _is_array,
}


def checker(type_name: str) -> Callable[[Any, bool], bool]:
    return CHECKERS.get(type_name, _is_string)


def infer_type(value: Any) -> str:
    """The type a declared `value` implies when no `type` is written."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if value is None:
        return "any"
    if isinstance(value, (dict, list)):
        return "any"
    return "string"


def coerce(value: Any, type_name: str, text: bool) -> Any:
    """Read a (possibly text) value as `type_name` for comparison; returns a sentinel-free best effort."""
    if type_name == "integer" or type_name == "number":
        if isinstance(value, str):
            try:
                number = float(value)
                return int(number) if number.is_integer() else number
            except ValueError:
                return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value
    if type_name == "boolean":
        if isinstance(value, str):
            return {"true": True, "false": False}.get(value, value)
        return value
    if type_name == "timestamp" and isinstance(value, str):
        parsed = parse_timestamp(value)
        return parsed if parsed is not None else value
    if type_name == "binary":
        if isinstance(value, (bytes, bytearray)):
            return bytes(value)
        if isinstance(value, str):
            try:
                return base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                return value
    if type_name in ("any", "var", "map", "object", "array"):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)) and type_name in STRING_LIKE:
        return str(value)
    return value
