"""A bounded first pass over Avro binary data, for the schemas fastavro's C reader cannot read safely.

fastavro's reader recurses in C once per nesting level and loops once per
array or map item. Two kinds of schema turn that against the process:

- recursive ones (a linked list, a tree): a body of a few KB nests thousands
  of levels and overflows the C stack, killing the process (a record that
  holds itself without a union never ends, whatever the body);
- arrays or maps of items that take no bytes (null, empty records): two bytes
  of body claim 2^40 items, minutes of work and all the memory.

For those schemas (`needs_scan`), `scan` walks the body first with an
explicit stack, counting nesting levels (records, arrays, maps: the JSON
count) and items that take no bytes; fastavro only reads what the scan
found in bounds and well formed. The scan costs one step per byte or item;
other schemas skip it, since their data can neither nest deeper than the
schema nor hold more items than bytes.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from gateway.errors import GatewayError
from gateway.limits import MAX_NESTING, limit_violation, nesting_violation
from gateway.verdict import Violation

from .base import PATH_PREFIX, decode_violation

# items that take no bytes in one datum (an array of 65,536 nulls is already absurd)
MAX_EMPTY_ITEMS = 65536

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_FIXED_WIDTH = {"null": 0, "boolean": 1, "float": 4, "double": 8}
_CONTAINERS = ("record", "error", "array", "map")


def _kind(node: Any, named: dict[str, Any]) -> tuple[str, Any]:
    """(kind, node) with named references resolved: kind is a primitive, a complex type or "union"."""
    while isinstance(node, str) and node not in _PRIMITIVES:
        node = named.get(node, "null")
    if isinstance(node, str):
        return node, node
    if isinstance(node, list):
        return "union", node
    kind = node.get("type") if isinstance(node, dict) else "null"
    if isinstance(kind, str) and kind not in _PRIMITIVES and kind not in _CONTAINERS + ("enum", "fixed"):
        return _kind(kind, named)
    return (kind if isinstance(kind, str) else "null"), node


def _children(kind: str, node: Any) -> list[Any]:
    if kind in ("record", "error"):
        return [f.get("type") for f in node.get("fields") or () if isinstance(f, dict)]
    if kind == "array":
        return [node.get("items")]
    if kind == "map":
        return [node.get("values")]
    if kind == "union":
        return list(node)
    return []


def _named_records(named: dict[str, Any]) -> dict[str, Any]:
    return {name: node for name, node in named.items() if isinstance(node, dict) and node.get("type") in
            ("record", "error")}


def _is_recursive(named: dict[str, Any]) -> bool:
    """Whether a named record can contain itself (through any path of fields, unions, arrays and maps)."""
    for name, record in _named_records(named).items():
        seen: set[int] = set()
        stack = _children("record", record)
        while stack:
            node = stack.pop()
            if node == name or (isinstance(node, dict) and node.get("name") == name):
                return True
            kind, resolved = _kind(node, named)
            if id(resolved) in seen:
                continue
            seen.add(id(resolved))
            stack.extend(_children(kind, resolved))
    return False


def takes_no_bytes(node: Any, named: dict[str, Any]) -> bool:
    """Whether a value of this type can be encoded in zero bytes (null, fixed(0), records of such fields)."""
    pending = [node]
    visiting: set[int] = set()
    while pending:
        kind, resolved = _kind(pending.pop(), named)
        if kind == "fixed":
            if resolved.get("size") != 0:
                return False
        elif kind in ("record", "error"):
            if id(resolved) in visiting:
                continue  # a record that holds itself without a union: endless, never empty
            visiting.add(id(resolved))
            pending.extend(_children(kind, resolved))
        elif kind != "null":
            return False
    return True


def needs_scan(schema: Any, named: dict[str, Any]) -> bool:
    """Recursive schemas, and arrays or maps whose items can take no bytes."""
    if _is_recursive(named):
        return True
    stack, seen = [schema], set()
    while stack:
        kind, node = _kind(stack.pop(), named)
        if id(node) in seen:
            continue
        seen.add(id(node))
        if kind in ("array", "map") and takes_no_bytes(_children(kind, node)[0], named):
            return True
        stack.extend(_children(kind, node))
    return False


class _Corrupt(GatewayError):
    pass


class _Reader:
    __slots__ = ("body", "position")

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.position = 0

    def long(self) -> int:
        body, position, shift, value = self.body, self.position, 0, 0
        while True:
            if position >= len(body) or shift > 63:
                raise _Corrupt(f"a varint runs past byte {position}")
            byte = body[position]
            position += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        self.position = position
        return (value >> 1) ^ -(value & 1)

    def skip(self, count: int) -> None:
        if count < 0 or self.position + count > len(self.body):
            raise _Corrupt(f"{count} bytes claimed at byte {self.position}, {len(self.body)} in the body")
        self.position += count


class _Block(NamedTuple):
    """An array or map being read: its item type, the items left in the current block (0: read the next
    block's count), the depth, and whether each item has a string key first."""

    item: Any
    left: int
    depth: int
    is_map: bool


def scan(body: bytes, schema: Any, named: dict[str, Any]) -> Violation | None:
    """A `limit` or `decode` violation when the body nests too deep, holds too many empty items or is
    corrupt in a way the scan sees; None when fastavro may read it."""
    reader = _Reader(body)
    empty = 0
    no_bytes: dict[int, bool] = {}  # item type -> takes_no_bytes, asked once per block
    # tasks: (type, depth) to read one value, or a _Block of an array or map being read
    stack: list[Any] = [(schema, 0)]
    try:
        while stack:
            task = stack.pop()
            if task.__class__ is _Block:
                item, left, depth, is_map = task
                if left == 0:
                    left = reader.long()
                    if left == 0:
                        continue
                    if left < 0:
                        left = -left
                        reader.long()  # the block's size in bytes
                    zero = no_bytes.get(id(item))
                    if zero is None:
                        zero = no_bytes[id(item)] = takes_no_bytes(item, named)
                    if zero:
                        empty += left
                        if empty > MAX_EMPTY_ITEMS:
                            return limit_violation(PATH_PREFIX, f"at most {MAX_EMPTY_ITEMS} items", f"{empty}+",
                                                   f"the Avro datum holds more than {MAX_EMPTY_ITEMS} array or "
                                                   "map items that take no bytes")
                stack.append(_Block(item, left - 1, depth, is_map))
                stack.append((item, depth))
                if is_map:
                    stack.append(("string", depth))
                continue
            kind, node = _kind(task[0], named)
            depth = task[1]
            if kind in _CONTAINERS:
                depth += 1
                if depth > MAX_NESTING:
                    return nesting_violation(PATH_PREFIX, "the Avro datum")
            if kind in _FIXED_WIDTH:
                reader.skip(_FIXED_WIDTH[kind])
            elif kind in ("int", "long", "enum"):
                reader.long()
            elif kind in ("bytes", "string"):
                reader.skip(reader.long())
            elif kind == "fixed":
                reader.skip(int(node.get("size") or 0))
            elif kind == "union":
                index = reader.long()
                if not 0 <= index < len(node):
                    raise _Corrupt(f"union branch {index} of {len(node)}")
                stack.append((node[index], depth))
            elif kind in ("record", "error"):
                stack.extend((field, depth) for field in reversed(_children(kind, node)))
            elif kind in ("array", "map"):
                stack.append(_Block(_children(kind, node)[0], 0, depth, kind == "map"))
    except _Corrupt as exc:
        return decode_violation("Avro binary encoding", body, f"payload is not Avro binary of the schema ({exc})")
    return None
