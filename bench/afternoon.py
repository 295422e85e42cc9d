"""The reference baseline of issue 21: what an experienced engineer writes in an afternoon instead of xgate.

orjson to read, a dict from the CloudEvents `type` to its definitions, the declared attribute checks and
uritemplates as plain loops over precompiled regexes, and one jsonschema-rs validator per schema, built once.
It reads the Kafka record as a consumer delivers it (headers as (name, bytes) pairs, the value as bytes) and
says conformant with the message id, or nonconformant. It reports no reasons, which is part of why it is cheap.

Scope: what the reference workload's document uses (1.0 shape, `envelopemetadata` with `value`, `required`
and the types string/integer/timestamp/uri/uritemplate, inline `dataschema` or a `#/...` `dataschemauri`).
The bench asserts it gives xgate's verdict (outcome and message id) on every message it times.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

import jsonschema_rs
import orjson

_INT = re.compile(r"[+-]?[0-9]+\Z")
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})\Z")
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s]*\Z")
_PLACEHOLDER = re.compile(r"\{[^}]+\}")


def _integer(value: Any) -> bool:
    if isinstance(value, str):  # binary mode: header text
        return _INT.match(value) is not None and -2**31 <= int(value) < 2**31
    return isinstance(value, int) and not isinstance(value, bool) and -2**31 <= value < 2**31


def _timestamp(value: Any) -> bool:
    if not isinstance(value, str) or _TIMESTAMP.match(value) is None:
        return False
    try:
        datetime.fromisoformat(value.upper())  # Python 3.11 reads a trailing Z
    except ValueError:  # 30 February and friends
        return False
    return True


def _uri(value: Any) -> bool:
    return isinstance(value, str) and _URI.match(value) is not None


def _string(value: Any) -> bool:
    return isinstance(value, str)


_TYPES: dict[str, Callable[[Any], bool]] = {"integer": _integer, "timestamp": _timestamp, "uri": _uri}


def _rule(name: str, spec: dict[str, Any]) -> tuple[str, bool, Callable[[Any], bool], str | None, Any]:
    """(name, required, type check, exact text or None, template regex or None)."""
    value = spec.get("value")
    text = None if value is None else str(value)
    pattern = None
    if text is not None and "{" in text:
        parts = _PLACEHOLDER.split(text)
        pattern = re.compile("[^/?#]+".join(re.escape(p) for p in parts) + r"\Z")
        text = None
    return name, spec.get("required") is True, _TYPES.get(spec.get("type", ""), _string), text, pattern


def _schema(document: dict[str, Any], message: dict[str, Any]) -> Any:
    if isinstance(message.get("dataschema"), dict):
        return message["dataschema"]
    uri = message.get("dataschemauri")
    if not isinstance(uri, str) or not uri.startswith("#/"):
        return None
    node: Any = document
    for step in uri[2:].split("/"):
        node = node[step]
    versions = node["versions"]
    return versions[max(versions, key=int)]["schema"]


class Definition:
    __slots__ = ("messageid", "rules", "valid")

    def __init__(self, messageid: str, rules: list[Any], schema: Any) -> None:
        self.messageid = messageid
        self.rules = rules
        self.valid = jsonschema_rs.validator_for(schema).is_valid if schema is not None else None

    def accepts(self, attributes: dict[str, Any], data: Any) -> bool:
        for name, required, is_type, text, pattern in self.rules:
            actual = attributes.get(name)
            if actual is None:
                if required:
                    return False
                continue
            if not is_type(actual):
                return False
            if pattern is not None:
                if pattern.match(actual) is None:
                    return False
            elif text is not None and str(actual) != text:
                return False
        return self.valid is None or self.valid(data)


class AfternoonValidator:
    """`judge(headers, value)` -> the accepting message id, or None for nonconformant."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.by_type: dict[str, list[Definition]] = {}
        for group in document.get("messagegroups", {}).values():
            for messageid, message in group.get("messages", {}).items():
                metadata = message.get("envelopemetadata", {})
                rules = [_rule(name, spec) for name, spec in metadata.items()]
                kind = metadata.get("type", {}).get("value")
                self.by_type.setdefault(kind, []).append(Definition(messageid, rules, _schema(document, message)))

    def judge(self, headers: Iterable[tuple[str, bytes]], value: bytes) -> str | None:
        attributes: dict[str, Any] = {}
        structured = False
        for name, raw in headers:
            if name.startswith("ce_"):
                attributes[name[3:]] = raw.decode()
            elif name == "content-type":
                text = raw.decode()
                structured = text.startswith("application/cloudevents")
                attributes["datacontenttype"] = text
        try:
            if structured:
                event = orjson.loads(value)
                if not isinstance(event, dict):
                    return None
                data = event.pop("data", None)
                attributes = event
            else:
                data = orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
        if attributes.get("specversion") != "1.0" or not attributes.get("id") or not attributes.get("source"):
            return None
        for definition in self.by_type.get(attributes.get("type"), ()):  # type: ignore[arg-type]
            if definition.accepts(attributes, data):
                return definition.messageid
        return None

    def check_line(self, line: bytes) -> bytes:
        """One recorded message (validation rule 7) in, one verdict line out, as `xgate check` does."""
        record = orjson.loads(line)
        headers = [(name, text.encode()) for name, text in (record.get("headers") or {}).items()]
        messageid = self.judge(headers, (record.get("body") or "").encode())
        verdict = {"verdict": "conformant", "messageid": messageid} if messageid else {"verdict": "nonconformant"}
        return orjson.dumps(verdict) + b"\n"
