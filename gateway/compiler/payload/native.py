"""A JSON Schema as a msgspec type, where it maps soundly: decoding with that type validates in the same pass.

The accepting pass (gateway/compiler/accepting.py) decodes a payload with `native_type(schema)` instead of
parsing it and then running jsonschema-rs. That is sound only when whatever the decode accepts, the schema
accepts too; a decode that fails proves nothing (the full judge decides). So a schema maps only when every
keyword of it is in the small set below, and each keyword maps to a check that is never more lenient:

- `type` (one name): string -> str, integer -> int within int64 (msgspec refuses 5.0, which the schema
  allows: incomplete, never unsound), number -> float (msgspec reads an integer as a float; bounds map only
  below 2**53 in magnitude, where the rounding of a large integer cannot cross one), boolean ->
  bool, object -> a Struct that refuses unknown members whatever `additionalProperties` says (then nesting
  is bounded by the schema's own depth and every member is checked), array -> list of its `items`.
- `properties`/`required`: required members have no default; the others default to UNSET (absent), so a
  null member is refused, as `type` refuses it.
- `minimum`/`maximum`/`minLength`/`maxLength`/`minItems`/`maxItems` -> Meta bounds (msgspec counts code
  points, as JSON Schema does); `enum` of strings -> Literal of the members that pass the node's other
  keywords (jsonschema-rs itself decides which, once, at compile time).
- `pattern`: searched after the decode (`NativeSchema.check`) by jsonschema-rs on the Rust `regex` crate,
  with the options the full judge uses (payload/jsonschema.py): the same answers by construction, in time
  linear in the text. Never by Python's `re`, which backtracks: `^(a+)+$` against forty `a`s and a `b`
  would hold the event loop for hours, and an unanchored `[a-z]+@[a-z]+` takes quadratic time in a long
  string (issue 35). Nor by msgspec's `Meta(pattern=...)`, which is Python's `re` too.
- annotations (`title`, `description`, `format`, which xgate never asserts, ...) are ignored.

Anything else (`$ref`, `oneOf`, `const`, `exclusiveMinimum`, a list of types, ...) does not map.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from operator import attrgetter
from typing import Annotated, Any, Literal, NamedTuple, cast

import jsonschema_rs
import msgspec

from gateway.errors import GatewayError

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_EXACT_FLOAT = 2**53  # integers up to this magnitude are exact doubles
_ANNOTATIONS = frozenset({"title", "description", "$schema", "$id", "$comment", "default", "examples", "format",
                          "definitions", "$defs", "readOnly", "writeOnly", "deprecated"})
_KEYWORDS = {
    "string": frozenset({"type", "minLength", "maxLength", "pattern", "enum"}),
    "integer": frozenset({"type", "minimum", "maximum"}),
    "number": frozenset({"type", "minimum", "maximum"}),
    "boolean": frozenset({"type"}),
    "object": frozenset({"type", "properties", "required", "additionalProperties"}),
    "array": frozenset({"type", "items", "minItems", "maxItems"}),
}


class _Unmapped(GatewayError):
    """The schema (or a part of it) has no sound msgspec form."""


Check = Callable[[Any], Any]  # truthy when the value passes
_MAX_DEPTH = 64  # far below the nesting limit (gateway/limits.py): a decoded value is never too deep


class NativeSchema(NamedTuple):
    """`type` decodes a subset of what the schema accepts; a decoded value is accepted when `check` (the
    patterns, searched after the decode) passes too, or when `check` is None."""

    type: Any
    check: Check | None


def native_type(schema: Any, validator_class: type[jsonschema_rs.Validator]) -> NativeSchema | None:
    """The schema's native form, or None when it does not map."""
    try:
        return NativeSchema(*_Mapper(validator_class).map(schema, "Payload", 0))
    except (_Unmapped, jsonschema_rs.ValidationError, TypeError, ValueError, OverflowError, RecursionError):
        return None


class _Mapper:
    def __init__(self, validator_class: type[jsonschema_rs.Validator]) -> None:
        self.validator_class = validator_class
        self.structs = 0

    def map(self, node: Any, name: str, depth: int) -> tuple[Any, Check | None]:
        """(msgspec type, the check of the patterns inside or None)."""
        if not isinstance(node, dict) or depth > _MAX_DEPTH:
            raise _Unmapped("not a schema object, or too deep")
        kind = node.get("type")
        if kind is None and isinstance(node.get("enum"), list):
            kind = "string"  # an enum alone: maps when every member is a string (checked below)
        allowed = _KEYWORDS.get(kind) if isinstance(kind, str) else None
        if allowed is None or any(k not in allowed and k not in _ANNOTATIONS for k in node):
            raise _Unmapped(f"keywords {sorted(node)}")
        if "enum" in node:
            return self._enum(node), None
        if kind == "string":
            search = self._pattern(node["pattern"]) if "pattern" in node else None
            return _annotated(str, min_length=_count(node, "minLength"), max_length=_count(node, "maxLength")), \
                search
        if kind == "integer":
            low, high = _integer_bound(node, "minimum", INT64_MIN), _integer_bound(node, "maximum", INT64_MAX)
            return Annotated[int, msgspec.Meta(ge=max(low, INT64_MIN), le=min(high, INT64_MAX))], None
        if kind == "number":
            return _annotated(float, ge=_number_bound(node, "minimum"), le=_number_bound(node, "maximum")), None
        if kind == "boolean":
            return bool, None
        if kind == "array":
            items = node.get("items")
            if not isinstance(items, dict):
                raise _Unmapped("items absent or a list")
            item, check = self.map(items, name + "Item", depth + 1)
            return _annotated(list[item],  # type: ignore[valid-type]
                              min_length=_count(node, "minItems"), max_length=_count(node, "maxItems")), \
                (lambda values: all(map(check, values))) if check is not None else None
        return self._object(node, name, depth)

    def _pattern(self, pattern: Any) -> Check:
        """The check of one `pattern`: a one-keyword validator's `is_valid`, called on strings only."""
        if not isinstance(pattern, str):
            raise _Unmapped("pattern not a string")
        return self.validator_class({"pattern": pattern}, validate_formats=False,
                                    pattern_options=jsonschema_rs.RegexOptions()).is_valid

    def _enum(self, node: dict[str, Any]) -> Any:
        members = node["enum"]
        if not members or not all(isinstance(m, str) for m in members):
            raise _Unmapped("enum of non-strings")
        check = self.validator_class(node, validate_formats=False, pattern_options=jsonschema_rs.RegexOptions())
        passing = tuple(dict.fromkeys(m for m in members if check.is_valid(m)))
        if not passing:
            raise _Unmapped("no member passes")
        return Literal[passing]

    def _object(self, node: dict[str, Any], name: str, depth: int) -> tuple[Any, Check | None]:
        properties = node.get("properties", {})
        required = node.get("required", [])
        extra = node.get("additionalProperties", False)
        if not isinstance(properties, dict) or not isinstance(required, list) or extra is not False and \
                not isinstance(extra, (bool, dict)):
            raise _Unmapped("object shape")
        if any(not isinstance(r, str) or r not in properties for r in required):
            raise _Unmapped("a required member without a schema")
        fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
        rename: dict[str, str] = {}
        checks: list[tuple[Callable[[Any], Any], Check]] = []
        # required members first: msgspec wants fields without defaults before those with one
        ordered = [p for p in properties if p in required] + [p for p in properties if p not in required]
        for number, member in enumerate(ordered):
            attribute = f"m{number}"  # any member name, even one that is no Python identifier
            rename[attribute] = member
            kind, check = self.map(properties[member], f"{name}_{number}", depth + 1)
            if check is not None:
                checks.append((attrgetter(attribute), check))
            if member in required:
                fields.append((attribute, kind))
            else:
                fields.append((attribute, kind | msgspec.UnsetType, msgspec.UNSET))
        self.structs += 1
        struct = msgspec.defstruct(f"{name}{self.structs}", fields, rename=rename, forbid_unknown_fields=True)
        return struct, _members_check(tuple(checks)) if checks else None


def _members_check(checks: tuple[tuple[Callable[[Any], Any], Check], ...]) -> Check:
    unset = msgspec.UNSET

    def check(value: Any) -> bool:
        for get, holds in checks:
            member = get(value)
            if member is not unset and not holds(member):
                return False
        return True

    return check


def _annotated(base: Any, **bounds: Any) -> Any:
    given = {k: v for k, v in bounds.items() if v is not None}
    return Annotated[base, msgspec.Meta(**given)] if given else base


def _count(node: dict[str, Any], key: str) -> int | None:
    value = node.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Unmapped(f"{key} {value!r}")
    return value


def _integer_bound(node: dict[str, Any], key: str, default: int) -> int:
    value = node.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise _Unmapped(f"{key} {value!r}")  # a fractional bound of an integer: not worth the care it needs
    return int(value)


def _number_bound(node: dict[str, Any], key: str) -> float | None:
    value = node.get(key)
    if value is None:
        return None
    # below 2**53 in magnitude, integer or not: an integer value msgspec rounds to a double stays on the
    # same side of the bound as its exact value, however jsonschema-rs compares them
    if isinstance(value, bool) or not isinstance(value, (int, float)) or abs(value) >= _EXACT_FLOAT or \
            math.isnan(value):
        raise _Unmapped(f"{key} {value!r}")
    return cast(float, value)
