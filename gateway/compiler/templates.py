"""Placeholder templates (`/contoso/{site}/sensors/{id}`) compiled into anchored patterns.

Each placeholder matches one or more characters other than `/`, `?` and `#`
(CONFORMANCE.md section 5.4). The patterns hold no nested quantifiers, so
matching stays polynomial in the number of adjacent placeholders.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PLACEHOLDER = re.compile(r"\{([^{}\s]+)\}")
SEGMENT = "[^/?#]+"


@dataclass(frozen=True, slots=True)
class Template:
    text: str
    names: tuple[str, ...]
    pattern: re.Pattern[str]

    def match(self, value: str) -> dict[str, str] | None:
        """Bindings of the placeholders, or None when the value does not fit; a name used twice must agree."""
        found = self.pattern.fullmatch(value)
        if found is None:
            return None
        bindings: dict[str, str] = {}
        for index, name in enumerate(self.names):
            text = found.group(index + 1)
            if bindings.setdefault(name, text) != text:
                return None
        return bindings


def has_placeholders(text: str) -> bool:
    return _PLACEHOLDER.search(text) is not None


def compile_template(text: str) -> Template:
    names: list[str] = []
    parts: list[str] = []
    position = 0
    for found in _PLACEHOLDER.finditer(text):
        parts.append(re.escape(text[position:found.start()]))
        # RFC 6570 level 1 has no operators; strip modifiers written by mistake (`{+x}`, `{x*}`)
        names.append(found.group(1).strip("+#./;?&*").split(":")[0])
        parts.append(f"({SEGMENT})")
        position = found.end()
    parts.append(re.escape(text[position:]))
    return Template(text, tuple(names), re.compile("".join(parts), re.DOTALL))
