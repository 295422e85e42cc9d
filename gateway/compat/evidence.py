"""Traffic as evidence for each document change: which recorded messages changed verdict because of it.

A message whose verdict changed (tightened: its new violations say why; loosened: its old ones do) is laid
against the document changes of the definition its verdicts name: a change explains it when one of those
violations sits where the change is (the same path, one inside the other; `*` in a change's path stands for
any member or item), or when the definition itself was removed (a message the old contract named and the new
one cannot match) or added. A message one change alone explains counts as that change's own; one several
explain counts for each, and one none explains is left to the report of verdict changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.compat.change import Change
from gateway.pointers import escape
from gateway.verdict import Verdict, Violation

EXAMPLES_KEPT = 3


@dataclass
class Measured:
    messages: int = 0
    alone: int = 0
    lines: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"messages": self.messages, "alone": self.alone, "lines": self.lines}


def _segments(path: str) -> list[str]:
    head, _, pointer = path.partition(":/") if ":/" in path else (path, "", "")
    return [head, *pointer.split("/")] if pointer else [head.rstrip(":")]


def _related(change_path: str, violation_path: str) -> bool:
    """One path inside the other (or the same), a `*` segment matching any one segment."""
    ours, theirs = _segments(change_path), _segments(violation_path)
    return all(a == b or a == "*" or b == "*" for a, b in zip(ours, theirs, strict=False))


def _where(violation: Violation) -> str:
    """Where a violation sits; a missing member is placed at the member (a JSON Schema `required` error sits on
    the object that lacks it, and names the member in `expected`)."""
    expected = str(violation.expected)
    if violation.path.startswith("dataschema:") and expected.startswith('required: "') and expected.endswith('"'):
        member = expected.removeprefix('required: "').removesuffix('"')
        return f"{violation.path.rstrip('/')}/{escape(member)}"
    return violation.path


def _definition(verdict: Verdict) -> str | None:
    return f"{verdict.messagegroupid}/{verdict.messageid}" if verdict.messageid is not None else None


class Evidence:
    def __init__(self, changes: list[Change]) -> None:
        self.changes = changes
        self.measured = [Measured() for _ in changes]
        self.unexplained = 0

    def add(self, number: int, old: Verdict, new: Verdict) -> None:
        """One message's verdicts under the old and the new registry (numbered from 1), changed or not."""
        if old.conformant == new.conformant:
            return
        named = {_definition(old), _definition(new)} - {None}
        reasons = new.violations if old.conformant else old.violations
        explaining = []
        for index, change in enumerate(self.changes):
            if change.definition not in named:
                continue
            whole = change.kind in ("removed", "added") and not change.path  # the definition itself
            if whole or any(_related(change.path, _where(violation)) for violation in reasons):
                explaining.append(index)
        if not explaining:
            self.unexplained += 1
        for index in explaining:
            measured = self.measured[index]
            measured.messages += 1
            measured.alone += len(explaining) == 1
            if len(measured.lines) < EXAMPLES_KEPT:
                measured.lines.append(number)
