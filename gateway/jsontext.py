"""JSON text read the same way everywhere a message carries it: fast, complete, and never too deep.

orjson reads nearly everything, several times faster than json; what it refuses is read again by json,
which decides and explains (orjson refuses a few documents json accepts, such as integers beyond 64 bits;
json's NaN and Infinity are refused as orjson refuses them, and so is a number beyond the range of an IEEE 754
double, such as 1e400, which json would read as infinity: numbers are read as doubles, so 150.0000000000000001
is 150.0, and a number no double holds is refused as out of range rather than judged as something else).
A value nested deeper than gateway/limits.py's MAX_NESTING is refused whatever reads it: json's parser
recurses once per level (past orjson's own limit of 1024 it would exhaust the stack), and so do the
validators the value goes on to.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

from gateway.limits import MAX_NESTING, json_too_deep


class TooDeep(ValueError):
    """JSON nested deeper than MAX_NESTING levels."""


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON (RFC 8259 has no NaN or Infinity)")


def _double(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:40]} is out of range (JSON numbers are read as IEEE 754 doubles, "
                         "at most about 1.8e308)")
    return value


def loads(raw: bytes | str) -> Any:
    """The value of JSON text; ValueError when it is not JSON (UnicodeDecodeError included), TooDeep when it
    nests too deep."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            value = json.loads(raw, parse_constant=_not_json, parse_float=_double)
        except RecursionError:
            raise TooDeep(f"nested deeper than {MAX_NESTING} levels") from None
    if json_too_deep(raw, value):
        raise TooDeep(f"nested deeper than {MAX_NESTING} levels")
    return value
