"""XSD `pattern` facets on a linear-time regex engine.

xmlschema translates each XSD pattern into a Python `re` pattern, and `re`
backtracks: `(a|aa)+` against forty `a`s and a `!` takes seconds, and the
payload chooses the text. XSD regular expressions have no backreferences or
lookaround, so every one fits an automaton: `LinearPattern` runs xmlschema's
translation on the Rust `regex` crate that jsonschema-rs already ships
(`RegexOptions`: time linear in the text), in place of the `re.Pattern`.

The translation (`^(?:X)$(?!\\n\\Z)`) is kept but for its anchors, and for the
escapes it leaves outside character classes, whose Python meanings differ
from XSD's: `\\d` is Unicode Nd in both; `\\s` is XSD's four characters,
`\\w` XSD's "not punctuation, separator or other" (inside classes xmlschema
already spells them out as ranges).
"""

from __future__ import annotations

import re

import jsonschema_rs

_ANCHORED = re.compile(r"\^\(\?:(.*)\)\$\(\?!\\n\\Z\)", re.DOTALL)
_XSD_ESCAPES = {"d": r"\p{Nd}", "D": r"\P{Nd}", "s": "[\t\n\r ]", "S": "[^\t\n\r ]",
                "w": r"[^\p{P}\p{Z}\p{C}]", "W": r"[\p{P}\p{Z}\p{C}]"}


class LinearPattern:
    """Stands in for the `re.Pattern` of one XSD pattern facet: xmlschema only calls `match(text)`."""

    __slots__ = ("_is_valid", "pattern")

    def __init__(self, translated: str) -> None:
        """`translated` is xmlschema's Python pattern; ValueError when the linear engine cannot take it."""
        found = _ANCHORED.fullmatch(translated)
        if found is None:
            raise ValueError(f"unexpected translation {translated!r}")
        self.pattern = translated
        body = _xsd_escapes(found.group(1))
        try:
            validator = jsonschema_rs.Draft202012Validator(
                {"pattern": f"^(?:{body})$"}, pattern_options=jsonschema_rs.RegexOptions())
        except (jsonschema_rs.ValidationError, ValueError) as exc:
            raise ValueError(str(exc).splitlines()[0]) from exc
        self._is_valid = validator.is_valid

    def match(self, text: str) -> LinearPattern | None:
        if not isinstance(text, str):
            raise TypeError(f"expected a string, found {type(text).__name__}")  # as re does
        return self if self._is_valid(text) else None


def _xsd_escapes(pattern: str) -> str:
    """Replace `\\d \\D \\s \\S \\w \\W` outside character classes by their XSD meanings."""
    out: list[str] = []
    in_class = False
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            escaped = pattern[index + 1]
            out.append(_XSD_ESCAPES[escaped] if not in_class and escaped in _XSD_ESCAPES else char + escaped)
            index += 2
            continue
        if char == "[" and not in_class:
            in_class = True
            # a `]` right after `[` or `[^` is a member, not the end
            start = index + 2 if pattern.startswith("[^", index) else index + 1
            if start < len(pattern) and pattern[start] == "]":
                out.append(pattern[index:start + 1])
                index = start + 1
                continue
        elif char == "]" and in_class:
            in_class = False
        out.append(char)
        index += 1
    return "".join(out)
