"""JSON text read the same way everywhere a message carries it: fast, complete, and never too deep.

orjson reads nearly everything, several times faster than json; what it refuses is read again by json,
which decides and explains (orjson refuses a few documents json accepts, such as integers beyond 64 bits;
json's NaN and Infinity are refused as orjson refuses them).
A value nested deeper than gateway/limits.py's MAX_NESTING is refused whatever reads it: json's parser
recurses once per level (past orjson's own limit of 1024 it would exhaust the stack), and so do the
validators the value goes on to.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from gateway.limits import MAX_NESTING, json_too_deep


class TooDeep(ValueError):
    """JSON nested deeper than MAX_NESTING levels."""


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON (RFC 8259 has no NaN or Infinity)")


def loads(raw: bytes | str) -> Any:
    """The value of JSON text; ValueError when it is not JSON (UnicodeDecodeError included), TooDeep when it
    nests too deep."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            value = json.loads(raw, parse_constant=_not_json)
        except RecursionError:
            raise TooDeep(f"nested deeper than {MAX_NESTING} levels") from None
    if json_too_deep(raw, value):
        raise TooDeep(f"nested deeper than {MAX_NESTING} levels")
    return value
