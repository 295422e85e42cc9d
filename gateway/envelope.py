"""Envelope: one received message, protocol-neutral, as adapters and the recorded form produce it.

`fields` uses the protocol field names of validation rule 4 with
these normalized value shapes:

- KAFKA: `topic` str, `partition` int, `key` bytes | None, `headers` list of (name, bytes), `timestamp` int ms
- MQTT/3.1.1, MQTT/5.0: `topic_name`, `qos`, `retain`, `content_type`, `payload_format`,
  `message_expiry_interval`, `response_topic`, `correlation_data` (bytes), `user_properties` list of (name, str)
- AMQP/1.0: `properties`, `application-properties`, `message-annotations`, `delivery-annotations`,
  `header`, `footer`: dicts of typed values (binary as bytes)
- NATS: `subject`, `reply-to`, `headers` list of (name, str)
- HTTP: `method`, `path`, `query` list of (name, str), `headers` list of (name, str)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Envelope:
    protocol: str
    fields: dict[str, Any]
    body: bytes
    endpoint: str | None = None
    # where the source read it, for dead-letter headers: e.g. {"topic": "t", "partition": 0, "offset": 42}
    position: dict[str, Any] = field(default_factory=dict)
    # adapter-specific handle used to ack/commit after the sink confirmed delivery
    ack: Any = field(default=None, repr=False)


def header_values(pairs: list[tuple[str, Any]] | None, name: str, *, casefold: bool) -> list[Any]:
    """All values of a possibly repeated header, in order."""
    if not pairs:
        return []
    if casefold:
        wanted = name.lower()
        return [value for key, value in pairs if key.lower() == wanted]
    return [value for key, value in pairs if key == name]


def header_value(pairs: list[tuple[str, Any]] | None, name: str, *, casefold: bool) -> Any:
    """The last value of a header, or None."""
    if not pairs:
        return None
    wanted = name.lower() if casefold else name
    for key, value in reversed(pairs):  # from the end: the last one wins, and the search stops there
        # lengths first: lower() keeps a name's length (U+0130 aside, whose lower case is never ASCII)
        if key == wanted or casefold and len(key) == len(wanted) and key.lower() == wanted:
            return value
    return None
