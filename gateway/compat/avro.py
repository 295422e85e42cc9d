"""What changed between two Avro schemas, by the Avro specification's schema resolution, and whom it breaks.

Resolution is asked both ways ("Schema Resolution" in the Avro 1.11 specification): can the new schema, as
reader, read data the old one wrote (if not, messages produced today are refused: producers break), and can
the old one read what the new one writes (if not, consumers not yet upgraded fail: consumers break)? The
rules applied: records match fields by name (a reader's aliases count); a field the reader has and the
writer lacks needs a default; a field only the writer has is skipped; an enum symbol the writer may use must
be one the reader knows, unless the reader has an enum `default`; primitives promote int -> long -> float ->
double and string <-> bytes; a union reader takes a writer branch it has, a union writer needs every branch
readable; a fixed keeps its size; names must agree (or be aliases).

Bytes judged without the writer's schema (plain Avro binary, as xgate decodes a payload with the definition's
schema alone) are read by position, so two changes keep bytes decodable but change what they mean: enum
symbols removed or reordered (the symbols after shift: an old `STOCK` reads as the next symbol) and record
fields reordered. Those break both.
"""

from __future__ import annotations

from typing import Any

from gateway.compat.change import Breaks
from gateway.compat.jsonschema import Found

PROMOTIONS = {"int": {"long", "float", "double"}, "long": {"float", "double"}, "float": {"double"},
              "string": {"bytes"}, "bytes": {"string"}}
PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})


def changes(old: Any, new: Any, old_type: str | None = None, new_type: str | None = None) -> list[Found]:
    """`old_type`, `new_type`: the named type a definition selects (`:TypeName`) within its schema."""
    walk = _Walk(_names(old), _names(new))
    walk.compare(old if old_type is None else old_type, new if new_type is None else new_type, "")
    return walk.found


def _names(schema: Any) -> dict[str, dict[str, Any]]:
    """Every named type of a schema by its full name (and its short name, for references within one space)."""
    found: dict[str, dict[str, Any]] = {}
    stack: list[tuple[Any, str]] = [(schema, "")]
    while stack:
        node, space = stack.pop()
        if isinstance(node, list):
            stack.extend((branch, space) for branch in node)
        elif isinstance(node, dict):
            kind = node.get("type")
            if kind in ("record", "error", "enum", "fixed") and isinstance(node.get("name"), str):
                name = node["name"]
                space = node.get("namespace", space) if "." not in name else name.rpartition(".")[0]
                full = name if "." in name else (f"{space}.{name}" if space else name)
                found[full] = found.get(full) or node
                found.setdefault(full.rpartition(".")[2], node)
            if kind in ("record", "error"):
                stack.extend((f.get("type"), space) for f in node.get("fields") or () if isinstance(f, dict))
            elif kind == "array":
                stack.append((node.get("items"), space))
            elif kind == "map":
                stack.append((node.get("values"), space))
            elif isinstance(kind, (dict, list)):
                stack.append((kind, space))
    return found


def _short(name: Any) -> str:
    return str(name).rpartition(".")[2]


class _Walk:
    def __init__(self, old_names: dict[str, dict[str, Any]], new_names: dict[str, dict[str, Any]]) -> None:
        self.names = (old_names, new_names)
        self.found: list[Found] = []
        self._seen: set[tuple[str, str, str]] = set()

    def add(self, at: str, kind: str, tightens: bool, loosens: bool, reason: str) -> None:
        self.found.append(Found(at or "/", kind, Breaks.of(tightens, loosens), reason))

    def resolve(self, schema: Any, side: int) -> Any:
        """A named reference as its definition; `{"type": "int", ...}` as the primitive it annotates."""
        if isinstance(schema, str) and schema not in PRIMITIVES:
            return self.names[side].get(schema) or self.names[side].get(_short(schema)) or schema
        if isinstance(schema, dict) and schema.get("type") in PRIMITIVES and "logicalType" not in schema:
            return schema["type"]
        if isinstance(schema, dict) and isinstance(schema.get("type"), (dict, list)):
            return self.resolve(schema["type"], side)
        if isinstance(schema, dict) and isinstance(schema.get("type"), str) and schema["type"] not in (
                "record", "error", "enum", "fixed", "array", "map") and schema["type"] not in PRIMITIVES:
            return self.resolve(schema["type"], side)
        return schema

    def compare(self, old: Any, new: Any, at: str) -> None:
        old, new = self.resolve(old, 0), self.resolve(new, 1)
        key = (repr(old)[:200], repr(new)[:200], at)
        if key in self._seen:
            return
        self._seen.add(key)
        if old == new:
            return
        backward, forward = self.reads(new, old, 1), self.reads(old, new, 0)
        kind_old, kind_new = _kind(old), _kind(new)
        if kind_old == kind_new == "record":
            self.record(old, new, at)
        elif kind_old == kind_new == "enum":
            self.enum(old, new, at)
        elif kind_old == kind_new == "array":
            self.compare(old.get("items"), new.get("items"), f"{at}/*")
        elif kind_old == kind_new == "map":
            self.compare(old.get("values"), new.get("values"), f"{at}/*")
        elif not (backward and forward):
            self.add(at, "type", not backward, not forward,
                     f"{_describe(old)} -> {_describe(new)}: "
                     + ("the new schema cannot read what the old one wrote" if not backward else
                        "the old schema cannot read what the new one writes"))
        elif kind_old != kind_new:
            self.add(at, "type", False, False, f"{_describe(old)} -> {_describe(new)}: readable both ways")

    def reads(self, reader: Any, writer: Any, reader_side: int) -> bool:
        """Avro resolution: can `reader` read data `writer` wrote (top level; records and enums are compared
        member by member by `record` and `enum`)."""
        writer_side = 1 - reader_side
        reader, writer = self.resolve(reader, reader_side), self.resolve(writer, writer_side)
        if isinstance(writer, list):
            return all(self.reads(reader, branch, reader_side) for branch in writer)
        if isinstance(reader, list):
            return any(self.reads(branch, writer, reader_side) for branch in reader)
        kind_reader, kind_writer = _kind(reader), _kind(writer)
        if kind_reader in PRIMITIVES or kind_writer in PRIMITIVES:
            return kind_reader == kind_writer or kind_reader in PROMOTIONS.get(kind_writer, ())
        if kind_reader != kind_writer:
            return False
        if kind_reader in ("record", "enum", "fixed") and not _same_name(reader, writer):
            return False
        if kind_reader == "fixed":
            return bool(reader.get("size") == writer.get("size"))
        if kind_reader == "array":
            return self.reads(reader.get("items"), writer.get("items"), reader_side)
        if kind_reader == "map":
            return self.reads(reader.get("values"), writer.get("values"), reader_side)
        return True

    def record(self, old: dict[str, Any], new: dict[str, Any], at: str) -> None:
        if not _same_name(new, old) or not _same_name(old, new):
            self.add(at, "name", True, True, f"record {old.get('name')} -> {new.get('name')}: readers match records by name")
        before = {f["name"]: f for f in old.get("fields") or () if isinstance(f, dict)}
        after = {f["name"]: f for f in new.get("fields") or () if isinstance(f, dict)}
        aliases = {alias: name for name, field in after.items() for alias in field.get("aliases") or ()}
        matched: dict[str, str] = {}  # new field -> old field
        for name in after:
            if name in before:
                matched[name] = name
        for alias, name in aliases.items():
            if alias in before and name not in matched:
                matched[name] = alias
        for name, field in after.items():
            if name in matched:
                self.compare(before[matched[name]].get("type"), field.get("type"), f"{at}/{name}")
            elif "default" in field:
                self.add(f"{at}/{name}", "field-added", False, False,
                         f"field `{name}` added with a default: each side reads the other's data")
            else:
                self.add(f"{at}/{name}", "field-added", True, False,
                         f"field `{name}` added without a default: data written without it cannot be read")
        for name, field in before.items():
            if name in matched.values():
                continue
            self.add(f"{at}/{name}", "field-removed", False, "default" not in field,
                     f"field `{name}` removed" + ("" if "default" in field else
                                                 ": the old schema, without a default for it, cannot read new data"))
        order_before = [name for name in before if name in matched.values()]
        order_after = [matched[name] for name in after if name in matched]
        if order_before != order_after:
            self.add(at, "field-order", True, True,
                     "fields reordered: bytes read by position (without the writer's schema) change meaning")

    def enum(self, old: dict[str, Any], new: dict[str, Any], at: str) -> None:
        if not _same_name(new, old):
            self.add(at, "name", True, True, f"enum {old.get('name')} -> {new.get('name')}: readers match enums by name")
        before, after = list(old.get("symbols") or ()), list(new.get("symbols") or ())
        removed = [s for s in before if s not in after]
        added = [s for s in after if s not in before]
        if removed:
            self.add(at, "enum-symbols", True, True,
                     f"symbols removed: {', '.join(removed)}: " + ("" if "default" in new else
                     "the new schema cannot read them, and ") + "the symbols after them shift, so bytes read by "
                     "position mean another symbol")
        kept_before = [s for s in before if s in after]
        kept_after = [s for s in after if s in before]
        if not removed and kept_before != kept_after:
            self.add(at, "enum-symbols", True, True, "symbols reordered: bytes read by position mean another symbol")
        if added:
            at_end = after[len(after) - len(added):] == added
            shifted = not at_end and not removed
            self.add(at, "enum-symbols", shifted, "default" not in old or shifted,
                     f"symbols added: {', '.join(added)}"
                     + ("" if at_end else ", not at the end: the symbols after them shift")
                     + ("" if "default" in old else "; the old schema cannot read them"))


def _kind(schema: Any) -> str:
    if isinstance(schema, list):
        return "union"
    if isinstance(schema, str):
        return schema
    if isinstance(schema, dict):
        kind = schema.get("type")
        return "record" if kind == "error" else str(kind)
    return "?"


def _same_name(reader: dict[str, Any], writer: dict[str, Any]) -> bool:
    names = {_short(reader.get("name"))} | {_short(a) for a in reader.get("aliases") or ()}
    return _short(writer.get("name")) in names


def _describe(schema: Any) -> str:
    if isinstance(schema, list):
        return "[" + ", ".join(_describe(branch) for branch in schema) + "]"
    kind = _kind(schema)
    if isinstance(schema, dict) and schema.get("name"):
        return f"{kind} {schema['name']}"
    return kind
