"""Build the message a sink publishes: the same protocol keeps everything; across protocols, per the bindings.

Same protocol (family): body, key, headers, properties and user properties
are carried over unchanged (the sink's own destination replaces topic /
subject / address). Across protocols, CloudEvents are re-mapped per the
bindings: binary-mode attributes become the target's attribute headers
(`ce_` Kafka headers, MQTT 5 user properties, AMQP `cloudEvents_`
application properties, `ce-` NATS/HTTP headers), `datacontenttype` the
target's content-type field; structured events keep their body and
`application/cloudevents+json` content type. MQTT 3.1.1 has no headers, so
a binary event becomes a structured one there. Other headers/properties
carry over as text where the target has headers. Dead-letter `xgate-*`
headers are added the same way (not on MQTT 3.1.1).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import orjson

from gateway.cloudevents import BINARY, STRUCTURED, choose_mode, header_text, protocol_content_type, read_binary
from gateway.envelope import Envelope
from gateway.loader.names import protocol_family
from gateway.verdict import Verdict

VIOLATIONS_LIMIT = 4096
_HOP_BY_HOP = frozenset({"host", "content-length", "connection", "transfer-encoding", "keep-alive", "upgrade",
                         "te", "trailer", "proxy-connection", "content-type"})


def dead_letter_headers(envelope: Envelope, verdict: Verdict, source_endpoint: str) -> list[tuple[str, str]]:
    """The machine-readable reason a message was dead-lettered, as text headers."""
    violations = _compact_json([v.as_dict() for v in verdict.violations])
    if len(violations) > VIOLATIONS_LIMIT:
        kept: list[dict[str, Any]] = []
        for violation in verdict.violations:
            kept.append(violation.as_dict())
            if len(_compact_json(kept)) > VIOLATIONS_LIMIT - 64:
                kept.pop()
                break
        kept.append({"rule": "truncated", "message": f"{len(verdict.violations) - len(kept)} more violations"})
        violations = _compact_json(kept)
    position = envelope.position
    address = position.get("topic") or position.get("subject") or position.get("address") or \
        position.get("path") or position.get("topic_name") or envelope.fields.get("topic") or \
        envelope.fields.get("subject") or envelope.fields.get("topic_name") or ""
    return [("xgate-verdict", verdict.outcome.value), ("xgate-messagegroupid", verdict.messagegroupid or ""),
            ("xgate-messageid", verdict.messageid or ""), ("xgate-violations", violations),
            ("xgate-source-endpoint", source_endpoint), ("xgate-source-address", str(address)),
            ("xgate-source-position", _compact_json(position))]


def _compact_json(value: Any) -> str:
    """JSON without spaces, ASCII only (every protocol's headers carry it, HTTP's included): orjson, and json
    for what orjson does not write as ASCII or at all (text beyond ASCII, integers past 64 bits)."""
    try:
        raw = orjson.dumps(value, default=str)
        if raw.isascii():
            return raw.decode("ascii")
    except TypeError:
        pass
    return json.dumps(value, default=str, separators=(",", ":"))


def _text(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (bytes, bytearray, memoryview)):
        decoded = header_text(value)
        return decoded if isinstance(decoded, str) else base64.b64encode(bytes(value)).decode("ascii")
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def _generic_headers(envelope: Envelope, attribute_names: set[str]) -> list[tuple[str, str]]:
    """Headers/properties that are not CloudEvents attributes, as text pairs."""
    fields = envelope.fields
    protocol = envelope.protocol
    pairs: list[tuple[str, Any]] = []
    if protocol == "KAFKA":
        pairs = [(n, v) for n, v in fields.get("headers") or () if not n.startswith("ce_") and n != "content-type"]
    elif protocol == "MQTT/5.0":
        pairs = [(n, v) for n, v in fields.get("user_properties") or () if n not in attribute_names]
    elif protocol == "AMQP/1.0":
        pairs = [(n, v) for n, v in (fields.get("application-properties") or {}).items()
                 if not n.startswith(("cloudEvents_", "cloudEvents:"))]
    elif protocol in ("NATS", "HTTP"):
        pairs = [(n, v) for n, v in fields.get("headers") or ()
                 if not n.lower().startswith("ce-") and n.lower() not in _HOP_BY_HOP]
    return [(n, t) for n, v in pairs if (t := _text(v)) is not None]


def _add_headers(protocol: str, fields: dict[str, Any], headers: list[tuple[str, str]]) -> None:
    if not headers:
        return
    if protocol == "KAFKA":
        fields["headers"] = list(fields.get("headers") or []) + [(n, v.encode("utf-8")) for n, v in headers]
    elif protocol == "MQTT/5.0":
        fields["user_properties"] = list(fields.get("user_properties") or []) + headers
    elif protocol == "AMQP/1.0":
        fields["application-properties"] = {**(fields.get("application-properties") or {}), **dict(headers)}
    elif protocol in ("NATS", "HTTP"):
        fields["headers"] = list(fields.get("headers") or []) + headers


def _set_content_type(protocol: str, fields: dict[str, Any], content_type: str | None) -> None:
    if content_type is None:
        return
    if protocol == "KAFKA":
        fields["headers"] = list(fields.get("headers") or []) + [("content-type", content_type.encode("utf-8"))]
    elif protocol == "MQTT/5.0":
        fields["content_type"] = content_type
    elif protocol == "AMQP/1.0":
        fields["properties"] = {**(fields.get("properties") or {}), "content-type": content_type}
    elif protocol in ("NATS", "HTTP"):
        fields["headers"] = list(fields.get("headers") or []) + [("Content-Type", content_type)]


def _attribute_headers(protocol: str, attributes: dict[str, Any]) -> list[tuple[str, str]]:
    prefix = {"KAFKA": "ce_", "MQTT/5.0": "", "AMQP/1.0": "cloudEvents_", "NATS": "ce-", "HTTP": "ce-"}[protocol]
    out = []
    for name, value in attributes.items():
        if name == "datacontenttype" and protocol != "NATS":
            continue  # carried by the target's content-type field
        text = _text(value)
        if text is not None:
            out.append((prefix + name, text))
    return out


def _structured_from_binary(attributes: dict[str, Any], body: bytes) -> bytes:
    """MQTT 3.1.1 carries only a body: a binary-mode event becomes a JSON-format event."""
    event = {name: value for name, value in attributes.items()}
    content_type = str(attributes.get("datacontenttype") or "")
    media = content_type.split(";", 1)[0].strip().lower()
    if media == "application/json" or media.endswith("+json") or not media:
        try:
            event["data"] = json.loads(body)
        except ValueError:
            event["data_base64"] = base64.b64encode(body).decode("ascii")
    else:
        event["data_base64"] = base64.b64encode(body).decode("ascii")
    return json.dumps(event, default=str).encode("utf-8")


def _cross_protocol(envelope: Envelope, target: str) -> Envelope:
    content_type = protocol_content_type(envelope)
    mode = choose_mode(envelope, None, content_type)
    attributes: dict[str, Any] = {}
    if mode == BINARY:
        reading = read_binary(envelope, content_type)
        if "specversion" in reading.attributes or "type" in reading.attributes:
            attributes = dict(reading.attributes)
    fields: dict[str, Any] = {}
    body = envelope.body
    if target == "MQTT/3.1.1":
        if attributes:
            body = _structured_from_binary(attributes, body)
        return Envelope(target, fields, body, envelope.endpoint, dict(envelope.position))
    if target == "KAFKA":
        key = attributes.get("partitionkey")
        fields["key"] = str(key).encode("utf-8") if key is not None else None
    _add_headers(target, fields, _attribute_headers(target, attributes))
    _add_headers(target, fields, _generic_headers(envelope, set(attributes)))
    if mode == STRUCTURED or not attributes:
        _set_content_type(target, fields, content_type)
    else:
        _set_content_type(target, fields, attributes.get("datacontenttype"))
    return Envelope(target, fields, body, envelope.endpoint, dict(envelope.position))


def _copy_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """A copy the sink side may add headers or properties to: each list or map copied, values shared.

    One level is enough: headers are appended to the lists and properties set in the maps, and the values
    themselves (bytes, strings, numbers, tuples) are never changed in place. Cheaper than deepcopy per message.
    """
    return {name: list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value
            for name, value in fields.items()}


def outgoing(envelope: Envelope, target: str, extra_headers: list[tuple[str, str]] | None = None) -> Envelope:
    """The envelope a sink of protocol `target` publishes for `envelope` (plus any `xgate-*` headers)."""
    if target == "MEMORY":
        target = envelope.protocol  # the in-process broker carries any protocol's messages as they are
    if envelope.protocol == target or (protocol_family(envelope.protocol) == protocol_family(target)
                                       and target != "MQTT/3.1.1"):
        fields = _copy_fields(envelope.fields)
        fields.pop("partition", None)  # the destination topic partitions by key
        out = Envelope(target, fields, envelope.body, envelope.endpoint, dict(envelope.position))
    else:
        out = _cross_protocol(envelope, target)
    if extra_headers:
        _add_headers(target, out.fields, extra_headers)
    return out
