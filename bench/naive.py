"""The naive baseline of issue 6: what a user would write instead of xgate.

Each recorded Kafka message is decoded with the cloudevents SDK (2.2, `cloudevents.core.bindings.kafka`,
which tells binary from structured mode by the presence of `ce_` headers), then every definition of the
registry is tried in turn: declared attributes (required, typed, exact values, a regex per uritemplate) and
`jsonschema.validate` on the data. Conformant when one definition accepts the event.

Deliberately plain: no dispatch on `type`, no compiled validators, exceptions for control flow. By default
the payload goes through `jsonschema.validate(data, schema)` exactly as its docs show it, which checks the
schema against the draft-07 meta-schema and builds a validator on every call (about 80% of this baseline's
time); `recheck_schemas=False` keeps the per-message validator but skips that check, the cheapest form that
still compiles nothing ahead. Known blind spots, inherited from the SDK: a missing `id`, `specversion` or
`time` is filled in before any check can see it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlparse

import jsonschema
from cloudevents.core.bindings.kafka import KafkaMessage, from_kafka_event


def _is_integer(value: Any) -> bool:
    # binary mode carries header text, structured mode JSON numbers
    if isinstance(value, str):
        return value.lstrip("-").isdigit()
    return isinstance(value, int) and not isinstance(value, bool)


def _is_timestamp(value: Any) -> bool:
    # the SDK already parsed `time` into a datetime (or refused the event)
    return isinstance(value, datetime) and value.tzinfo is not None


def _is_uri(value: Any) -> bool:
    return isinstance(value, str) and bool(urlparse(value).scheme)


_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "integer": _is_integer,
    "timestamp": _is_timestamp,
    "uri": _is_uri,
}


def _is_string(value: Any) -> bool:
    return isinstance(value, str)


def _template_regex(template: str) -> re.Pattern[str]:
    """`/fleet/{region}/vehicles/{id}` -> `/fleet/[^/]+/vehicles/[^/]+`."""
    parts = re.split(r"\{[^}]+\}", template)
    return re.compile("[^/]+".join(re.escape(part) for part in parts))


@dataclass(frozen=True)
class _Attribute:
    name: str
    required: bool
    is_type: Callable[[Any], bool]
    value: str | None
    pattern: re.Pattern[str] | None

    def accepts(self, attributes: dict[str, Any]) -> bool:
        actual = attributes.get(self.name)
        if actual is None:
            return not self.required
        if not self.is_type(actual):
            return False
        if self.pattern is not None:
            return self.pattern.fullmatch(str(actual)) is not None
        return self.value is None or str(actual) == self.value


def _validate_without_schema_check(data: Any, schema: dict[str, Any]) -> None:
    jsonschema.validators.validator_for(schema)(schema).validate(data)


@dataclass(frozen=True)
class _Definition:
    messageid: str
    attributes: tuple[_Attribute, ...]
    schema: dict[str, Any] | None
    validate: Callable[[Any, dict[str, Any]], None]

    def accepts(self, attributes: dict[str, Any], data: Any) -> bool:
        if not all(rule.accepts(attributes) for rule in self.attributes):
            return False
        if self.schema is not None:
            try:
                self.validate(data, self.schema)
            except jsonschema.ValidationError:
                return False
        return True


def _attribute(name: str, rule: dict[str, Any]) -> _Attribute:
    value = rule.get("value")
    text = None if value is None else str(value)
    pattern = _template_regex(text) if text is not None and "{" in text else None
    return _Attribute(name, rule.get("required") is True, _TYPE_CHECKS.get(rule.get("type", ""), _is_string),
                      text, pattern)


def _schema(document: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
    """The inline `dataschema`, or the latest version behind a `#/schemagroups/...` `dataschemauri`."""
    if isinstance(message.get("dataschema"), dict):
        return message["dataschema"]  # type: ignore[no-any-return]
    uri = message.get("dataschemauri")
    if not isinstance(uri, str) or not uri.startswith("#/"):
        return None
    node: Any = document
    for step in uri[2:].split("/"):
        node = node[step]
    versions = node["versions"]
    return versions[max(versions, key=int)]["schema"]  # type: ignore[no-any-return]


class NaiveValidator:
    """`judge(record)` is True when some definition of the document accepts the recorded Kafka message."""

    def __init__(self, document: dict[str, Any], recheck_schemas: bool = True) -> None:
        validate = jsonschema.validate if recheck_schemas else _validate_without_schema_check
        self.definitions = [
            _Definition(messageid, tuple(_attribute(n, r) for n, r in message.get("envelopemetadata", {}).items()),
                        _schema(document, message), validate)
            for group in document.get("messagegroups", {}).values()
            for messageid, message in group.get("messages", {}).items()]

    def judge(self, record: dict[str, Any]) -> bool:
        headers = {name: value.encode() for name, value in (record.get("headers") or {}).items()}
        message = KafkaMessage(headers, record.get("key"), (record.get("body") or "").encode())
        try:
            event = from_kafka_event(message)
        except Exception:
            return False
        attributes = event.get_attributes()
        data = event.get_data()
        return any(definition.accepts(attributes, data) for definition in self.definitions)
