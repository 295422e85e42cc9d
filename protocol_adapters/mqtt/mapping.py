"""MQTT PUBLISH <-> Envelope, in the field shape of gateway/envelope.py.

MQTT/3.1.1 fields: `topic_name` (str), `qos` (int), `retain` (bool). MQTT/5.0 adds `content_type`,
`payload_format` (0 or 1), `message_expiry_interval` (int seconds), `response_topic` (str),
`correlation_data` (bytes) - each None when the PUBLISH did not carry it - and `user_properties`, the
user properties as an ordered list of (name, value) strings in which names may repeat.
"""

from __future__ import annotations

from typing import Any

from paho.mqtt.client import MQTTMessage
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from gateway.envelope import Envelope
from gateway.errors import AdapterError
from protocol_adapters.mqtt.options import V5

# envelope field -> paho property attribute, for the single-valued MQTT 5 PUBLISH properties
PROPERTY_FIELDS = (
    ("content_type", "ContentType"),
    ("payload_format", "PayloadFormatIndicator"),
    ("message_expiry_interval", "MessageExpiryInterval"),
    ("response_topic", "ResponseTopic"),
    ("correlation_data", "CorrelationData"),
)
_MAX_STRING = 65535  # MQTT strings and binary data carry a two-byte length


def fields_from_publish(protocol: str, topic: str, qos: int, retain: bool,
                        properties: Properties | None) -> dict[str, Any]:
    fields: dict[str, Any] = {"topic_name": topic, "qos": qos, "retain": bool(retain)}
    if protocol != V5:
        return fields
    for field, attribute in PROPERTY_FIELDS:
        fields[field] = getattr(properties, attribute, None) if properties is not None else None
    if isinstance(fields["correlation_data"], (bytearray, memoryview)):
        fields["correlation_data"] = bytes(fields["correlation_data"])
    pairs = getattr(properties, "UserProperty", None) if properties is not None else None
    fields["user_properties"] = [(str(name), str(value)) for name, value in pairs or ()]
    return fields


def envelope_from_message(message: MQTTMessage, protocol: str, endpoint_id: str, ack: Any = None) -> Envelope:
    """One received PUBLISH (a paho MQTTMessage) as an Envelope; `ack` is the source's handle."""
    topic = message.topic
    properties = getattr(message, "properties", None) if protocol == V5 else None
    return Envelope(protocol, fields_from_publish(protocol, topic, message.qos, message.retain, properties),
                    bytes(message.payload), endpoint_id, {"topic_name": topic, "mid": message.mid}, ack)


def _text(field: str, value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        try:
            text = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise AdapterError(f"MQTT 5 property {field} is not UTF-8 text", retriable=False) from None
    else:
        text = value if isinstance(value, str) else str(value)
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise AdapterError(f"MQTT 5 property {field} is not valid UTF-8 text", retriable=False) from None
    # characters MQTT forbids in strings (paho's reader also refuses U+FEFF: it would poison consumers)
    if size > _MAX_STRING or "\x00" in text or "\ufeff" in text:
        raise AdapterError(f"MQTT 5 property {field} cannot be sent: NUL, U+FEFF or longer than 65535 bytes",
                           retriable=False)
    return text


def _integer(field: str, value: Any, high: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise AdapterError(f"MQTT 5 property {field} must be an integer, found {value!r}", retriable=False) from None
    if not 0 <= number <= high:
        raise AdapterError(f"MQTT 5 property {field} out of range: {number}", retriable=False)
    return number


def user_property_pairs(value: Any) -> list[tuple[str, str]]:
    """`user_properties` as (name, value) string pairs: a list of pairs (or {name, value} objects) or a map."""
    if not value:
        return []
    items = value.items() if isinstance(value, dict) else value
    pairs: list[tuple[str, str]] = []
    for item in items:
        if isinstance(item, dict):
            name, text = item.get("name"), item.get("value")
        else:
            name, text = item
        pairs.append((_text("user property name", name), _text(f"user property {name}", text)))
    return pairs


def publish_properties(fields: dict[str, Any]) -> Properties | None:
    """The MQTT 5 PUBLISH properties the envelope carries, or None when it carries none."""
    # paho's Properties is unannotated: each call below is typed by this module instead
    properties = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
    present = False
    content_type = fields.get("content_type")
    if content_type is not None:
        properties.ContentType = _text("content_type", content_type)
        present = True
    payload_format = fields.get("payload_format")
    if payload_format is not None:
        properties.PayloadFormatIndicator = _integer("payload_format", payload_format, 1)
        present = True
    expiry = fields.get("message_expiry_interval")
    if expiry is not None:
        properties.MessageExpiryInterval = _integer("message_expiry_interval", expiry, 0xFFFFFFFF)
        present = True
    response_topic = fields.get("response_topic")
    if response_topic is not None:
        properties.ResponseTopic = _text("response_topic", response_topic)
        present = True
    correlation = fields.get("correlation_data")
    if correlation is not None:
        data = correlation.encode("utf-8") if isinstance(correlation, str) else bytes(correlation)
        if len(data) > _MAX_STRING:
            raise AdapterError("MQTT 5 correlation_data longer than 65535 bytes", retriable=False)
        properties.CorrelationData = data
        present = True
    pairs = user_property_pairs(fields.get("user_properties"))
    if pairs:
        properties.UserProperty = pairs
        present = True
    return properties if present else None
