"""The `?inline` and `?filter` flags (core spec "Inline Flag", "Filter Flag", "Dot-Notation in Filters";
HTTP binding "Request Flags").

`inline` values are comma-separated paths of collection names (and `meta`, the Resource document, or
`capabilities`/`model` at the root), relative to the entity the request targets; `*` as the last part means
everything below; no value means `*`. Naming a parent inlines only the collections needed to show the child.

Each `filter` parameter holds expressions joined by `,` (AND); several `filter` parameters are ORed. An
expression is `[PATH.]ATTRIBUTE[OP VALUE]` with OP one of `=`, `!=`, `<>`, `<`, `<=`, `>`, `>=` (none: the
attribute is present and not null); `VALUE` `null` tests absence. Values compare by the attribute's type:
booleans exactly (`true`/`false`), numbers numerically, strings case-insensitively with `*` wildcards (`\\*`
is a literal star) for `=`, `!=` and `<>`. Attribute names are case-sensitive. The collection names of
PATH (the ids between them are left out, per the spec) pick the level the expression applies to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gateway.errors import GatewayError
from gateway.registry_api.tree import GROUP_TYPES, GROUPS, GroupType, ResourceType

OPERATORS = ("<=", ">=", "!=", "<>", "=", "<", ">")
EXCLUDE_ALL = "excludeall"
ROOT_ONLY = ("capabilities", "model")


class QueryError(GatewayError, ValueError):
    """An invalid flag value: `flag` is `inline` or `filter`, `value` the offending value."""

    def __init__(self, flag: str, value: str, detail: str) -> None:
        super().__init__(detail)
        self.flag = flag
        self.value = value
        self.detail = detail


# -- levels of the model -------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Level:
    """Where in the model an entity sits: registry, group (of `group`), resource or version (of `resource`)."""

    kind: str
    group: GroupType | None = None
    resource: ResourceType | None = None

    def collections(self) -> dict[str, Level]:
        """The nested xRegistry collections at this level, by plural name."""
        if self.kind == "registry":
            return {g.plural: Level("group", group=g) for g in GROUP_TYPES}
        if self.kind == "group" and self.group is not None:
            return {r.plural: Level("resource", self.group, r) for r in self.group.resources}
        if self.kind == "resource":
            return {"versions": Level("version", self.group, self.resource)}
        return {}

    def inlineable(self) -> dict[str, Level | None]:
        """Names `inline` accepts here: collections, plus leaves (None) such as `meta` or the document."""
        names: dict[str, Level | None] = dict(self.collections())
        if self.kind == "registry":
            names.update({name: None for name in ROOT_ONLY})
        if self.kind == "resource":
            names["meta"] = None
        if self.kind in ("resource", "version") and self.resource is not None and self.resource.hasdocument:
            names[self.resource.singular] = None
        return names


ROOT = Level("registry")


def level_of(groups: str | None = None, resources: str | None = None, version: bool = False) -> Level:
    if groups is None:
        return ROOT
    group = GROUPS[groups]
    if resources is None:
        return Level("group", group=group)
    resource = next(r for r in group.resources if r.plural == resources)
    return Level("version" if version else "resource", group, resource)


# -- inline ---------------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Inline:
    paths: frozenset[tuple[str, ...]]

    def wants(self, at: tuple[str, ...], name: str) -> bool:
        """Is `name` (a collection, `meta`, a document...) of the entity at abstract path `at` inlined?"""
        full = (*at, name)
        for path in self.paths:
            stem = path[:-1] if path[-1] == "*" else path
            if stem[:len(full)] == full:
                return True  # named, or a parent of what is named
            if stem != path and full[:len(stem)] == stem and not (not at and name in ROOT_ONLY):
                return True  # below a `*`
        return False


NO_INLINE = Inline(frozenset())


def parse_inline(values: list[str], level: Level) -> Inline:
    paths: set[tuple[str, ...]] = set()
    for value in values:
        for text in (value.split(",") if value.strip() else ["*"]):
            text = text.strip()
            parts = tuple(text.split(".")) if text else ("*",)
            current: Level | None = level
            for index, part in enumerate(parts):
                if part == "*":
                    if index != len(parts) - 1:
                        raise QueryError("inline", text, "`*` may only be the last part of a path")
                    break
                names = current.inlineable() if current is not None else {}
                if part == "modelsource" and current is not None and current.kind == "registry":
                    # a valid inline value (core spec "Inline Flag") naming data this server does not offer
                    raise QueryError("available", "modelsource", "no modelsource: the model is fixed")
                if part not in names:
                    known = ", ".join(sorted(names)) or "nothing"
                    raise QueryError("inline", text, f"{part!r} cannot be inlined here (known: {known})")
                current = names[part]
            paths.add(parts)
    return Inline(frozenset(paths))


# -- filter: dot notation -------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Step:
    """One step of a dot-notation path: a name (map key), `*` (any member), or an array index (`[*]` any)."""

    name: str | None = None
    index: int | None = None
    any: bool = False
    raw: str = ""


def _dot_path(text: str) -> tuple[list[Step], int]:
    """The steps of the dot-notation path at the start of `text`, and where the path ends."""
    steps: list[Step] = []
    i = 0
    expect_name = True
    while i < len(text):
        char = text[i]
        if char == "[":
            end = text.find("]", i)
            if end < 0:
                raise ValueError("unclosed `[`")
            inner = text[i + 1:end]
            if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
                steps.append(Step(name=inner[1:-1], raw=text[i:end + 1]))
            elif inner == "*":
                steps.append(Step(any=True, raw="[*]"))
            elif inner.isdigit():
                steps.append(Step(index=int(inner), raw=text[i:end + 1]))
            else:
                raise ValueError(f"`[{inner}]` is neither an index nor a quoted name")
            i = end + 1
            expect_name = False
        elif char == ".":
            if expect_name:
                raise ValueError("empty name in the path")
            i += 1
            expect_name = True
        elif char in "=<>!":
            break
        else:
            if not expect_name:
                raise ValueError(f"`.` expected before {text[i:]!r}")
            end = i
            while end < len(text) and text[end] not in ".[]=<>!":
                end += 1
            name = text[i:end]
            steps.append(Step(any=True, raw="*") if name == "*" else Step(name=name, raw=name))
            i = end
            expect_name = False
    if expect_name:
        raise ValueError("the path ends without an attribute name")
    return steps, i


def render_path(steps: list[Step] | tuple[Step, ...]) -> str:
    out = ""
    for step in steps:
        out += step.raw if step.raw.startswith("[") or not out else "." + step.raw
    return out


# -- filter: expressions ---------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Expression:
    """`colls` is the chain of collection names from the target; `attribute` the path inside the entity."""

    colls: tuple[str, ...]
    attribute: tuple[Step, ...]
    op: str | None
    value: str | None  # None: `null`
    source: str = ""   # as written, for errors

    def relative(self, depth: int) -> str:
        """The expression as written for a request `depth` collections further down."""
        text = ".".join(self.colls[depth:])
        attr = render_path(self.attribute)
        text = f"{text}.{attr}" if text and not attr.startswith("[") else text + attr
        if self.op is None:
            return text
        return f"{text}{self.op}{'null' if self.value is None else self.value}"

    def holds(self, entity: dict[str, Any]) -> bool:
        try:
            return matches(select(entity, self.attribute), self.op, self.value)
        except QueryError as exc:
            raise QueryError("filter", self.source or exc.value, exc.detail) from None


@dataclass(frozen=True, slots=True)
class Filter:
    """One `filter` parameter: expressions that must all hold. `deepest` is the longest collection chain;
    None when two expressions lie on different branches (nothing can satisfy both)."""

    expressions: tuple[Expression, ...]
    deepest: tuple[str, ...] | None


def _expression(text: str, level: Level, prefix: tuple[str, ...]) -> Expression:
    steps, end = _dot_path(text)
    rest = text[end:]
    op = next((o for o in OPERATORS if rest.startswith(o)), None)
    if rest and op is None:
        raise ValueError(f"unknown operator in {rest!r}")
    value: str | None = rest[len(op):] if op is not None else None
    if op is not None and value == "null":
        value = None
    if op in ("<", "<=", ">", ">=") and value is None:
        raise ValueError(f"`{op}` needs a value, not null")
    if op in ("<", "<=", ">", ">=") and len(_chunks(value or "")) > 1:
        raise ValueError(f"a wildcard is only allowed with `=`, `!=` and `<>`, not `{op}`")
    colls: list[str] = list(prefix)
    current = level
    while len(steps) > 1 and steps[0].name is not None and steps[0].name in current.collections():
        current = current.collections()[steps[0].name]
        colls.append(steps[0].name)
        steps = steps[1:]
    if len(steps) == 1 and steps[0].name is not None and steps[0].name in current.collections():
        raise ValueError(f"{steps[0].name!r} is a collection, not an attribute")
    return Expression(tuple(colls), tuple(steps), op, value, text)


def parse_filters(values: list[str], level: Level, prefix: tuple[str, ...] = ()) -> tuple[list[Filter], bool]:
    """The filters of the `filter` parameters, and whether `excludeall` was asked for (alone)."""
    texts = list(values)
    for text in texts:
        if EXCLUDE_ALL in (part.strip() for part in text.split(",")) and text.strip() != EXCLUDE_ALL:
            raise QueryError("filter", text, "`excludeall` cannot be combined with other expressions")
    if any(t.strip() == EXCLUDE_ALL for t in texts):
        if len(texts) > 1:
            raise QueryError("filter", EXCLUDE_ALL, "`excludeall` cannot be combined with other filters")
        return [], True
    filters: list[Filter] = []
    for value in texts:
        expressions = []
        for text in value.split(","):
            if not text.strip():
                raise QueryError("filter", value, "empty expression")
            try:
                expressions.append(_expression(text.strip(), level, prefix))
            except ValueError as exc:
                raise QueryError("filter", text, str(exc)) from None
        deepest = max((e.colls for e in expressions), key=len)
        consistent = all(deepest[:len(e.colls)] == e.colls for e in expressions)
        filters.append(Filter(tuple(expressions), deepest if consistent else None))
    return filters, False


# -- filter: values ---------------------------------------------------------------------------------------------------

def select(value: Any, steps: tuple[Step, ...]) -> list[Any]:
    """Every value the path reaches inside `value` (none when an attribute on the way is missing)."""
    found = [value]
    for step in steps:
        reached: list[Any] = []
        for item in found:
            if step.any:
                reached.extend(item.values() if isinstance(item, dict) else item if isinstance(item, list) else ())
            elif step.index is not None:
                if isinstance(item, list) and step.index < len(item):
                    reached.append(item[step.index])
            elif isinstance(item, dict) and step.name in item:
                reached.append(item[step.name])
        found = reached
    return found


def matches(values: list[Any], op: str | None, value: str | None) -> bool:
    present = [v for v in values if v is not None]
    if op is None or (op in ("!=", "<>") and value is None):
        return bool(present)
    if value == "*" and op in ("=", "!=", "<>"):  # `*` alone: present with any value (core spec "Filter Flag")
        return bool(present) == (op == "=")
    if op == "=" and value is None:
        return not present
    if op in ("!=", "<>"):
        return not any(_equal(v, value or "") for v in present)
    if op == "=":
        return any(_equal(v, value or "") for v in present)
    return any(_compare(v, value or "", op) for v in present)


def _number(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _numeric(text: str) -> float:
    """The filter value compared with a number: numbers are never compared as text (core spec "Filter Flag")."""
    number = _number(text)
    if number is None:
        raise QueryError("filter", text, "a numeric attribute compared with a value that is not a number")
    return number


def _equal(actual: Any, text: str) -> bool:
    if isinstance(actual, bool):
        return text in ("true", "false") and actual == (text == "true")
    if isinstance(actual, (int, float)):
        return actual == _numeric(text)
    if isinstance(actual, str):
        return wildcard_match(text, actual)
    return False  # objects and arrays: a value only compares with scalars


def _compare(actual: Any, text: str, op: str) -> bool:
    left: Any
    right: Any
    if isinstance(actual, bool):
        if text not in ("true", "false"):
            return False
        left, right = actual, text == "true"
    elif isinstance(actual, (int, float)):
        left, right = actual, _numeric(text)
    elif isinstance(actual, str):
        left, right = actual.casefold(), text.casefold()
    else:
        return False
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    return bool(left >= right)


def _chunks(pattern: str) -> list[str]:
    """The literal parts between unescaped `*` (`\\*` is a star, `\\\\` a backslash)."""
    chunks = [""]
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern) and pattern[i + 1] in "*\\":
            chunks[-1] += pattern[i + 1]
            i += 2
            continue
        if char == "*":
            chunks.append("")
        else:
            chunks[-1] += char
        i += 1
    return chunks


def wildcard_match(pattern: str, value: str) -> bool:
    """Case-insensitive equality with `*` wildcards, in time linear in the value for each part (no regex)."""
    chunks = [c.casefold() for c in _chunks(pattern)]
    text = value.casefold()
    if len(chunks) == 1:
        return text == chunks[0]
    first, *middle, last = chunks
    if not text.startswith(first) or len(text) < len(first) + len(last) or not text.endswith(last):
        return False
    position, stop = len(first), len(text) - len(last)
    for chunk in middle:
        found = text.find(chunk, position, stop)
        if found < 0:
            return False
        position = found + len(chunk)
    return True
