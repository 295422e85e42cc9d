"""Placeholder templates (`/contoso/{site}/sensors/{id}`), matched in time linear in the value.

Each placeholder matches one or more characters other than `/`, `?` and `#`
(validation rule 5.4); a name used twice in one template must repeat
the same text. A backtracking regex (`([^/?#]+)\\.([^/?#]+)...`) would try
every split of a value such as `a.a.a.a...a!` against `{a}.{b}.{c}.{d}`: a
time polynomial of the placeholder count's degree, seconds for one hostile
header. Matching rests on three rules instead:

1. Placeholders never contain `/`, `?` or `#`, so the value's delimiters must
   be exactly the template's, in order: splitting both at them pairs each
   *piece* of the template with one piece of the value. When no piece holds
   two placeholders (`/sites/{site}/devices/{device}`, the usual shape),
   every placeholder's text is forced by its piece, and the regex, which
   can never cross a delimiter, has nothing to choose: it runs in linear
   time at C speed and is used.
2. In a piece with several placeholders, the template is literals around
   placeholders, a glob with `+` wildcards. Placing each literal at its
   rightmost possible position, from the last to the first, finds a split
   whenever one exists (any split has every literal at or left of that
   position), with one `str.rfind` per placeholder: O(placeholders x value
   length). Earlier placeholders get the longest texts, as the greedy regex
   gives them.
3. Only when a repeated name binds two texts on that split is another split
   searched, for one where every use of the name agrees (a template such as
   `{id}:{id}` against `a:b:a:b`). In general that search is NP-hard, so it
   stops after SEARCH_BUDGET steps; not finding one is a `placeholder`
   violation, the same as there being none.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_PLACEHOLDER = re.compile(r"\{([^{}\s]+)\}")
_DELIMITER = re.compile(r"[/?#]")
_DELIMITER_KEPT = re.compile(r"([/?#])")
SEGMENT = "[^/?#]+"
# steps of the search for a consistent split (rule 3); each step is one `rfind` or `startswith`
SEARCH_BUDGET = 1000


def bind_agreeing(bindings: dict[str, str], names: tuple[str, ...], texts: tuple[str, ...]) -> bool:
    """Add each placeholder's text to `bindings`; False as soon as a name is already bound to another text
    (a placeholder used in two templates of one definition must take one value)."""
    for name, text in zip(names, texts):
        if bindings.setdefault(name, text) != text:
            return False
    return True


@dataclass(frozen=True, slots=True)
class _Piece:
    """The template between two delimiters: `literals[0] {names[0]} literals[1] ... {names[-1]} literals[-1]`."""

    literals: tuple[str, ...]
    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Template:
    text: str
    # every placeholder name once, in order of first use
    names: tuple[str, ...]
    # the delimiter characters of the template, in order, and the pieces between them
    delimiters: tuple[str, ...]
    pieces: tuple[_Piece, ...]
    repeated: bool
    # rule 1: when every piece holds at most one placeholder, one group per name (a backreference for a name
    # used again) and, when a name repeats, `loose`: one group per use
    forced: re.Pattern[str] | None
    loose: re.Pattern[str] | None

    def match(self, value: str) -> dict[str, str] | None:
        """Bindings of the placeholders, or None when the value does not fit; a name used twice must agree."""
        if self.forced is not None:
            found = self.forced.fullmatch(value)
            return dict(zip(self.names, found.groups())) if found is not None else None
        parts = self._parts(value)
        if parts is None:
            return None
        bindings: dict[str, str] = {}
        consistent = True
        for piece, part in zip(self.pieces, parts):
            texts = _split(piece, part)
            if texts is None:
                return None
            for name, text in zip(piece.names, texts):
                if bindings.setdefault(name, text) != text:
                    consistent = False
        if consistent:
            return bindings
        return _Search(self.pieces, parts).run()

    def conflicts(self, value: str) -> bool:
        """True when the value fits the template's shape only by binding one name to two different texts."""
        if not self.repeated:
            return False
        if self.loose is not None:
            return self.loose.fullmatch(value) is not None and self.match(value) is None
        parts = self._parts(value)
        if parts is None or any(_split(p, part) is None for p, part in zip(self.pieces, parts)):
            return False
        return self.match(value) is None

    def _parts(self, value: str) -> list[str] | None:
        """The value's pieces, when its delimiters are the template's."""
        split = _DELIMITER_KEPT.split(value)
        if tuple(split[1::2]) != self.delimiters:
            return None
        return split[0::2]


def _split(piece: _Piece, text: str) -> list[str] | None:
    """The texts of the piece's placeholders on the split with every literal rightmost, or None (rule 2)."""
    literals = piece.literals
    first, last = literals[0], literals[-1]
    count = len(piece.names)
    if count == 0:
        return [] if text == first else None
    start, end = len(first), len(text) - len(last)
    if end - start < count or not text.startswith(first) or not text.endswith(last):
        return None
    # ends[i]: where placeholder i ends (its literal begins), from the last placeholder to the first
    ends = [0] * count
    ends[-1] = end
    for index in range(count - 1, 0, -1):
        # rightmost, leaving a character for placeholder `index` after it and one for each placeholder before
        position = text.rfind(literals[index], start + index, ends[index] - 1)
        if position < 0:
            return None
        ends[index - 1] = position
    texts = []
    begin = start
    for index in range(count):
        texts.append(text[begin:ends[index]])
        begin = ends[index] + len(literals[index + 1])
    return texts


class _Search:
    """Rule 3: a split of every piece on which each repeated name binds one text, tried in the greedy order
    (earlier placeholders longer first), within SEARCH_BUDGET steps."""

    def __init__(self, pieces: tuple[_Piece, ...], parts: list[str]) -> None:
        self.pieces = pieces
        self.parts = parts
        self.steps = 0

    def run(self) -> dict[str, str] | None:
        return self._piece(0, {})

    def _piece(self, number: int, bindings: dict[str, str]) -> dict[str, str] | None:
        if number == len(self.pieces):
            return bindings
        piece = self.pieces[number]
        text = self.parts[number]
        if not text.startswith(piece.literals[0]):
            return None
        return self._placeholder(number, 0, len(piece.literals[0]), bindings)

    def _placeholder(self, number: int, index: int, begin: int, bindings: dict[str, str]) -> dict[str, str] | None:
        piece, text = self.pieces[number], self.parts[number]
        if index == len(piece.names):
            return self._piece(number + 1, bindings) if begin == len(text) else None
        name, literal = piece.names[index], piece.literals[index + 1]
        final = index == len(piece.names) - 1
        for end in self._ends(text, begin, literal, final, bindings.get(name)):
            self.steps += 1
            if self.steps > SEARCH_BUDGET:
                return None
            bound = text[begin:end]
            if bindings.get(name, bound) != bound:
                continue
            found = self._placeholder(number, index + 1, end + len(literal), {**bindings, name: bound})
            if found is not None:
                return found
        return None

    @staticmethod
    def _ends(text: str, begin: int, literal: str, final: bool, bound: str | None) -> Iterator[int]:
        """Where the placeholder starting at `begin` may end, longest first (lazily: each one is a step)."""
        if bound is not None:
            end = begin + len(bound)
            if text.startswith(bound, begin) and (end + len(literal) == len(text) if final else
                                                  text.startswith(literal, end)):
                yield end
            return
        if final:
            end = len(text) - len(literal)
            if end > begin and text.endswith(literal):
                yield end
            return
        right = len(text)
        while (position := text.rfind(literal, begin + 1, right)) >= 0:
            yield position
            right = position + len(literal) - 1


def has_placeholders(text: str) -> bool:
    return _PLACEHOLDER.search(text) is not None


def compile_template(text: str) -> Template:
    names: list[str] = []
    uses: list[str] = []
    pieces: list[_Piece] = []
    literals: list[str] = []
    piece_names: list[str] = []
    literal = ""
    position = 0

    def add_literal(chunk: str) -> None:
        # a literal may hold delimiters: each one closes the current piece
        nonlocal literal
        for index, part in enumerate(_DELIMITER.split(chunk)):
            if index:
                pieces.append(_Piece(tuple(literals) + (literal,), tuple(piece_names)))
                literals.clear()
                piece_names.clear()
                literal = ""
            literal += part

    for found in _PLACEHOLDER.finditer(text):
        add_literal(text[position:found.start()])
        # RFC 6570 level 1 has no operators; strip modifiers written by mistake (`{+x}`, `{x*}`)
        name = found.group(1).strip("+#./;?&*").split(":")[0]
        if name not in names:
            names.append(name)
        uses.append(name)
        literals.append(literal)
        literal = ""
        piece_names.append(name)
        position = found.end()
    add_literal(text[position:])
    pieces.append(_Piece(tuple(literals) + (literal,), tuple(piece_names)))
    # only literals hold delimiters (a name may be written `{?q}`)
    delimiters = tuple(_DELIMITER.findall(_PLACEHOLDER.sub("", text)))
    repeated = len(uses) > len(names)
    forced = loose = None
    if all(len(piece.names) <= 1 for piece in pieces):
        forced = _regex(pieces, delimiters, names, backreferences=True)
        loose = _regex(pieces, delimiters, names, backreferences=False) if repeated else None
    return Template(text, tuple(names), delimiters, tuple(pieces), repeated, forced, loose)


def _regex(pieces: list[_Piece], delimiters: tuple[str, ...], names: list[str], *,
           backreferences: bool) -> re.Pattern[str]:
    """Rule 1's pattern: pieces of at most one placeholder each, joined by their delimiters."""
    parts: list[str] = []
    seen: list[str] = []
    for number, piece in enumerate(pieces):
        if number:
            parts.append(re.escape(delimiters[number - 1]))
        parts.append(re.escape(piece.literals[0]))
        for name, literal in zip(piece.names, piece.literals[1:]):
            if backreferences and name in seen:
                parts.append(f"(?:\\{names.index(name) + 1})")
            else:
                seen.append(name)
                parts.append(f"({SEGMENT})" if backreferences else f"(?:{SEGMENT})")
            parts.append(re.escape(literal))
    return re.compile("".join(parts), re.DOTALL)
