"""The recorded-message form of CONFORMANCE.md section 7: one JSON object per line <-> Envelope."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from gateway.envelope import Envelope
from gateway.limits import MAX_NESTING, nesting_exceeds
from gateway.loader.names import normalize_protocol

AMQP_SECTIONS = ("properties", "application-properties", "message-annotations", "delivery-annotations",
                 "header", "footer")
_AMQP_ALIASES = {"application_properties": "application-properties", "message_annotations": "message-annotations",
                 "delivery_annotations": "delivery-annotations"}
MQTT_FIELDS = ("topic_name", "qos", "retain", "content_type", "payload_format", "message_expiry_interval",
               "response_topic")


class RecordError(ValueError):
    """A recorded message that cannot be turned into an Envelope (names the field)."""


def _utf8(text: str, field: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: JSON's "\ud800", or undecodable bytes read with surrogateescape
        raise RecordError(f"{field}: not valid UTF-8 text (write bytes as base64)") from None


def _bytes(value: Any, field: str) -> bytes:
    if isinstance(value, dict) and "base64" in value:
        try:
            return base64.b64decode(value["base64"], validate=True)
        except (binascii.Error, ValueError, TypeError) as exc:
            raise RecordError(f"{field}: invalid base64 ({exc})") from None
    if isinstance(value, str):
        return _utf8(value, field)
    raise RecordError(f"{field}: expected a string or {{\"base64\": ...}}, found {type(value).__name__}")


def _typed(value: Any) -> Any:
    """AMQP values keep their JSON types; `{"base64": ...}` is binary."""
    if isinstance(value, dict):
        if set(value) == {"base64"}:
            return _bytes(value, "amqp value")
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return value


def _pairs(value: Any, field: str, *, allow_lists: bool) -> list[tuple[str, Any]]:
    """Headers as ordered (name, value) pairs; a map value may be a list for repeated headers."""
    pairs: list[tuple[str, Any]] = []
    if value is None:
        return pairs
    if isinstance(value, dict):
        for name, item in value.items():
            if isinstance(item, list) and allow_lists:
                pairs.extend((name, v) for v in item)
            else:
                pairs.append((name, item))
        return pairs
    if isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, dict) and "name" in item:
                pairs.append((str(item["name"]), item.get("value")))
            elif isinstance(item, (list, tuple)) and len(item) == 2:
                pairs.append((str(item[0]), item[1]))
            else:
                raise RecordError(f"{field}[{index}]: expected {{\"name\", \"value\"}} or [name, value]")
        return pairs
    raise RecordError(f"{field}: expected an object or a list, found {type(value).__name__}")


def _text_pairs(value: Any, field: str) -> list[tuple[str, str]]:
    out = []
    for name, item in _pairs(value, field, allow_lists=True):
        _utf8(name, f"{field} name")
        if isinstance(item, dict) and "base64" in item:
            out.append((name, _bytes(item, f"{field}.{name}").decode("utf-8", "replace")))
        elif item is None:
            continue
        else:
            text = item if isinstance(item, str) else str(item)
            _utf8(text, f"{field}.{name}")
            out.append((name, text))
    return out


def envelope_from_record(record: Any, default_endpoint: str | None = None,
                         default_protocol: str | None = None) -> Envelope:
    if not isinstance(record, dict):
        raise RecordError(f"a recorded message is a JSON object, found {type(record).__name__}")
    endpoint = record.get("endpoint", default_endpoint)
    if endpoint is not None and not isinstance(endpoint, str):
        raise RecordError(f"endpoint: expected a string, found {type(endpoint).__name__}")
    raw_protocol = record.get("protocol", default_protocol)
    protocol = normalize_protocol(raw_protocol)
    if protocol is None:
        raise RecordError(f"protocol: {raw_protocol!r} is not one of KAFKA, MQTT/3.1.1, MQTT/5.0, AMQP/1.0, "
                          "NATS, HTTP")
    if "body_base64" in record:
        body = _bytes({"base64": record["body_base64"]}, "body_base64")
    elif record.get("body") is None:
        body = b""
    elif isinstance(record["body"], str):
        body = _utf8(record["body"], "body")
    else:
        raise RecordError("body: expected UTF-8 text (use body_base64 for bytes)")
    fields: dict[str, Any] = {}
    if protocol == "KAFKA":
        fields["topic"] = record.get("topic")
        fields["partition"] = record.get("partition")
        fields["timestamp"] = record.get("timestamp")
        if "key_base64" in record:
            fields["key"] = _bytes({"base64": record["key_base64"]}, "key_base64")
        elif record.get("key") is not None:
            fields["key"] = _bytes(record["key"], "key")
        else:
            fields["key"] = None
        fields["headers"] = [(name, None if value is None else _bytes(value, f"headers.{name}"))
                             for name, value in _pairs(record.get("headers"), "headers", allow_lists=True)]
    elif protocol.startswith("MQTT"):
        for name in MQTT_FIELDS:
            if name in record:
                fields[name] = record[name]
        if record.get("correlation_data") is not None:
            fields["correlation_data"] = _bytes(record["correlation_data"], "correlation_data")
        fields["user_properties"] = _text_pairs(record.get("user_properties"), "user_properties")
    elif protocol == "AMQP/1.0":
        # AMQP values are copied recursively below (nothing else walks into a record): bounded first
        if nesting_exceeds(record, MAX_NESTING):
            raise RecordError(f"the record nests deeper than {MAX_NESTING} levels")
        for key, value in record.items():
            section = _AMQP_ALIASES.get(key, key)
            if section in AMQP_SECTIONS:
                if not isinstance(value, dict):
                    raise RecordError(f"{key}: an AMQP section is a JSON object")
                fields[section] = _typed(value)
    elif protocol == "NATS":
        fields["subject"] = record.get("subject")
        fields["reply-to"] = record.get("reply-to", record.get("reply_to"))
        fields["headers"] = _text_pairs(record.get("headers"), "headers")
    else:
        fields["method"] = record.get("method")
        fields["path"] = record.get("path")
        fields["query"] = _text_pairs(record.get("query"), "query")
        fields["headers"] = _text_pairs(record.get("headers"), "headers")
    return Envelope(protocol, fields, body, endpoint=endpoint)


def _encode(value: Any) -> Any:
    """Bytes become `{"base64": ...}` unless they are UTF-8 text."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(raw).decode("ascii")}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    return value


def _amqp_encode(value: Any) -> Any:
    """AMQP keeps types: binary is always `{"base64": ...}`, even when it happens to be UTF-8."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"base64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, dict):
        return {str(k): _amqp_encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_amqp_encode(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _pairs_out(pairs: list[tuple[str, Any]] | None) -> dict[str, Any]:
    """Ordered pairs as a JSON object; a repeated name becomes a list of its values."""
    out: dict[str, Any] = {}
    for name, value in pairs or ():
        value = _encode(value)
        if name in out:
            out[name] = out[name] + [value] if isinstance(out[name], list) else [out[name], value]
        else:
            out[name] = value
    return out


def record_from_envelope(envelope: Envelope) -> dict[str, Any]:
    """The recorded form of a live message (used by `xgate capture`); `envelope_from_record` reads it back."""
    fields = envelope.fields
    record: dict[str, Any] = {"protocol": envelope.protocol}
    if envelope.endpoint:
        record["endpoint"] = envelope.endpoint
    protocol = envelope.protocol
    if protocol == "KAFKA":
        for name in ("topic", "partition", "timestamp"):
            if fields.get(name) is not None:
                record[name] = fields[name]
        key = fields.get("key")
        if key is not None:
            encoded = _encode(key)
            if isinstance(encoded, str):
                record["key"] = encoded
            else:
                record["key_base64"] = encoded["base64"]
        record["headers"] = {}
        for name, value in fields.get("headers") or ():
            record["headers"][name] = _encode(value) if value is not None else None
    elif protocol.startswith("MQTT"):
        for name in MQTT_FIELDS:
            if fields.get(name) is not None:
                record[name] = fields[name]
        if fields.get("correlation_data") is not None:
            record["correlation_data"] = _encode(fields["correlation_data"])
        if fields.get("user_properties"):
            record["user_properties"] = [{"name": n, "value": v} for n, v in fields["user_properties"]]
    elif protocol == "AMQP/1.0":
        for section in AMQP_SECTIONS:
            if fields.get(section):
                record[section] = _amqp_encode(fields[section])
    elif protocol == "NATS":
        record["subject"] = fields.get("subject")
        if fields.get("reply-to"):
            record["reply-to"] = fields["reply-to"]
        record["headers"] = _pairs_out(fields.get("headers"))
    else:
        for name in ("method", "path"):
            if fields.get(name) is not None:
                record[name] = fields[name]
        record["query"] = _pairs_out(fields.get("query"))
        record["headers"] = _pairs_out(fields.get("headers"))
    try:
        record["body"] = envelope.body.decode("utf-8")
    except UnicodeDecodeError:
        record["body_base64"] = base64.b64encode(envelope.body).decode("ascii")
    return record
