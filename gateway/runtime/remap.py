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
headers are added the same way (not on MQTT 3.1.1). A registry change event
(`envelope_for`) is published in structured mode on every protocol.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import orjson

from gateway.bindings import BINDINGS, Binding, connection_headers
from gateway.cloudevents import BINARY, STRUCTURED, choose_mode, header_text, protocol_content_type, read_binary
from gateway.envelope import Envelope
from gateway.loader.names import protocol_family
from gateway.registry_api.events import CONTENT_TYPE, encode
from gateway.verdict import Verdict

VIOLATIONS_LIMIT = 4096
# per protocol, the header names not carried over as headers (computed once, not per message)
_NOT_CARRIED = {protocol: connection_headers(binding) for protocol, binding in BINDINGS.items()}


def dead_letter_headers(envelope: Envelope, verdict: Verdict, source_endpoint: str) -> list[tuple[str, str]]:
    """The machine-readable reason a message was dead-lettered, as text headers."""
    binding = BINDINGS.get(envelope.protocol)
    key = binding.address if binding is not None else ""
    # where the source read it, as the adapter recorded it
    address = (envelope.position.get(key) or envelope.fields.get(key) or "") if key else ""
    return reason_headers(verdict.outcome.value, verdict.messagegroupid, verdict.messageid,
                          [v.as_dict() for v in verdict.violations], source_endpoint, address, envelope.position)


def reason_headers(outcome: str, group: str | None, message: str | None, violations: list[dict[str, Any]],
                   source_endpoint: str, address: Any, position: dict[str, Any]) -> list[tuple[str, str]]:
    """`dead_letter_headers` from a verdict's parts (`violations` as `Violation.as_dict` gives them): the record
    lane writes them so for records of which it makes no Envelope or Verdict (record_lane.py)."""
    text = _compact_json(violations)
    if len(text) > VIOLATIONS_LIMIT:
        kept: list[dict[str, Any]] = []
        for violation in violations:
            kept.append(violation)
            if len(_compact_json(kept)) > VIOLATIONS_LIMIT - 64:
                kept.pop()
                break
        kept.append({"rule": "truncated", "message": f"{len(violations) - len(kept)} more violations"})
        text = _compact_json(kept)
    return [("xgate-verdict", outcome), ("xgate-messagegroupid", group or ""),
            ("xgate-messageid", message or ""), ("xgate-violations", text),
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
    binding = BINDINGS.get(envelope.protocol)
    if binding is None or not binding.headers:
        return []
    values = envelope.fields.get(binding.headers)
    pairs = (values or {}).items() if binding.headers_map else values or ()
    prefixes = binding.prefixes
    if prefixes == ("",):  # unprefixed attributes (MQTT 5): the names read as attributes
        kept = [(n, v) for n, v in pairs if n not in attribute_names]
    else:
        dropped = _NOT_CARRIED[binding.protocol]
        if binding.casefold:
            kept = [(n, v) for n, v in pairs if not n.lower().startswith(prefixes) and n.lower() not in dropped]
        else:
            kept = [(n, v) for n, v in pairs if not n.startswith(prefixes) and n not in dropped]
    return [(n, t) for n, v in kept if (t := _text(v)) is not None]


def _add_headers(binding: Binding, fields: dict[str, Any], headers: list[tuple[str, str]]) -> None:
    """Into a new list or map, never the one in `fields`: `outgoing` shares those with the envelope it read."""
    if not headers or not binding.headers:
        return
    field = binding.headers
    if binding.headers_map:
        fields[field] = {**(fields.get(field) or {}), **dict(headers)}
    elif binding.header_bytes:
        fields[field] = list(fields.get(field) or []) + [(n, v.encode("utf-8")) for n, v in headers]
    else:
        fields[field] = list(fields.get(field) or []) + headers


def _set_content_type(binding: Binding, fields: dict[str, Any], content_type: str | None) -> None:
    if content_type is None:
        return
    field, name = binding.content_type, binding.content_type_name
    if not name:
        fields[field] = content_type
    elif field == binding.headers and not binding.headers_map:
        value = content_type.encode("utf-8") if binding.header_bytes else content_type
        fields[field] = list(fields.get(field) or []) + [(name, value)]
    else:
        fields[field] = {**(fields.get(field) or {}), name: content_type}


def _attribute_headers(binding: Binding, attributes: dict[str, Any]) -> list[tuple[str, str]]:
    prefix = binding.prefixes[0]
    out = []
    for name, value in attributes.items():
        if name == "datacontenttype" and binding.datacontenttype:
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
    binding = BINDINGS[target]
    if binding.structured_only:
        if attributes:
            body = _structured_from_binary(attributes, body)
        return Envelope(target, fields, body, envelope.endpoint, dict(envelope.position))
    if binding.key:
        key = attributes.get("partitionkey")
        fields[binding.key] = str(key).encode("utf-8") if key is not None else None
    _add_headers(binding, fields, _attribute_headers(binding, attributes))
    _add_headers(binding, fields, _generic_headers(envelope, set(attributes)))
    if mode == STRUCTURED or not attributes:
        _set_content_type(binding, fields, content_type)
    else:
        _set_content_type(binding, fields, attributes.get("datacontenttype"))
    return Envelope(target, fields, body, envelope.endpoint, dict(envelope.position))


def _structured_only(protocol: str) -> bool:
    binding = BINDINGS.get(protocol)
    return binding is not None and binding.structured_only


def outgoing(envelope: Envelope, target: str, extra_headers: list[tuple[str, str]] | None = None) -> Envelope:
    """The envelope a sink of protocol `target` publishes for `envelope` (plus any `xgate-*` headers)."""
    if target == "MEMORY":
        target = envelope.protocol  # the in-process broker carries any protocol's messages as they are
    if envelope.protocol == target or (protocol_family(envelope.protocol) == protocol_family(target)
                                       and not _structured_only(target)):
        # a shallow copy: the lists, maps and position are shared with `envelope`, as nothing changes them in
        # place (`_add_headers` and the sinks build new ones); only this dict's own keys may differ
        fields = dict(envelope.fields)
        fields.pop("partition", None)  # the destination topic partitions by key
        out = Envelope(target, fields, envelope.body, envelope.endpoint, envelope.position)
    else:
        out = _cross_protocol(envelope, target)
    if extra_headers:
        binding = BINDINGS.get(target)
        if binding is not None:
            _add_headers(binding, out.fields, extra_headers)
    return out


def envelope_for(event: dict[str, Any], protocol: str) -> Envelope:
    """The event as the message a sink of `protocol` publishes."""
    http_form = Envelope("HTTP", {"headers": [("Content-Type", CONTENT_TYPE)]}, encode(event))
    out = outgoing(http_form, protocol)
    if out.protocol == "KAFKA":
        out.fields["key"] = str(event.get("subject", "")).encode("utf-8")
    return out
