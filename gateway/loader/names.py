"""Name tolerances: protocol and envelope spellings seen in real documents (validation rule 1)."""

from __future__ import annotations

from typing import Any

from gateway.bindings import BINDINGS, Binding

PROTOCOLS = tuple(BINDINGS)
# a written protocol name (upper case, before any "/version") -> the bindings it may mean, in table order
_BY_NAME: dict[str, tuple[Binding, ...]] = {
    name: tuple(candidate for candidate in BINDINGS.values() if name in candidate.names)
    for binding in BINDINGS.values() for name in binding.names}
CLOUDEVENTS = "CloudEvents/1.0"


def normalize_protocol(value: Any) -> str | None:
    """`Kafka`, `KAFKA/3.0` -> KAFKA; `AMQP` -> AMQP/1.0; `MQTT` -> MQTT/5.0; `HTTP/2` -> HTTP; `NATS/1.0.0` -> NATS."""
    if not isinstance(value, str):
        return None
    name, _, version = value.strip().upper().partition("/")
    for binding in _BY_NAME.get(name, ()):
        if not binding.versions or any(version.startswith(written[:-1]) if written.endswith("*") else
                                       version == written for written in binding.versions):
            return binding.protocol
    return None


def binding_of(protocol: str | None) -> Binding | None:
    """The binding of a protocol as documents or envelopes name it (normalized first), or None."""
    if protocol is None:
        return None
    return BINDINGS.get(protocol) or BINDINGS.get(normalize_protocol(protocol) or "")


def protocol_family(protocol: str | None) -> str | None:
    """The binding's family (MQTT 3.1.1 and 5.0 share field names); a protocol without a binding is its own."""
    if protocol is None:
        return None
    binding = binding_of(protocol)
    return binding.family if binding is not None else protocol


def normalize_envelope(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    if text in ("cloudevents", "cloudevents/1.0", "cloudevents/1", "cloudevents/v1.0"):
        return CLOUDEVENTS
    return None
