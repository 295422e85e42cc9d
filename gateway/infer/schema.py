"""A JSON Schema (draft 2020-12) that every sample fits: what `xgate infer` proposes for a payload.

Written here rather than taken from a library: genson (PyPI), the schema
generator we looked at, deals by its own documentation only with type,
items, properties, patternProperties, required and anyOf; enums and formats
would be strategies of ours on top of it, while the whole walk is short. Every keyword below is one
the samples prove (types seen, members present in every sample, a small
closed set of strings seen again and again, a format every value fits);
nothing is guessed beyond them, so the draft accepts what it was made from.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

DIALECT = "https://json-schema.org/draft/2020-12/schema"
# a string member becomes an enum when it took at most this many values, each seen this often on average
ENUM_MAX_VALUES = 8
ENUM_MIN_REPEATS = 4
_UUID = re.compile(r"\A[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
_DATE_TIME = re.compile(r"\A\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})\Z")


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def infer_schema(samples: Sequence[Any]) -> dict[str, Any]:
    """The draft 2020-12 schema of `samples` (at least one), with its dialect named."""
    return {"$schema": DIALECT, **_infer(samples)}


def _infer(values: Sequence[Any]) -> dict[str, Any]:
    kinds = {json_type(value) for value in values}
    if kinds == {"integer", "number"}:
        kinds = {"number"}
    if len(kinds) > 1:
        return {"type": sorted(kinds)}  # mixed: the types alone, each as loose as the samples need
    kind = kinds.pop()
    if kind == "object":
        return _object(values)
    if kind == "array":
        items = [item for value in values for item in value]
        return {"type": "array", **({"items": _infer(items)} if items else {})}
    if kind == "string":
        return _string(values)
    return {"type": kind}


def _object(values: Sequence[dict[str, Any]]) -> dict[str, Any]:
    members: dict[str, list[Any]] = {}
    for value in values:
        for name, member in value.items():
            members.setdefault(name, []).append(member)
    required = [name for name, seen in members.items() if len(seen) == len(values)]
    schema: dict[str, Any] = {"type": "object", "properties": {name: _infer(seen) for name, seen in members.items()}}
    if required:
        schema["required"] = required
    return schema


def _string(values: Sequence[str]) -> dict[str, Any]:
    if all(_UUID.match(value) for value in values):
        return {"type": "string", "format": "uuid"}
    if all(_is_date_time(value) for value in values):
        return {"type": "string", "format": "date-time"}
    distinct = sorted(set(values))
    if len(distinct) <= ENUM_MAX_VALUES and len(values) >= ENUM_MIN_REPEATS * len(distinct):
        return {"type": "string", "enum": distinct}
    return {"type": "string"}


def _is_date_time(value: str) -> bool:
    if not _DATE_TIME.match(value):
        return False
    try:
        datetime.fromisoformat(value)  # 3.11 reads Z
    except ValueError:
        return False
    return True
