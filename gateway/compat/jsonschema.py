"""What changed between two JSON Schemas, keyword by keyword, and whom each change breaks (change.py).

Walked side by side from the roots, following local `$ref`s (a pair met twice is compared once, so recursive
schemas end). Each finding names the payload location it concerns as an instance pointer (`/currency`;
`/*` for an array's items or an object's unlisted members) and the keyword. The rules are the keywords' own
meaning in the JSON Schema validation vocabulary:

- `type`: a type no longer listed tightens, a new one loosens (`integer` lies within `number`);
- `required`, `enum`: a name or value added tightens (required) or loosens (enum), removed the other way;
  `const` added tightens, removed loosens, changed does both;
- bounds (`minimum`, `minLength`, `minItems`, ...) raised tighten and lowered loosen, added tighten, removed
  loosen; the upper bounds the other way round; `multipleOf` and `pattern` changed do both (neither set of
  accepted values holds the other in general);
- `properties`, `additionalProperties`, `items`: compared as the schemas a member or item meets, so a member
  added to an open object tightens (its values were free) and one added to a closed object loosens;
- `anyOf`, `oneOf`, `allOf` with the same number of branches are compared branch by branch; otherwise, and
  for any other keyword whose effect is not worked out here, a change counts as breaking both;
- annotations (`title`, `description`, `format`, `default`, `examples`, ...) break nobody: xgate reads
  `format` as an annotation (docs/decisions.md), so no verdict depends on it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from gateway.compat.change import Breaks, canonical
from gateway.pointers import escape, follow

ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "format", "deprecated",
                         "readOnly", "writeOnly", "contentMediaType", "contentEncoding", "$id", "$schema",
                         "$anchor", "definitions", "$defs", "id"})
TYPES = frozenset({"null", "boolean", "object", "array", "number", "integer", "string"})
LOWER = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains")
UPPER = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains")
HANDLED = frozenset({"type", "required", "enum", "const", "properties", "additionalProperties", "items",
                     "anyOf", "oneOf", "allOf", "$ref", "pattern", "multipleOf", *LOWER, *UPPER})
MAX_REF_HOPS = 32


@dataclass(frozen=True)
class Found:
    pointer: str  # the payload location, an instance pointer
    kind: str  # the keyword
    breaks: Breaks
    reason: str


def changes(old: Any, new: Any) -> list[Found]:
    walk = _Walk(old, new)
    walk.schema(old, new, "")
    while walk.pending:  # breadth first: a change is reported where it is met nearest the root
        walk.compare(*walk.pending.popleft())
    return walk.found


def _types(schema: dict[str, Any]) -> frozenset[str]:
    declared = schema.get("type")
    if declared is None:
        return TYPES
    return frozenset([declared] if isinstance(declared, str) else declared)


def _accepts(types: frozenset[str], name: str) -> bool:
    return name in types or (name == "integer" and "number" in types)


class _Walk:
    def __init__(self, old_root: Any, new_root: Any) -> None:
        self.roots = (old_root, new_root)
        self.found: list[Found] = []
        self._seen: set[tuple[int, int]] = set()
        self.pending: deque[tuple[Any, Any, str]] = deque()
        self._kept: list[tuple[Any, Any]] = []

    def add(self, pointer: str, kind: str, tightens: bool, loosens: bool, reason: str) -> None:
        self.found.append(Found(pointer or "/", kind, Breaks.of(tightens, loosens), reason))

    def resolve(self, schema: Any, side: int) -> Any:
        """A local `$ref` followed to its target (its sibling keywords kept beside it, as drafts from 2019-09
        apply both); anything else as it is."""
        for _ in range(MAX_REF_HOPS):
            if not isinstance(schema, dict) or not isinstance(schema.get("$ref"), str):
                return schema
            ref = schema["$ref"]
            if not ref.startswith("#"):
                return schema
            found, target = follow(self.roots[side], ref[1:])
            if not found:
                return schema
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**target, **siblings} if isinstance(target, dict) and siblings else target
        return schema

    def schema(self, old: Any, new: Any, at: str) -> None:
        """Compare these two (sub)schemas in turn."""
        self.pending.append((old, new, at))

    def compare(self, old: Any, new: Any, at: str) -> None:
        old, new = self.resolve(old, 0), self.resolve(new, 1)
        key = (id(old), id(new))  # a pair met again (a recursive schema) was compared where first met
        if key in self._seen or canonical(old) == canonical(new):
            return
        self._seen.add(key)
        self._kept.append((old, new))  # merged `$ref` targets stay alive, so their ids are never reused
        old_open = old is True or old == {}
        new_open = new is True or new == {}
        if old is False or new is False or old_open or new_open:
            if old_open and not new_open:
                self.add(at, "schema", True, False, "the value was free and now has a schema")
            elif new_open and not old_open:
                self.add(at, "schema", False, True, "the value had a schema and is now free")
            elif old is False or new is False:
                self.add(at, "schema", new is False, old is False,
                         "the value is now refused whatever it is" if new is False else "the value was refused")
            return
        if not isinstance(old, dict) or not isinstance(new, dict):
            self.add(at, "schema", True, True, "the schema is not an object on one side")
            return
        self.type(old, new, at)
        self.sets(old, new, at)
        self.bounds(old, new, at)
        self.members(old, new, at)
        self.items(old, new, at)
        self.branches(old, new, at)
        for keyword in sorted(set(old) | set(new)):
            if keyword in HANDLED or keyword in ANNOTATIONS or canonical(old.get(keyword)) == canonical(new.get(keyword)):
                continue
            self.add(at, keyword, True, True, f"`{keyword}` changed; its effect on what is accepted is not worked out")

    def type(self, old: dict[str, Any], new: dict[str, Any], at: str) -> None:
        before, after = _types(old), _types(new)
        lost = sorted(t for t in before if not _accepts(after, t))
        gained = sorted(t for t in after if not _accepts(before, t))
        if lost or gained:
            parts = ([f"no longer {', '.join(lost)}"] if lost else []) + ([f"now also {', '.join(gained)}"] if gained else [])
            self.add(at, "type", bool(lost), bool(gained), "; ".join(parts))

    def sets(self, old: dict[str, Any], new: dict[str, Any], at: str) -> None:
        before, after = set(old.get("required") or ()), set(new.get("required") or ())
        for name in sorted(after - before):
            self.add(f"{at}/{escape(name)}", "required", True, False, f"`{name}` is now required")
        for name in sorted(before - after):
            self.add(f"{at}/{escape(name)}", "required", False, True, f"`{name}` is no longer required")
        if "enum" in old or "enum" in new:
            was = {canonical(v) for v in old["enum"]} if "enum" in old else None
            now = {canonical(v) for v in new["enum"]} if "enum" in new else None
            if was is None or now is None:
                self.add(at, "enum", now is not None, was is not None,
                         "an enum now limits the value" if was is None else "the enum no longer limits the value")
            elif was != now:
                removed, added = sorted(was - now), sorted(now - was)
                self.add(at, "enum", bool(removed), bool(added),
                         "; ".join(([f"values removed: {', '.join(removed)}"] if removed else [])
                                   + ([f"values added: {', '.join(added)}"] if added else [])))
        if canonical(old.get("const")) != canonical(new.get("const")):
            self.add(at, "const", "const" in new, "const" in old,
                     f"const {canonical(old['const']) if 'const' in old else '(none)'} -> "
                     f"{canonical(new['const']) if 'const' in new else '(none)'}")
        for keyword in ("pattern", "multipleOf"):
            if canonical(old.get(keyword)) != canonical(new.get(keyword)):
                self.add(at, keyword, keyword in new, keyword in old,
                         f"{keyword} {canonical(old.get(keyword))} -> {canonical(new.get(keyword))}")

    def bounds(self, old: dict[str, Any], new: dict[str, Any], at: str) -> None:
        for keywords, upper in ((LOWER, False), (UPPER, True)):
            for keyword in keywords:
                before, after = old.get(keyword), new.get(keyword)
                if before == after:
                    continue
                numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (before, after)
                              if v is not None)
                if not numeric:  # draft-04's boolean exclusive bounds: no order to read
                    self.add(at, keyword, True, True, f"{keyword} {before} -> {after}")
                    continue
                if before is None or after is None:
                    tightens = before is None
                else:
                    tightens = after < before if upper else after > before
                self.add(at, keyword, tightens, not tightens, f"{keyword} {before} -> {after}")

    def members(self, old: dict[str, Any], new: dict[str, Any], at: str) -> None:
        """Each member as the schema it meets on either side: its own, else the other members' schema."""
        before, after = old.get("properties") or {}, new.get("properties") or {}
        old_rest, new_rest = old.get("additionalProperties", True), new.get("additionalProperties", True)
        for name in sorted(set(before) | set(after)):
            self.schema(before.get(name, old_rest), after.get(name, new_rest), f"{at}/{escape(name)}")
        self.schema(old_rest, new_rest, f"{at}/*")

    def items(self, old: dict[str, Any], new: dict[str, Any], at: str) -> None:
        before, after = old.get("items", True), new.get("items", True)
        if isinstance(before, list) or isinstance(after, list):
            if canonical(before) != canonical(after):
                self.add(f"{at}/*", "items", True, True, "tuple items changed")
            return
        self.schema(before, after, f"{at}/*")

    def branches(self, old: dict[str, Any], new: dict[str, Any], at: str) -> None:
        for keyword in ("anyOf", "oneOf", "allOf"):
            before, after = old.get(keyword), new.get(keyword)
            if canonical(before) == canonical(after):
                continue
            if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
                for one, other in zip(before, after, strict=True):
                    self.schema(one, other, at)
            else:
                self.add(at, keyword, True, True, f"`{keyword}` branches added or removed")
