"""Judge recorded messages (validation rule 7) against a compiled Ruleset.

`check_stream` is `xgate check`'s loop: a megabyte of lines at a time. With the native core, the chunk's
bytes go to it whole (native/src/check.rs): it reads the plain Kafka lines, judges them on two threads,
writes their verdict lines as orjson writes them and counts them; the lines it hands back (other protocols,
base64 forms, unreadable lines, anything it leaves to Python) are read and judged here and put in their
place. Without the core (or reading a text stream with no bytes beneath), lines are read and judged here,
Kafka ones still batched through gateway/compiler/core.py when it is there. A conformant verdict's line is
made once per message definition and reused; one write per chunk.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

import orjson

from gateway import jsontext
from gateway.compiler import Ruleset
from gateway.compiler.core import RULES, NativeJudge, xgate_core
from gateway.envelope import Envelope
from gateway.limits import MAX_NESTING
from gateway.recorded import RecordError, envelope_from_record
from gateway.verdict import Outcome, Rule, Verdict, Violation


def unreadable(message: str, actual: object) -> Verdict:
    return Verdict(Outcome.NONCONFORMANT, None, None,
                   (Violation("record", Rule.DECODE, "a recorded message (validation rule 7)", actual,
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
    return read if read.__class__ is Verdict else ruleset.classify(read)  # type: ignore[arg-type]


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
    return read if read.__class__ is Verdict else ruleset.classify(read)  # type: ignore[arg-type]


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

    def add_counts(self, ids: list[tuple[str, str]], counts: tuple[list[int], list[int], int, list[int]]) -> None:
        """Verdicts the native checker counted: per definition (conformant, nonconformant), unmatched, per rule."""
        conformant, nonconformant, unmatched, rules = counts
        for outcome, numbers in (("conformant", conformant), ("nonconformant", nonconformant)):
            for number, count in enumerate(numbers):
                if count:
                    group, message = ids[number]
                    self.total += count
                    self.by_verdict[outcome] += count
                    self.by_message[(outcome, group or "", message)] += count
        if unmatched:
            self.total += unmatched
            self.unmatched += unmatched
            self.by_verdict["nonconformant"] += unmatched
            self.by_message[("nonconformant", UNMATCHED_LABEL, "")] += unmatched
        for number, count in enumerate(rules):
            if count:
                self.by_rule[RULES[number].value] += count

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
            # ties by name: the counts' order of arrival differs between the native checker and Python
            for rule, count in sorted(self.by_rule.items(), key=lambda item: (-item[1], item[0])):
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
    """One verdict as a JSON line (validation rule 7)."""
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


def native_checker(judge: NativeJudge, endpoint: str | None) -> Any:
    """The core's checker of recorded lines (native/src/check.rs) with the text it repeats, or None without
    the core. A line naming no endpoint is judged on `endpoint`, else on the registry's default one."""
    if not judge.available or judge.plan is None:
        return None
    ruleset = judge.ruleset
    if endpoint is None:
        rules = ruleset.default_endpoint()
        endpoint = rules.endpoint_id if rules is not None else None
    kafka = [False] * len(judge.positions)
    for endpoint_id, position in judge.positions.items():
        kafka[position] = ruleset.endpoints[endpoint_id].protocol == "KAFKA"
    heads = [orjson.dumps(Verdict(Outcome.NONCONFORMANT, group, message).as_dict())[:-2].decode()
             for group, message in [*judge.ids, (None, None)]]
    # a constant orjson does not write (an integer past 64 bits): json.dumps writes such lines, here
    rule_names, constants = judge.violation_tables()
    return xgate_core.Checker(judge.core, judge.positions.get(endpoint) if endpoint is not None else None, kafka,
                              [verdict_line(verdict).decode() for verdict in judge.conformant], heads,
                              rule_names, constants, _threads())


def _threads() -> int:
    """The cores this process may run on (at most 4: a chunk of a megabyte is not worth more threads)."""
    affinity = getattr(os, "sched_getaffinity", None)  # Linux; elsewhere the machine's count
    return min(len(affinity(0)) if affinity is not None else os.cpu_count() or 1, 4)


def check_stream(ruleset: Ruleset, source: IO[str], out: ByteSink | None, summary: Summary,
                 endpoint: str | None = None, tick: Callable[[Summary], Any] | None = None) -> None:
    """Judge every non-blank line of `source`, count it in `summary` and (with `out`) write its verdict line.
    A chunk of lines is judged at once: by the native checker when there is one and `source` has bytes
    beneath it, else here (its Kafka messages in one call of the native core per endpoint)."""
    judge = NativeJudge(ruleset)
    raw = getattr(source, "buffer", None)
    checker = native_checker(judge, endpoint) if raw is not None else None
    if raw is None or checker is None:
        _check_text(judge, source, out, summary, endpoint, tick)
        return
    rest = b""
    while True:
        block = raw.read(CHUNK_BYTES)
        data = rest + block if rest else block
        if block:
            cut = data.rfind(b"\n") + 1
            if not cut:  # no line ends in this megabyte: read on
                rest = data
                continue
            chunk, rest = data[:cut], data[cut:]
        elif not data:
            return
        else:
            chunk, rest = data, b""
        segments, deferred, counts = checker.check(chunk, out is not None)
        summary.add_counts(judge.ids, counts)
        written = _judge_handed_back(judge, segments, deferred, summary, endpoint, out is not None)
        if out is not None:
            out.write(written)
        if tick is not None:
            tick(summary)


def _judge_handed_back(judge: NativeJudge, segments: list[bytes], deferred: list[bytes], summary: Summary,
                       endpoint: str | None, write: bool) -> bytes:
    """The lines the checker handed back, judged here and their verdict lines put in their places."""
    if not deferred:
        return segments[0] if write else b""
    texts = [line.decode("utf-8", "surrogateescape") for line in deferred]
    read = [None if text.isspace() else read_line(judge.ruleset, text, endpoint) for text in texts]
    judged = iter(judge.judge([item for item in read if isinstance(item, Envelope)]))
    pieces = [segments[0]]
    for item, after in zip(read, segments[1:]):
        if item is not None:
            verdict = item if isinstance(item, Verdict) else next(judged)
            summary.add(verdict)
            if write:
                pieces.append(verdict_line(verdict))
        pieces.append(after)
    return b"".join(pieces) if write else b""


def _check_text(judge: NativeJudge, source: IO[str], out: ByteSink | None, summary: Summary, endpoint: str | None,
                tick: Callable[[Summary], Any] | None) -> None:
    """`check_stream` over text: lines read and judged here."""
    ruleset = judge.ruleset
    while True:
        lines = source.readlines(CHUNK_BYTES)
        if not lines:
            return
        read = [read_line(ruleset, line, endpoint) for line in lines if line and not line.isspace()]
        judged = iter(judge.judge([item for item in read if item.__class__ is not Verdict]))  # type: ignore[misc]
        written: list[bytes] = []
        for item in read:
            verdict = item if item.__class__ is Verdict else next(judged)
            summary.add(verdict)
            if out is not None:
                written.append(verdict_line(verdict))
        if out is not None:
            out.write(b"".join(written))
        if tick is not None:
            tick(summary)
