"""A written entity's attribute values against the model's types (core/model.md "Attribute Types"), so that a bad
value is refused as the spec's `invalid_attribute` naming the attribute, before the documents are loaded.

Only what the model types settle is checked here: JSON kinds (`string`, `boolean`, `integer`, `uinteger`,
`decimal`, `map`, `array`, `object`), `timestamp` (RFC 3339), and the URI kinds as strings. What a value means
(a `format` xgate does not know, a `dataschemauri` that resolves nowhere) is the loader's to report, as for a
dropped file. `any` and extension attributes (`*`) take any value; null is "delete" or "default" and is left
to the write's own rules.
"""

from __future__ import annotations

from typing import Any

from gateway.compiler.types import parse_timestamp
from gateway.registry_api.errors import ApiError

_KIND = {"string": "a string", "url": "a URL (string)", "uri": "a URI (string)", "uri-reference":
         "a URI reference (string)", "uri-template": "a URI template (string)", "xid": "an xid (string)",
         "boolean": "a boolean", "integer": "an integer", "uinteger": "an integer of zero or more",
         "decimal": "a number", "timestamp": "an RFC 3339 timestamp", "map": "a JSON object",
         "object": "a JSON object", "array": "a JSON array"}


def check_attributes(body: dict[str, Any], model: dict[str, Any], subject: str, skip: frozenset[str] | set[str]) -> None:
    """Each non-null attribute of `body` not in `skip` against its definition in `model` (name -> definition)."""
    for name, value in body.items():
        if value is None or name in skip:
            continue
        definition = model.get(name)
        if definition is not None:
            problem = _problem(value, definition, name)
            if problem is not None:
                path, expected, found = problem
                detail = f"{path} must be {expected}, found {_shown(found)}"
                raise ApiError(400, "invalid_attribute", f'The attribute "{name}" for "{subject}" is not valid: '
                               f"{detail}.", subject, {"name": name, "error_detail": detail})


def _problem(value: Any, definition: dict[str, Any], path: str) -> tuple[str, str, Any] | None:
    """(where, what it must be, what it is) for the first value that breaks `definition`, or None."""
    kind = definition.get("type", "any")
    if kind == "any" or value is None:
        return None
    if not _is(value, kind):
        return path, _KIND.get(kind, kind), value
    enum = definition.get("enum")
    if enum and definition.get("strict", True) and value not in enum:
        return path, "one of " + ", ".join(map(str, enum)), value
    item = definition.get("item")
    if kind == "map" and item:
        for key, member in value.items():
            found = _problem(member, item, f"{path}.{key}")
            if found is not None:
                return found
    elif kind == "array" and item:
        for index, member in enumerate(value):
            found = _problem(member, item, f"{path}[{index}]")
            if found is not None:
                return found
    elif kind == "object":
        attributes = definition.get("attributes", {})
        for key, member in value.items():
            inner = attributes.get(key) or attributes.get("*")
            found = _problem(member, inner, f"{path}.{key}") if inner is not None else None
            if found is not None:
                return found
    return None


def _is(value: Any, kind: str) -> bool:
    if kind in ("string", "url", "uri", "uri-reference", "uri-template", "xid"):
        return isinstance(value, str)
    if kind == "timestamp":
        return isinstance(value, str) and parse_timestamp(value) is not None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind in ("integer", "uinteger"):
        return isinstance(value, int) and not isinstance(value, bool) and (kind == "integer" or value >= 0)
    if kind == "decimal":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind in ("map", "object"):
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    return True  # a type this model does not use


def _shown(value: Any) -> str:
    """The offending value as JSON-ish text, short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
