"""Read CloudEvents attributes from an Envelope, per protocol binding (CONFORMANCE.md section 4).

Deliberately not the cloudevents SDK: its decoders fill in a missing `id`
and `time`, which hides exactly the defects a gateway exists to catch. This
reader reports what the message carries and nothing more.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from gateway.envelope import Envelope, header_value
from gateway.verdict import Rule, Violation

STRUCTURED = "structured"
BINARY = "binary"
_CE_MEDIA = "application/cloudevents"
_BATCH_MEDIA = "application/cloudevents-batch"
MISSING: Any = object()


@dataclass(slots=True)
class CloudEventReading:
    """What one CloudEvent on the wire says. `text` marks attribute values that arrived as header strings."""

    mode: str
    attributes: dict[str, Any]
    text: bool
    # structured mode: the `data` member (MISSING when absent) or decoded `data_base64`
    data: Any = MISSING
    data_is_bytes: bool = False
    problem: Violation | None = None


def header_text(value: Any) -> Any:
    """Header bytes become text when they are UTF-8; other bytes stay bytes (they only match `binary`)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(value)
    return value


def protocol_content_type(envelope: Envelope) -> str | None:
    """The content type the protocol itself carries (not a CloudEvents attribute)."""
    fields = envelope.fields
    protocol = envelope.protocol
    value: Any = None
    if protocol == "KAFKA":
        value = header_text(header_value(fields.get("headers"), "content-type", casefold=True))
    elif protocol.startswith("MQTT"):
        value = fields.get("content_type")
    elif protocol == "AMQP/1.0":
        value = (fields.get("properties") or {}).get("content-type")
    elif protocol in ("NATS", "HTTP"):
        value = header_value(fields.get("headers"), "content-type", casefold=True)
    return value if isinstance(value, str) else None


def _decode_problem(message: str, actual: Any) -> Violation:
    return Violation("body", Rule.DECODE, "a JSON CloudEvent (structured mode)", actual, message)


def is_batch(envelope: Envelope) -> bool:
    content_type = protocol_content_type(envelope)
    return envelope.protocol == "HTTP" and content_type is not None and \
        content_type.strip().lower().startswith(_BATCH_MEDIA)


def choose_mode(envelope: Envelope, allowed: str | None) -> str:
    """The endpoint's `envelopeoptions.mode` narrows; otherwise the binding's marker decides."""
    if allowed in (STRUCTURED, BINARY):
        return allowed
    if envelope.protocol == "MQTT/3.1.1":
        return STRUCTURED
    content_type = protocol_content_type(envelope)
    if content_type is not None and content_type.strip().lower().startswith(_CE_MEDIA):
        return STRUCTURED
    return BINARY


def read_structured_event(event: Any) -> CloudEventReading:
    """One event of the JSON format: every member but `data`/`data_base64` is an attribute."""
    if not isinstance(event, dict):
        return CloudEventReading(STRUCTURED, {}, False, problem=_decode_problem(
            f"a structured CloudEvent is a JSON object, found {type(event).__name__}", event))
    attributes = {k: v for k, v in event.items() if k not in ("data", "data_base64")}
    reading = CloudEventReading(STRUCTURED, attributes, False)
    if "data_base64" in event:
        encoded = event["data_base64"]
        try:
            reading.data = base64.b64decode(encoded, validate=True) if isinstance(encoded, str) else MISSING
            reading.data_is_bytes = isinstance(encoded, str)
            if not isinstance(encoded, str):
                reading.problem = _decode_problem("data_base64 must be a base64 string", encoded)
        except (binascii.Error, ValueError):
            reading.problem = _decode_problem("data_base64 is not valid base64", encoded)
    elif "data" in event:
        reading.data = event["data"]
    return reading


def parse_json_body(body: bytes) -> tuple[Any, Violation | None]:
    try:
        return json.loads(body), None
    except (ValueError, UnicodeDecodeError) as exc:
        return None, _decode_problem(f"structured body is not valid JSON: {exc}", body)


def read_binary(envelope: Envelope) -> CloudEventReading:
    fields = envelope.fields
    protocol = envelope.protocol
    attributes: dict[str, Any] = {}
    if protocol == "KAFKA":
        for name, value in fields.get("headers") or ():
            if name[:3].lower() == "ce_":
                attributes[name[3:]] = header_text(value)
    elif protocol == "MQTT/5.0":
        for name, value in fields.get("user_properties") or ():
            attributes[name] = value
    elif protocol == "AMQP/1.0":
        for name, value in (fields.get("application-properties") or {}).items():
            if name.startswith(("cloudEvents_", "cloudEvents:")):
                attributes[name[12:]] = value
    elif protocol in ("NATS", "HTTP"):
        for name, value in fields.get("headers") or ():
            if name[:3].lower() == "ce-":
                attributes[name[3:].lower()] = value
    if protocol != "NATS" and "datacontenttype" not in attributes:
        content_type = protocol_content_type(envelope)
        if content_type is not None:
            attributes["datacontenttype"] = content_type
    # AMQP keeps typed values in application-properties; everything else arrives as text
    return CloudEventReading(BINARY, attributes, text=protocol != "AMQP/1.0")


def read_cloudevents(envelope: Envelope, allowed_mode: str | None) -> list[CloudEventReading]:
    """The CloudEvents a message carries: one, or each event of an HTTP batch."""
    mode = choose_mode(envelope, allowed_mode)
    if mode == BINARY:
        return [read_binary(envelope)]
    parsed, problem = parse_json_body(envelope.body)
    if problem is not None:
        return [CloudEventReading(STRUCTURED, {}, False, problem=problem)]
    if is_batch(envelope) and allowed_mode != BINARY:
        if not isinstance(parsed, list):
            return [CloudEventReading(STRUCTURED, {}, False, problem=_decode_problem(
                "a CloudEvents batch is a JSON array", parsed))]
        return [read_structured_event(event) for event in parsed]
    return [read_structured_event(parsed)]
