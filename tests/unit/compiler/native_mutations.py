"""Mutations aimed at what the native accepting pass relies on (gateway/compiler/native_event.py and
payload/native.py): patterns, number bounds and integer forms, optional members as null, duplicate and
unknown members, member order (the `type` tag anywhere), nesting, escapes, string lengths in code points.

Each takes a conformant record and a seeded Random and returns a changed record (None when it does not
apply); they join tests/unit/compiler/mutations.py's in the differential test.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from typing import Any

from tests.unit.compiler.mutations import Mutation, Record, _data_change, structured


def _with_parsed_body(record: Record) -> tuple[Record, Any] | None:
    """A copy of the record to mutate, and its body's JSON value; None when the body is no JSON text."""
    if not isinstance(record.get("body"), str):
        return None
    out = copy.deepcopy(record)
    try:
        return out, json.loads(out["body"])
    except ValueError:
        return None


def _payload_text(change: Callable[[Any, random.Random], str | None]) -> Mutation:
    """The payload's JSON text replaced: the `data` member of a structured event, or the binary body."""
    def mutate(record: Record, rng: random.Random) -> Record | None:
        copied = _with_parsed_body(record)
        if copied is None:
            return None
        out, parsed = copied
        if structured(record):
            if not isinstance(parsed, dict) or "data" not in parsed:
                return None
            text = change(parsed["data"], rng)
            if text is None:
                return None
            rest = {k: v for k, v in parsed.items() if k != "data"}
            out["body"] = json.dumps(rest)[:-1] + ', "data": ' + text + "}"
        else:
            text = change(parsed, rng)
            if text is None:
                return None
            out["body"] = text
        return out
    return mutate


def _strings(data: dict[str, Any]) -> list[str]:
    return [k for k, v in data.items() if isinstance(v, str)]


def _pattern_edge(data: dict[str, Any], rng: random.Random) -> bool:
    names = _strings(data)
    if isinstance(data.get("tags"), list) and data["tags"] and rng.random() < 0.4:
        tags = data["tags"]
        tags[rng.randrange(len(tags))] = rng.choice(["", "a\n", "Night", "night-", "-night", "nï", "a b", "n1"])
        return True
    if not names:
        return False
    name = rng.choice(names)
    value = data[name]
    data[name] = rng.choice([value + "\n", "\n" + value, value.lower(), value[:-1] + "\u0661", value + "0",
                             value[:-1], value.replace("-", "_"), value + "\u0000", "x" + value])
    return True


def _integer_forms(data: dict[str, Any], rng: random.Random) -> bool:
    value = data.get("count")
    if not isinstance(value, int):
        return False
    data["count"] = rng.choice([float(value), 5.0, -0.0, 0, 100000.0, 100000, 100001, -1, 2**63, 2**64 + 1,
                                10**30, 1e2, True, "5", None])
    return True


def _number_edges(data: dict[str, Any], rng: random.Random) -> bool:
    numbers = [k for k, v in data.items() if isinstance(v, float)]
    if not numbers:
        return False
    name = rng.choice(numbers)
    value = data[name]
    data[name] = rng.choice([value + 1e-12, value - 1e-12, 1e308, -1e308, 2**53 + 1, -(2**53) - 1, 10**20,
                             int(value), 0, -0.0, 5e-324, 1.7976931348623157e308, 4999.999999999999,
                             500.00000000000006, 240.0, 20.0, -50.0])
    return True


def _optional_null(data: dict[str, Any], rng: random.Random) -> bool:
    name = rng.choice([k for k in ("ratio", "tags", "note", "flagged", "label", "count") if k in data] or ["x"])
    if name == "x":
        return False
    data[name] = None
    return True


def _string_length(data: dict[str, Any], rng: random.Random) -> bool:
    name = rng.choice([k for k in ("label", "note") if k in data] or ["x"])
    if name == "x":
        return False
    limit = 80 if name == "label" else 400
    filler = rng.choice(["a", "é", "\U0001F600", "e\u0301", "\u4e2d"])
    data[name] = filler * rng.choice([limit, limit + 1, limit - 1, limit // len(filler)])
    return True


def _array_items(data: dict[str, Any], rng: random.Random) -> bool:
    name = rng.choice([k for k, v in data.items() if isinstance(v, list)] or ["x"])
    if name == "x":
        return False
    items = data[name]
    change = rng.randrange(4)
    if change == 0 and items:
        items[rng.randrange(len(items))] = rng.choice(["1", None, True, [1], {"a": 1}, 1, 1.5])
    elif change == 1:
        items.extend(items[:1] * rng.randint(1, 30))
    elif change == 2:
        data[name] = []
    else:
        data[name] = {"0": items}
    return True


def _reorder(record: Record, rng: random.Random) -> Record | None:
    """Members in another order: the `type` tag last, `data` first, nested members shuffled."""
    copied = _with_parsed_body(record)
    if copied is None:
        return None
    out, parsed = copied
    if not isinstance(parsed, dict):
        return None

    def shuffle(value: Any) -> Any:
        if isinstance(value, dict):
            items = [(k, shuffle(v)) for k, v in value.items()]
            rng.shuffle(items)
            return dict(items)
        return value

    out["body"] = json.dumps(shuffle(parsed), indent=rng.choice([None, 1, 2]),
                             separators=rng.choice([(",", ":"), (", ", ": "), (" ,", " : ")]))
    return out


def _dup_nested(data: Any, rng: random.Random) -> str | None:
    if not isinstance(data, dict) or not isinstance(data.get("location"), dict):
        return None
    location = data["location"]
    name = rng.choice(list(location))
    spelled = rng.choice([json.dumps(name), '"' + "".join(f"\\u{ord(c):04x}" for c in name) + '"'])
    inner = json.dumps(location)[:-1] + ", " + spelled + ": " + json.dumps(rng.choice([location[name], 1000, 0])) + "}"
    rest = {k: v for k, v in data.items() if k != "location"}
    return json.dumps(rest)[:-1] + ', "location": ' + inner + "}"


def _escaped_values(data: Any, rng: random.Random) -> str | None:
    """Ordinary characters written as `\\u` escapes (the duplicate guard's blind spot) and escaped colons."""
    if not isinstance(data, dict):
        return None
    text = json.dumps(data)
    chars = rng.choice(["V", "-", "0", ":", "a", "e"])
    return text.replace(chars, f"\\u{ord(chars):04x}", rng.randint(1, 3))


def _deep(data: Any, rng: random.Random) -> str | None:
    if not isinstance(data, dict):
        return None
    depth = rng.choice([5, 60, 127, 128, 129, 300])
    inner = "[" * depth + "]" * depth
    target = rng.choice(["samples", "extra", "tags"])
    rest = {k: v for k, v in data.items() if k != target}
    return json.dumps(rest)[:-1] + f', "{target}": ' + inner + "}"


def _unknown_attribute(record: Record, rng: random.Random) -> Record | None:
    if not structured(record) or not isinstance(record.get("body"), str):
        return None
    out = copy.deepcopy(record)
    event = json.loads(out["body"])
    name = rng.choice(["traceparent", "partitionkey", "data_base64", "Type", "typ", "time2", "datacontenttype"])
    event[name] = rng.choice(["x", "", "00-abc-01", "aGk=", 5, None, {"a": 1}])
    if name == "data_base64" and rng.random() < 0.5:
        event.pop("data", None)
    out["body"] = json.dumps(event)
    return out


def _core_attribute(record: Record, rng: random.Random) -> Record | None:
    """Core attributes a definition may leave undeclared, present or absent, with odd values."""
    if not structured(record) or not isinstance(record.get("body"), str):
        return None
    out = copy.deepcopy(record)
    event = json.loads(out["body"])
    name = rng.choice(["subject", "dataschema", "datacontenttype", "time"])
    if rng.random() < 0.3:
        event.pop(name, None)
    else:
        event[name] = rng.choice(["", "x", 5, "https://x.example/y", "text/plain", "2026-03-01T10:00:00Z",
                                  "2026-03-01T10:00:00.000+00:00", "application/json;charset=utf-8"])
    out["body"] = json.dumps(event)
    return out


def _framing(record: Record, rng: random.Random) -> Record | None:
    """The same JSON with a BOM, surrounding whitespace, or trailing bytes."""
    if not isinstance(record.get("body"), str):
        return None
    out = copy.deepcopy(record)
    body = out["body"]
    out["body"] = rng.choice(["\ufeff" + body, " \n\t" + body + " \r\n", body + "\u0000", body + " {}",
                              body + "\n\n"])
    return out


NATIVE_MUTATIONS: dict[str, Mutation] = {
    "pattern-edge": _data_change(_pattern_edge),
    "integer-forms": _data_change(_integer_forms),
    "number-edges": _data_change(_number_edges),
    "optional-null": _data_change(_optional_null),
    "string-length": _data_change(_string_length),
    "array-items": _data_change(_array_items),
    "reorder-members": _reorder,
    "duplicate-nested": _payload_text(_dup_nested),
    "escaped-values": _payload_text(_escaped_values),
    "deep-nesting": _payload_text(_deep),
    "unknown-attribute": _unknown_attribute,
    "core-attribute": _core_attribute,
    "framing": _framing,
}
