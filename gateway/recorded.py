"""The recorded-message form of validation rule 7: one JSON object per line <-> Envelope."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from gateway.bindings import BINDINGS, Form, RecordedField, Written
from gateway.envelope import Envelope
from gateway.errors import GatewayError
from gateway.limits import MAX_NESTING, nesting_exceeds
from gateway.loader.names import normalize_protocol

# per protocol, once: the fields read when the record has them (by every spelling), and those always read
_OPTIONAL = {protocol: {name: spec for spec in binding.fields if not spec.always for name in (spec.name, spec.alias)
                        if name}
             for protocol, binding in BINDINGS.items()}
# the fields always read, each with its name, older spelling and form unpacked: read once per record
_ALWAYS_READ = {protocol: tuple((spec, spec.name, spec.alias, spec.form) for spec in binding.fields if spec.always)
                for protocol, binding in BINDINGS.items()}
_KEY, _VALUE = Form.KEY, Form.VALUE
_PROTOCOLS: dict[str, str] = {}  # a record's spelling of its protocol -> the protocol, remembered


class RecordError(GatewayError, ValueError):
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
    protocol = _PROTOCOLS.get(raw_protocol) if isinstance(raw_protocol, str) else None
    if protocol is None:
        protocol = normalize_protocol(raw_protocol)
        if protocol is not None and len(_PROTOCOLS) < 64:  # bounded: records may spell it any way
            _PROTOCOLS[raw_protocol] = protocol  # type: ignore[index]  # a str: normalize_protocol read it
    if protocol is None:
        raise RecordError(f"protocol: {raw_protocol!r} is not one of {', '.join(BINDINGS)}")
    if "body_base64" in record:
        body = _bytes({"base64": record["body_base64"]}, "body_base64")
    elif record.get("body") is None:
        body = b""
    elif isinstance(record["body"], str):
        body = _utf8(record["body"], "body")
    else:
        raise RecordError("body: expected UTF-8 text (use body_base64 for bytes)")
    fields: dict[str, Any] = {}
    # fields read when present, in the record's order: of two spellings the later counts, as with a repeated key
    optional = _OPTIONAL[protocol]
    if optional:
        for key, value in record.items():
            spec = optional.get(key)
            if spec is not None and not (spec.form is Form.BYTES and value is None):
                fields[spec.name] = _read_field(spec, value, key)
    for spec, name, alias, form in _ALWAYS_READ[protocol]:
        if form is _KEY:
            fields[name] = _read_key(record)
        else:
            value = record[name] if name in record else record.get(alias) if alias else None
            fields[name] = value if form is _VALUE else _read_field(spec, value, name)
    return Envelope(protocol, fields, body, endpoint=endpoint)


def _read_key(record: dict[str, Any]) -> bytes | None:
    if "key_base64" in record:
        return _bytes({"base64": record["key_base64"]}, "key_base64")
    key = record.get("key")
    if key.__class__ is str:
        return _utf8(key, "key")
    return None if key is None else _bytes(key, "key")


def _read_field(spec: RecordedField, value: Any, field: str) -> Any:
    """One protocol field of a recorded message as the Envelope holds it (validation rule 7)."""
    form = spec.form
    if form is Form.VALUE:
        return value
    if form is Form.BYTES:
        return _bytes(value, field)
    if form is Form.BYTE_HEADERS:
        if value.__class__ is dict:
            try:  # the common case, every value text: one comprehension
                return [(name, item.encode()) for name, item in value.items()]
            except (AttributeError, UnicodeEncodeError):
                pass  # a null, base64 or list value, or text that is not UTF-8: read one by one, the problem named
        return [(name, None if item is None else _bytes(item, f"{field}.{name}"))
                for name, item in _pairs(value, field, allow_lists=True)]
    if form in (Form.TEXT_HEADERS, Form.PROPERTIES):
        return _text_pairs(value, field)
    if not isinstance(value, dict):  # Form.SECTION
        raise RecordError(f"{field}: an AMQP section is a JSON object")
    # AMQP values are copied recursively (nothing else walks into a record): bounded first
    if nesting_exceeds(value, MAX_NESTING - 1):
        raise RecordError(f"the record nests deeper than {MAX_NESTING} levels")
    return _typed(value)


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


def _write_field(record: dict[str, Any], spec: RecordedField, value: Any) -> None:
    form = spec.form
    if form is Form.VALUE:
        record[spec.name] = value
    elif form is Form.BYTES:
        record[spec.name] = _encode(value)
    elif form is Form.KEY:
        encoded = _encode(value)
        if isinstance(encoded, str):
            record["key"] = encoded
        else:
            record["key_base64"] = encoded["base64"]
    elif form is Form.BYTE_HEADERS:  # one object, the last value of a repeated name counts
        record[spec.name] = {name: None if item is None else _encode(item) for name, item in value or ()}
    elif form is Form.TEXT_HEADERS:
        record[spec.name] = _pairs_out(value)
    elif form is Form.PROPERTIES:
        record[spec.name] = [{"name": name, "value": item} for name, item in value]
    else:  # Form.SECTION
        record[spec.name] = _amqp_encode(value)


def record_from_envelope(envelope: Envelope) -> dict[str, Any]:
    """The recorded form of a live message (used by `xgate capture`); `envelope_from_record` reads it back."""
    fields = envelope.fields
    record: dict[str, Any] = {"protocol": envelope.protocol}
    if envelope.endpoint:
        record["endpoint"] = envelope.endpoint
    binding = BINDINGS.get(envelope.protocol)
    for spec in binding.fields if binding is not None else ():
        value = fields.get(spec.name)
        if (spec.written is Written.NOT_NONE and value is None) or (spec.written is Written.NOT_EMPTY and not value):
            continue
        _write_field(record, spec, value)
    try:
        record["body"] = envelope.body.decode("utf-8")
    except UnicodeDecodeError:
        record["body_base64"] = base64.b64encode(envelope.body).decode("ascii")
    return record
