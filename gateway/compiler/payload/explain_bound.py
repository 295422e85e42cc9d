"""How deep a failing JSON payload may be before listing its schema errors would cost too much.

jsonschema-rs decides validity fast (`is_valid` stops at the first branch that fits), but it lists errors
by walking every failing branch of every `anyOf`, `oneOf`, `allOf`, ... and keeping each branch's errors as
the context of the combinator's error. A schema whose combinator has two branches that both lead back to
it through `$ref` costs 2^depth there: `{"anyOf": [{"items": {"$ref": "#"}}, {"minItems": 1, "items":
{"$ref": "#"}}, ...]}` took 0.3 s at 12 levels, 10.9 s at 16 and minutes at 20 (issue 35: a 50-byte
message held a route). The native core walks the same way (the same crate).

So the compiler bounds the walk from the schema alone: `explain_depth` counts, level by level, how many
schema paths can reach one value of the payload (through in-place keywords, which apply to the same value,
and descending ones, which apply to a member or an item), and gives the deepest payload whose sum stays
within `PATH_BUDGET`. A failing payload nested deeper than that still fails (`is_valid` said so) but is
reported as one `schema` violation at the root instead of an itemised list; None means every depth is
listed. Ordinary schemas, recursive ones included (a tree whose node refers to itself), stay None.
"""

from __future__ import annotations

from typing import Any

from gateway.pointers import follow

# schema paths that may be walked to list one payload's errors (each path builds an error with the value it
# names); the recursion above costs about 0.1-0.2 ms a path
PATH_BUDGET = 1000
# the one violation's message when the errors are not listed (the core writes the same)
UNLISTED = "payload fails its JSON Schema (not itemised: listing its errors at this depth would take too long)"
# the deepest payload worth a bound: the JSON readers refuse documents nested past 128 levels
DEEPEST = 128

# keywords whose subschemas apply to the value itself
_IN_PLACE_LISTS = ("anyOf", "oneOf", "allOf")
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_MAPS = ("dependentSchemas", "dependencies")  # `dependencies`: its schema-valued members
_REFS = ("$ref", "$dynamicRef", "$recursiveRef")
# keywords whose subschemas apply to one member or item: per group, a member meets at most one subschema of
# `properties` (the max counts), any number of `patternProperties` (each its own group)
_DESCENDING_ONE = ("additionalProperties", "additionalItems", "contains", "unevaluatedProperties",
                   "unevaluatedItems")
_DESCENDING_ALTERNATIVES = ("properties", "prefixItems", "items")


def explain_depth(schema: Any) -> int | None:
    """The deepest failing payload whose errors are listed; None: any depth; -1: none (only the root)."""
    if not isinstance(schema, dict):
        return None  # true or false: nothing to walk
    graph = _Graph(schema)
    if graph.order is None:
        return -1  # a schema that applies itself to the same value: no walk of it ends
    counts: dict[int, int] | None = None
    total = 0
    for depth in range(DEEPEST + 1):
        before, counts = counts, graph.level(counts)
        total += counts[id(schema)]
        if total > PATH_BUDGET:
            return depth - 1
        if counts == before:  # every level from here adds the same: the total at the deepest is known
            last = depth + (PATH_BUDGET - total) // counts[id(schema)] if counts[id(schema)] else DEEPEST
            return None if last >= DEEPEST else last
    return None


def payload_depth(value: Any) -> int:
    """Levels of nesting: 0 for a scalar, 1 for `[]` or `{}`, 2 for `[[1]]`, as the core's tape counts."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in item)
    return deepest


class _Graph:
    """Each subschema object (by id) with its in-place children and its groups of descending ones."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.nodes: dict[int, Any] = {}
        self.anchors: dict[str, Any] = {}
        self._collect(root)
        self.in_place = {key: self._in_place(node) for key, node in self.nodes.items()}
        self.descending = {key: self._descending(node) for key, node in self.nodes.items()}
        self.order = self._in_place_order()

    def _collect(self, root: Any) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            if isinstance(node, list):
                stack.extend(node)
                continue
            if not isinstance(node, dict) or id(node) in self.nodes:
                continue
            self.nodes[id(node)] = node
            for name in ("$anchor", "$dynamicAnchor", "$recursiveAnchor"):
                if isinstance(node.get(name), str):
                    self.anchors["#" + node[name]] = node
            if isinstance(node.get("$id"), str):
                self.anchors[node["$id"]] = node
            stack.extend(node.values())

    def _resolve(self, ref: Any) -> Any:
        if not isinstance(ref, str):
            return None
        if ref in ("#", ""):
            return self.root
        if ref in self.anchors:
            return self.anchors[ref]
        if not ref.startswith("#/"):
            return None  # another document's: the core never fetches one, and it adds no walk here
        found, node = follow(self.root, ref[1:])
        return node if found else None

    def _in_place(self, node: dict[str, Any]) -> list[int]:
        found: list[Any] = []
        for name in _IN_PLACE_LISTS:
            if isinstance(node.get(name), list):
                found.extend(node[name])
        found.extend(node.get(name) for name in _IN_PLACE_ONE)
        for name in _IN_PLACE_MAPS:
            if isinstance(node.get(name), dict):
                found.extend(node[name].values())
        found.extend(self._resolve(node[name]) for name in _REFS if name in node)
        return [id(child) for child in found if isinstance(child, dict)]

    def _descending(self, node: dict[str, Any]) -> list[list[int]]:
        groups: list[list[Any]] = [[node.get(name)] for name in _DESCENDING_ONE]
        for name in _DESCENDING_ALTERNATIVES:
            value = node.get(name)
            groups.append(list(value.values()) if isinstance(value, dict) and name == "properties"
                          else value if isinstance(value, list) else [value])
        if isinstance(node.get("patternProperties"), dict):
            groups.extend([child] for child in node["patternProperties"].values())
        return [ids for ids in ([id(c) for c in group if isinstance(c, dict)] for group in groups) if ids]

    def _in_place_order(self) -> list[int] | None:
        """Every node after its in-place children (their counts come first); None for a cycle among them."""
        order: list[int] = []
        state: dict[int, int] = {}  # 1: being visited, 2: done
        for start in self.nodes:
            if state.get(start):
                continue
            stack = [(start, iter(self.in_place[start]))]
            state[start] = 1
            while stack:
                key, children = stack[-1]
                child = next(children, None)
                if child is None:
                    stack.pop()
                    state[key] = 2
                    order.append(key)
                elif state.get(child) == 1:
                    return None
                elif not state.get(child):
                    state[child] = 1
                    stack.append((child, iter(self.in_place[child])))
        return order

    def level(self, below: dict[int, int] | None) -> dict[int, int]:
        """Per node, the schema paths from it to one value one level further down than `below` counted
        (None: to the value itself). In-place children come first in `order`, so their counts are ready.
        Capped past the budget."""
        counts: dict[int, int] = {}
        assert self.order is not None
        for key in self.order:
            if below is None:
                count = 1
            else:
                count = sum(max(below[child] for child in group) for group in self.descending[key])
            count += sum(counts[child] for child in self.in_place[key])
            counts[key] = min(count, PATH_BUDGET + 1)
        return counts
