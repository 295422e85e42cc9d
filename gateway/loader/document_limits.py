"""Size limits on a decoded document, so that a hostile one fails with a reason instead of exhausting memory.

The byte size is checked before parsing (`decode.MAX_DOCUMENT_BYTES`). After
parsing, the value is measured as every later step sees it: YAML aliases
expanded, because the normalizer, the basemessage merge and the schema
compilers copy shared nodes into separate ones (a "billion laughs" document
of a few hundred bytes expands to 10^9 strings). The walk recurses at most
MAX_NESTING_DEPTH frames and is memoized per node, so measuring costs one
visit per distinct node however large the expansion, and a YAML alias that
contains itself is caught.
"""

from __future__ import annotations

from typing import Any

from gateway.errors import GatewayError

# deeper than any registry document or schema written by hand (a schema nesting 40 objects uses ~90 levels)
MAX_NESTING_DEPTH = 128
# values (objects, arrays and scalars) per document, YAML aliases expanded; bench/memory's 1,000-definition
# registry holds ~115,000 (2 MiB of JSON). Documents merge, so a larger registry splits across files.
MAX_DOCUMENT_VALUES = 1_000_000


class _Excess(GatewayError):
    """A limit is exceeded; the message says which."""


def measure(value: Any) -> str | None:
    """Why `value` exceeds a limit (nesting depth, expanded size, a recursive alias), or None when it fits."""
    try:
        _Walk().values(value, 1)
    except _Excess as exc:
        return str(exc)
    return None


class _Walk:
    """Recursion stops at MAX_NESTING_DEPTH frames, so it never nears Python's own limit."""

    def __init__(self) -> None:
        # id(container) -> (values, height) once measured: a node shared by aliases is walked once
        self.done: dict[int, tuple[int, int]] = {}
        self.open: set[int] = set()
        self.total = 0

    def values(self, node: Any, depth: int) -> int:
        """Values in `node` with aliases expanded; raises _Excess past a limit."""
        if not isinstance(node, (dict, list)):
            return 1
        key = id(node)
        known = self.done.get(key)
        if known is not None:
            size, height = known
        else:
            size, height = self._measure(node, key, depth)
        if depth + height - 1 > MAX_NESTING_DEPTH:
            raise _Excess(f"nests deeper than {MAX_NESTING_DEPTH} levels")
        self.total += size if known is not None else 0
        if self.total > MAX_DOCUMENT_VALUES:
            raise _Excess(f"holds more than {MAX_DOCUMENT_VALUES:,} values once YAML aliases are expanded "
                          "(an alias bomb; a registry this large can be split across several documents)")
        return size

    def _measure(self, node: dict[Any, Any] | list[Any], key: int, depth: int) -> tuple[int, int]:
        if depth > MAX_NESTING_DEPTH:
            raise _Excess(f"nests deeper than {MAX_NESTING_DEPTH} levels")
        if key in self.open:
            raise _Excess("a YAML alias refers to a node that contains it (a recursive structure)")
        self.open.add(key)
        size, height = 1, 1
        self.total += 1
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, (dict, list)):
                size += self.values(child, depth + 1)
                known = self.done[id(child)]
                height = max(height, known[1] + 1)
            else:
                size += 1
                self.total += 1
        self.open.discard(key)
        self.done[key] = (size, height)
        return size, height
