"""Verdicts and violations: the outcome of judging one message (validation rule 6)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from enum import Enum
from typing import Any, NamedTuple

ACTUAL_LIMIT = 120


class Outcome(str, Enum):
    CONFORMANT = "conformant"
    NONCONFORMANT = "nonconformant"


class Rule(str, Enum):
    REQUIRED = "required"
    TYPE = "type"
    VALUE = "value"
    TEMPLATE = "template"
    PLACEHOLDER = "placeholder"
    SPECVERSION = "specversion"
    ATTRIBUTE_NAME = "attribute-name"
    CONTENT_TYPE = "content-type"
    SCHEMA = "schema"
    DECODE = "decode"
    NO_MATCH = "no-match"
    ENDPOINT = "endpoint"
    # a message past one of gateway/limits.py's limits (size, headers, nesting): judged no further
    LIMIT = "limit"


def truncate(value: Any) -> Any:
    """Keep `actual` short: long strings and bytes are cut, containers summarized."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value[:ACTUAL_LIMIT + 1])
        text = value[:ACTUAL_LIMIT].decode("utf-8", "replace")
        return text + ("..." if len(value) > ACTUAL_LIMIT else "")
    if isinstance(value, str) and len(value) > ACTUAL_LIMIT:
        return value[:ACTUAL_LIMIT] + "..."
    if isinstance(value, (dict, list, tuple)):
        text = _json_preview(value, ACTUAL_LIMIT)
        return text if len(text) <= ACTUAL_LIMIT else text[:ACTUAL_LIMIT] + "..."
    return value


def _json_preview(value: Any, limit: int) -> str:
    """`json.dumps(value, default=str)` up to a little past `limit` characters. Written without recursion and
    stopping early, so a payload nested thousands deep or megabytes long costs the same as a small one."""
    parts: list[str] = []
    size = 0
    for token in _json_tokens(value):
        parts.append(token)
        size += len(token)
        if size > limit:
            break
    return "".join(parts)


def _json_tokens(value: Any) -> Iterator[str]:
    # a stack of open containers, each an iterator over its (separator, key text or None, child) entries
    stack: list[tuple[Iterator[tuple[str, str | None, Any]], str]] = []
    pending: Any = value
    while True:
        if isinstance(pending, dict):
            yield "{"
            items = pending.items()
            stack.append((((", " if n else "", k if isinstance(k, str) else str(k), v)
                           for n, (k, v) in enumerate(items)), "}"))
        elif isinstance(pending, (list, tuple)):
            yield "["
            values = pending
            stack.append((((", " if n else "", None, v) for n, v in enumerate(values)), "]"))
        else:
            yield _scalar(pending)
        while stack:
            entries, closing = stack[-1]
            entry = next(entries, None)
            if entry is not None:
                separator, key, pending = entry
                yield separator if key is None else separator + _scalar(key) + ": "
                break
            stack.pop()
            yield closing
        else:
            return


# json.dumps's own C string encoder (ensure_ascii): the same text, without json.dumps's per-call setup
_JSON_STRING = json.encoder.encode_basestring_ascii
_JSON_LITERALS = {None: "null", True: "true", False: "false"}


def _scalar(value: Any) -> str:
    """What `json.dumps(value, default=str)` writes; the common JSON scalars without the call (a preview
    writes a few dozen of them for every failed message)."""
    cls = value.__class__
    if cls is str:
        return _JSON_STRING(value if len(value) <= ACTUAL_LIMIT else value[:ACTUAL_LIMIT + 1])
    if cls is int and -(10**15) < value < 10**15:
        return int.__repr__(value)
    if cls is float and -1e15 < value < 1e15:  # finite (NaN fails the comparison)
        return float.__repr__(value)
    if value is None or cls is bool:
        return _JSON_LITERALS[value]
    if isinstance(value, str) and len(value) > ACTUAL_LIMIT:
        value = value[:ACTUAL_LIMIT + 1]
    try:
        return json.dumps(value, default=str)
    except ValueError:  # a float json cannot write; never raised for str/int/bool/None
        return str(value)


# Tuples with names: made for every failed message, a tuple is built in one C call where a frozen dataclass
# set each field through a descriptor (a failed record's Verdict and Violation cost half as much to make),
# and a tuple is immutable all the same.


class Violation(NamedTuple):
    path: str
    rule: Rule
    expected: Any
    actual: Any
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "rule": self.rule.value,
            "expected": self.expected,
            "actual": truncate(self.actual),
            "message": self.message,
        }


class Verdict(NamedTuple):
    outcome: Outcome
    messagegroupid: str | None = None
    messageid: str | None = None
    violations: tuple[Violation, ...] = ()
    events: tuple[Verdict, ...] | None = None

    @property
    def conformant(self) -> bool:
        return self.outcome is Outcome.CONFORMANT

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "verdict": self.outcome.value,
            "messagegroupid": self.messagegroupid,
            "messageid": self.messageid,
        }
        out["violations"] = [v.as_dict() for v in self.violations]
        if self.events is not None:
            out["events"] = [e.as_dict() for e in self.events]
        return out


def conformant(group_id: str, message_id: str) -> Verdict:
    return Verdict(Outcome.CONFORMANT, group_id, message_id)
