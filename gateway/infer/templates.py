"""Varying path segments become `{placeholders}`: what `xgate infer` proposes for `source`, `subject`, topics.

Values are split at `/`. A segment that is the same in every sample stays
literal; one that varies becomes a placeholder, which (validation rule 5.4)
matches one or more characters other than `/`, `?` and `#`, so it is only
proposed where every sample's segment is such a text. Two varying positions
that carry the same text in every sample (the device in `source` and in
`subject`, say) get one name, so the template also says they agree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_BAD_SEGMENT = re.compile(r"[/?#{}]")
# a segment that varies and carries a digit reads as an identifier (b1, dev-4, 0042): a pattern position
_IDENTIFIER = re.compile(r"\d")


def pattern_key(value: str, varying: Sequence[set[str]], separators: str = "/") -> str:
    """`value` with each identifier-like segment that varies across the traffic as `*`: messages that are not
    CloudEvents are grouped by this (one definition per topic or subject pattern)."""
    parts = re.split("([" + re.escape(separators) + "])", value)
    if len(parts) != len(varying):
        return value
    return "".join("*" if len(seen) > 1 and _IDENTIFIER.search(part) else part for part, seen in zip(parts, varying))


def segment_values(values: Sequence[str], separators: str = "/") -> dict[int, list[set[str]]]:
    """For each segment count among `values`, the set of texts each segment position took."""
    by_count: dict[int, list[set[str]]] = {}
    for value in values:
        parts = re.split("([" + re.escape(separators) + "])", value)
        seen = by_count.setdefault(len(parts), [set() for _ in parts])
        for position, part in enumerate(parts):
            seen[position].add(part)
    return by_count


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and len(word) > 3 and not word.endswith("ss") else word


class Placeholders:
    """Template proposals for several fields of the same samples, placeholder names shared among them."""

    def __init__(self) -> None:
        self._names: dict[tuple[str, ...], str] = {}  # the values a placeholder took, sample by sample -> name
        self._taken: set[str] = set()

    def template(self, values: Sequence[str], field: str, separators: str = "/") -> str | None:
        """The template every value fits, or None when the values have no shared shape.

        A field whose values are all equal is no template (the caller declares the value itself). Segments
        are split at each of `separators` (`/`; NATS subjects add `.`), which stay literal.
        """
        if len(set(values)) <= 1:
            return None
        splitter = re.compile("([" + re.escape(separators) + "])")
        split = [splitter.split(value) for value in values]
        if len({len(parts) for parts in split}) != 1:
            return None
        out = []
        for segments in zip(*split):
            if len(set(segments)) == 1:
                if "{" in segments[0] or "}" in segments[0]:
                    return None  # a literal brace would read as a placeholder
                out.append(segments[0])
                continue
            if any(not segment or _BAD_SEGMENT.search(segment) for segment in segments):
                return None
            before = out[-2] if len(out) > 1 else ""  # out[-1] is the separator
            out.append("{" + self._name(tuple(segments), before, field) + "}")
        if len(out) == 1:
            return None  # the whole value varies with no structure around it: a type says as much
        return "".join(out)

    def shared(self, values: Sequence[str]) -> str | None:
        """`{name}` when these whole values are a placeholder already named in another field, else None."""
        name = self._names.get(tuple(values))
        return None if name is None else "{" + name + "}"

    def _name(self, key: tuple[str, ...], before: str, field: str) -> str:
        if key in self._names:
            return self._names[key]
        base = _singular(before) if _NAME.fullmatch(before) else field
        name, number = base, 2
        while name in self._taken:
            name, number = f"{base}{number}", number + 1
        self._names[key] = name
        self._taken.add(name)
        return name
