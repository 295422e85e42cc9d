"""MQTT PUBLISH <-> Envelope, in the field shape of gateway/envelope.py.

MQTT/3.1.1 fields: `topic_name` (str), `qos` (int), `retain` (bool). MQTT/5.0 adds `content_type`,
`payload_format` (0 or 1), `message_expiry_interval` (int seconds), `response_topic` (str),
`correlation_data` (bytes) - each None when the PUBLISH did not carry it - and `user_properties`, the
user properties as an ordered list of (name, value) strings in which names may repeat.
"""

from __future__ import annotations

import struct
from typing import Any

import paho.mqtt.properties as paho_properties
from paho.mqtt.client import MQTTMessage
from paho.mqtt.exception import MalformedPacket
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
_LENGTH = struct.Struct("!H")
_UINT32 = struct.Struct("!L")


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


def _read_utf(buffer: bytes | bytearray, maxlen: int) -> tuple[str, int]:
    """paho's `readUTF` (decoding received property strings) without its rejection of U+FEFF."""
    if maxlen < 2:
        raise MalformedPacket("Not enough data to read string length")
    length = _LENGTH.unpack_from(buffer)[0]
    if length > maxlen - 2:
        raise MalformedPacket("Length delimited string too long")
    try:
        text = bytes(buffer[2:2 + length]).decode("utf-8")  # strict: no surrogates survive this
    except UnicodeDecodeError:
        raise MalformedPacket("[MQTT-1.5.4-1] invalid UTF-8 data") from None
    if "\x00" in text:
        raise MalformedPacket("[MQTT-1.5.4-2] Null found in UTF-8 data")
    return text, length + 2


def accept_bom_in_received_strings() -> None:
    """Let paho read U+FEFF in MQTT 5 strings, as the spec requires ([MQTT-1.5.4-3]: it "MUST NOT be skipped
    over or stripped off"); paho 2.2 treats it as a malformed packet and drops the connection.

    Mosquitto forwards such a property, so one PUBLISH carrying it would end the source's connection at every
    redelivery and wedge the persistent session. Only decoding changes; paho has no hook for it, so its
    module-level reader is replaced (idempotent).
    """
    paho_properties.readUTF = _read_utf


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
            raise AdapterError(f"MQTT 5 property {field} is not UTF-8 text") from None
    else:
        text = value if isinstance(value, str) else str(value)
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise AdapterError(f"MQTT 5 property {field} is not valid UTF-8 text") from None
    # MQTT strings must not hold U+0000 (a broker closes the connection over it)
    if size > _MAX_STRING or "\x00" in text:
        raise AdapterError(f"MQTT 5 property {field} cannot be sent: it holds U+0000 or is longer than 65535 "
                           f"bytes")
    return text


def _integer(field: str, value: Any, high: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise AdapterError(f"MQTT 5 property {field} must be an integer, found {value!r}") from None
    if not 0 <= number <= high:
        raise AdapterError(f"MQTT 5 property {field} out of range: {number}")
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


class PublishProperties(Properties):
    """MQTT 5 PUBLISH properties encoded once, byte for byte as paho's `Properties.pack()` writes them.

    paho's own Properties spends about 0.2 ms per message building and packing itself (a third of
    a v5 send); paho's publish path only calls `pack()`, so this subclass skips that work.
    """

    encoded: bytes

    def __init__(self, encoded: bytes) -> None:  # paho's __init__ builds lookup tables this class never uses
        object.__setattr__(self, "packetType", PacketTypes.PUBLISH)
        object.__setattr__(self, "encoded", encoded)

    def pack(self) -> bytes:
        return self.encoded

    def __str__(self) -> str:
        return f"[encoded MQTT 5 properties: {len(self.encoded)} bytes]"


def _variable_int(value: int) -> bytes:
    out = bytearray()
    while True:
        value, digit = divmod(value, 128)
        out.append(digit | 0x80 if value else digit)
        if not value:
            return bytes(out)


def _string(data: bytes) -> bytes:
    return _LENGTH.pack(len(data)) + data


def publish_properties(fields: dict[str, Any]) -> PublishProperties | None:
    """The MQTT 5 PUBLISH properties the envelope carries (in property id order), or None when it carries none."""
    parts: list[bytes] = []
    payload_format = fields.get("payload_format")
    if payload_format is not None:
        parts.append(b"\x01" + bytes([_integer("payload_format", payload_format, 1)]))
    expiry = fields.get("message_expiry_interval")
    if expiry is not None:
        parts.append(b"\x02" + _UINT32.pack(_integer("message_expiry_interval", expiry, 0xFFFFFFFF)))
    content_type = fields.get("content_type")
    if content_type is not None:
        parts.append(b"\x03" + _string(_text("content_type", content_type).encode("utf-8")))
    response_topic = fields.get("response_topic")
    if response_topic is not None:
        parts.append(b"\x08" + _string(_text("response_topic", response_topic).encode("utf-8")))
    correlation = fields.get("correlation_data")
    if correlation is not None:
        data = correlation.encode("utf-8") if isinstance(correlation, str) else bytes(correlation)
        if len(data) > _MAX_STRING:
            raise AdapterError("MQTT 5 correlation_data longer than 65535 bytes")
        parts.append(b"\x09" + _string(data))
    for name, value in user_property_pairs(fields.get("user_properties")):
        parts.append(b"\x26" + _string(name.encode("utf-8")) + _string(value.encode("utf-8")))
    if not parts:
        return None
    body = b"".join(parts)
    return PublishProperties(_variable_int(len(body)) + body)
