"""Placeholder templates (`/contoso/{site}/sensors/{id}`) compiled into anchored patterns.

Each placeholder matches one or more characters other than `/`, `?` and `#`
(CONFORMANCE.md section 5.4). A name used twice in one template is a
backreference, so the value must repeat the same text there. The patterns
hold no nested quantifiers, so matching stays polynomial in the number of
adjacent placeholders.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PLACEHOLDER = re.compile(r"\{([^{}\s]+)\}")
SEGMENT = "[^/?#]+"


@dataclass(frozen=True, slots=True)
class Template:
    text: str
    # one name per capturing group: the first use of each placeholder name, in order
    names: tuple[str, ...]
    pattern: re.Pattern[str]
    # every use its own group (None when no name repeats): tells "one name, two texts" from "does not fit"
    loose: re.Pattern[str] | None = None

    def match(self, value: str) -> dict[str, str] | None:
        """Bindings of the placeholders, or None when the value does not fit; a name used twice must agree."""
        found = self.pattern.fullmatch(value)
        if found is None:
            return None
        return dict(zip(self.names, found.groups()))  # one capturing group per name, in order

    def conflicts(self, value: str) -> bool:
        """True when the value fits the template's shape only by binding one name to two different texts."""
        return self.loose is not None and self.pattern.fullmatch(value) is None and \
            self.loose.fullmatch(value) is not None


def has_placeholders(text: str) -> bool:
    return _PLACEHOLDER.search(text) is not None


def compile_template(text: str) -> Template:
    names: list[str] = []
    parts: list[str] = []
    loose: list[str] = []
    position = 0
    for found in _PLACEHOLDER.finditer(text):
        literal = re.escape(text[position:found.start()])
        parts.append(literal)
        loose.append(literal)
        # RFC 6570 level 1 has no operators; strip modifiers written by mistake (`{+x}`, `{x*}`)
        name = found.group(1).strip("+#./;?&*").split(":")[0]
        if name in names:
            parts.append(f"(?:\\{names.index(name) + 1})")
        else:
            names.append(name)
            parts.append(f"({SEGMENT})")
        loose.append(f"(?:{SEGMENT})")
        position = found.end()
    tail = re.escape(text[position:])
    parts.append(tail)
    loose.append(tail)
    repeated = len(names) < len(_PLACEHOLDER.findall(text))
    return Template(text, tuple(names), re.compile("".join(parts), re.DOTALL),
                    re.compile("".join(loose), re.DOTALL) if repeated else None)
