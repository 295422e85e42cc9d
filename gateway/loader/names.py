"""Name tolerances: protocol and envelope spellings seen in real documents (CONFORMANCE.md section 1)."""

from __future__ import annotations

from typing import Any

from gateway.bindings import BINDINGS

PROTOCOLS = tuple(BINDINGS)
CLOUDEVENTS = "CloudEvents/1.0"


def normalize_protocol(value: Any) -> str | None:
    """`Kafka`, `KAFKA/3.0` -> KAFKA; `AMQP` -> AMQP/1.0; `MQTT` -> MQTT/5.0; `HTTP/2` -> HTTP; `NATS/1.0.0` -> NATS."""
    if not isinstance(value, str):
        return None
    text = value.strip().upper()
    name, _, version = text.partition("/")
    if name == "KAFKA":
        return "KAFKA"
    if name == "AMQP" and version in ("", "1.0", "1"):
        return "AMQP/1.0"
    if name == "MQTT":
        if version.startswith("3"):
            return "MQTT/3.1.1"
        if version in ("", "5", "5.0"):
            return "MQTT/5.0"
        return None
    if name == "NATS":
        return "NATS"
    if name in ("HTTP", "HTTPS"):
        return "HTTP"
    return None


def protocol_family(protocol: str | None) -> str | None:
    """MQTT 3.1.1 and 5.0 share field names; everything else is its own family."""
    if protocol is None:
        return None
    return "MQTT" if protocol.startswith("MQTT") else protocol


def normalize_envelope(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    if text in ("cloudevents", "cloudevents/1.0", "cloudevents/1", "cloudevents/v1.0"):
        return CLOUDEVENTS
    return None
