"""Verdicts and violations: the outcome of judging one message (CONFORMANCE.md section 6)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

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


def truncate(value: Any) -> Any:
    """Keep `actual` short: long strings and bytes are cut, containers summarized."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value)
        text = value[:ACTUAL_LIMIT].decode("utf-8", "replace")
        return text + ("..." if len(value) > ACTUAL_LIMIT else "")
    if isinstance(value, str) and len(value) > ACTUAL_LIMIT:
        return value[:ACTUAL_LIMIT] + "..."
    if isinstance(value, (dict, list)):
        import json

        text = json.dumps(value, default=str)
        return text if len(text) <= ACTUAL_LIMIT else text[:ACTUAL_LIMIT] + "..."
    return value


@dataclass(frozen=True, slots=True)
class Violation:
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


@dataclass(frozen=True, slots=True)
class Verdict:
    outcome: Outcome
    messagegroupid: str | None = None
    messageid: str | None = None
    violations: tuple[Violation, ...] = ()
    events: tuple[Verdict, ...] | None = field(default=None)

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
