"""Judge recorded messages (CONFORMANCE.md section 7) against a compiled Ruleset.

`check_stream` is `xgate check`'s loop: lines read a megabyte at a time and judged together (Kafka messages
by the native core, gateway/compiler/core.py), each verdict written as one orjson line (a conformant
verdict's line is made once per message definition and reused), one write per chunk.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

import orjson

from gateway import jsontext
from gateway.compiler import Ruleset
from gateway.compiler.core import NativeJudge
from gateway.envelope import Envelope
from gateway.limits import MAX_NESTING
from gateway.recorded import RecordError, envelope_from_record
from gateway.verdict import Outcome, Rule, Verdict, Violation


def unreadable(message: str, actual: object) -> Verdict:
    return Verdict(Outcome.NONCONFORMANT, None, None,
                   (Violation("record", Rule.DECODE, "a recorded message (CONFORMANCE.md section 7)", actual,
                              message),))


def read_record(ruleset: Ruleset, record: object, endpoint: str | None = None) -> Envelope | Verdict:
    """The Envelope of one recorded message, or the `decode` verdict of one that is not a recorded message."""
    default_protocol = None
    name = record.get("endpoint", endpoint) if isinstance(record, dict) else endpoint
    # a name that is not a string is refused by envelope_from_record below
    rules = ruleset.endpoints.get(name) if isinstance(name, str) and name else \
        ruleset.default_endpoint() if not name else None
    if rules is not None:
        default_protocol = rules.protocol
    try:
        return envelope_from_record(record, endpoint, default_protocol)
    except RecordError as exc:
        return unreadable(str(exc), record if not isinstance(record, dict) else None)


def judge_record(ruleset: Ruleset, record: object, endpoint: str | None = None) -> Verdict:
    read = read_record(ruleset, record, endpoint)
    return read if read.__class__ is Verdict else ruleset.classify(read)  # type: ignore[return-value,arg-type]


def read_line(ruleset: Ruleset, line: str, endpoint: str | None = None) -> Envelope | Verdict:
    """One line's Envelope; a line that is not a recorded message is a `decode` verdict."""
    try:
        record = jsontext.loads(line)  # as bodies are read: orjson first, strict JSON, at most 128 levels deep
    except jsontext.TooDeep:
        return unreadable(f"line nests deeper than {MAX_NESTING} levels", line.strip())
    except ValueError as exc:
        return unreadable(f"line is not valid JSON: {exc}", line.strip())
    return read_record(ruleset, record, endpoint)


def judge_line(ruleset: Ruleset, line: str, endpoint: str | None = None) -> Verdict:
    """The verdict of one line; a line that is not a recorded message is a `decode` verdict."""
    read = read_line(ruleset, line, endpoint)
    return read if read.__class__ is Verdict else ruleset.classify(read)  # type: ignore[return-value,arg-type]


def judge_lines(ruleset: Ruleset, lines: Iterable[str], endpoint: str | None = None) -> Iterator[Verdict]:
    """One verdict per non-blank line, in order."""
    for line in lines:
        if line.strip():
            yield judge_line(ruleset, line, endpoint)


UNMATCHED_LABEL = "(unmatched: no message named)"


@dataclass
class Summary:
    """Counts for `--format table` and progress reports.

    `unmatched` counts the nonconformant verdicts that name no message (rule `no-match`, a `limit`, an
    unreadable record): what `xgate run` routes to a route's `unmatched` destination (runtime/router.py)."""

    total: int = 0
    unmatched: int = 0
    by_verdict: Counter[str] = field(default_factory=Counter)
    by_message: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    by_rule: Counter[str] = field(default_factory=Counter)

    def add(self, verdict: Verdict) -> None:
        self.total += 1
        self.by_verdict[verdict.outcome.value] += 1
        if verdict.messageid is None:
            self.unmatched += verdict.outcome is Outcome.NONCONFORMANT
            self.by_message[(verdict.outcome.value, UNMATCHED_LABEL, "")] += 1
        else:
            self.by_message[(verdict.outcome.value, verdict.messagegroupid or "", verdict.messageid)] += 1
        for violation in verdict.violations:
            self.by_rule[violation.rule.value] += 1

    def render(self) -> str:
        lines = [f"messages: {self.total}"]
        for outcome in ("conformant", "nonconformant"):
            lines.append(f"  {outcome:<14} {self._count(self.by_verdict.get(outcome, 0))}")
        lines.append(f"    {'unmatched':<12} {self._count(self.unmatched)}  (nonconformant, no message named: "
                     "`run` routes these as unmatched)")
        if self.by_message:
            lines.append("by message definition:")
            names = {key: f"{key[1]}/{key[2]}" if key[2] else key[1] for key in self.by_message}
            width = max(len(name) for name in names.values())
            for key, count in sorted(self.by_message.items(), key=lambda item: (-item[1], item[0])):
                lines.append(f"  {key[0]:<14} {names[key]:<{width}} {count:>8}")
        if self.by_rule:
            lines.append("violations by rule:")
            for rule, count in self.by_rule.most_common():
                lines.append(f"  {rule:<14} {count:>8}")
        return "\n".join(lines)

    def _count(self, count: int) -> str:
        share = f" ({100 * count / self.total:.1f}%)" if self.total else ""
        return f"{count:>8}{share}"


class ByteSink(Protocol):
    """Where verdict lines go: a binary stream, or a wrapper writing them to a text one."""

    def write(self, data: bytes, /) -> object: ...


CHUNK_BYTES = 1 << 20
_CONFORMANT_LINES: dict[tuple[str | None, str | None], bytes] = {}


def verdict_line(verdict: Verdict) -> bytes:
    """One verdict as a JSON line (CONFORMANCE.md section 7)."""
    if verdict.conformant and verdict.events is None:
        key = (verdict.messagegroupid, verdict.messageid)
        line = _CONFORMANT_LINES.get(key)
        if line is None:
            line = orjson.dumps(verdict.as_dict()) + b"\n"
            if len(_CONFORMANT_LINES) < 4096:  # bounded: message ids come from the registry
                _CONFORMANT_LINES[key] = line
        return line
    try:
        return orjson.dumps(verdict.as_dict(), default=str) + b"\n"
    except TypeError:  # an integer past 64 bits in `expected` or `actual`: json writes any integer
        return (json.dumps(verdict.as_dict(), default=str) + "\n").encode("utf-8", "surrogateescape")


def check_stream(ruleset: Ruleset, source: IO[str], out: ByteSink | None, summary: Summary,
                 endpoint: str | None = None, tick: Callable[[Summary], Any] | None = None) -> None:
    """Judge every non-blank line of `source`, count it in `summary` and (with `out`) write its verdict line.
    A chunk of lines is judged at once: its Kafka messages in one call of the native core per endpoint."""
    judge = NativeJudge(ruleset)
    while True:
        lines = source.readlines(CHUNK_BYTES)
        if not lines:
            return
        read = [read_line(ruleset, line, endpoint) for line in lines if line and not line.isspace()]
        judged = iter(judge.judge([item for item in read if item.__class__ is not Verdict]))  # type: ignore[misc]
        written: list[bytes] = []
        for item in read:
            verdict = item if item.__class__ is Verdict else next(judged)
            summary.add(verdict)  # type: ignore[arg-type]
            if out is not None:
                written.append(verdict_line(verdict))  # type: ignore[arg-type]
        if out is not None:
            out.write(b"".join(written))
        if tick is not None:
            tick(summary)
