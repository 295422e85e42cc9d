"""AMQP 1.0 message bytes <-> Envelope fields and body.

The bare message is read section by section with proton's `Data` codec (not
`proton.Message`, which fills in defaults and so cannot tell an absent header
field from a default one, and has no footer). Only sections and fields present
on the wire appear in `fields`, as plain Python values:

- binary -> bytes (RabbitMQ hands out memoryviews into the decoder's buffer: copied at once)
- symbol, char -> str; uuid -> its str form; every integer width -> int; float and double -> float
- timestamp -> timezone-aware UTC datetime (millisecond precision); header `ttl` stays int milliseconds
- list/array -> list; map -> dict; a described value -> {"descriptor": ..., "value": ...}
- decimal32/64 -> int (raw IEEE 754 bits), decimal128 -> bytes

Body: the data sections, concatenated; an amqp-value string -> its UTF-8 bytes; an amqp-value binary -> bytes;
no body or a null amqp-value -> b""; any other amqp-value or amqp-sequence -> JSON (binary as base64,
timestamps as ISO 8601).

Outgoing messages carry the envelope's sections with their AMQP types restored where the field is known
(properties, header) and a single data section with the body. Keys of annotation maps are sent as symbols.
Delivery annotations are not sent: they address the next hop only (AMQP 3.2.2), which was the hop that
delivered them to us, and RabbitMQ 3.10 ends the connection on a message that carries them.

What RabbitMQ 3.10 does to messages (seen, not specified): it sets header `first-acquirer` (false on a
redelivery) and drops `delivery-count` and any sent `first-acquirer`; it gives a message sent without a
properties section one with `subject` = the queue name; everything else above (footer included) arrives as sent.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import uuid
from collections.abc import Callable
from typing import Any

from proton import Array, Data, Described, symbol, timestamp, ubyte, uint, ulong

from gateway.envelope import Envelope
from gateway.errors import AdapterError, GatewayError

PROTOCOL = "AMQP/1.0"
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

HEADER, DELIVERY_ANNOTATIONS, MESSAGE_ANNOTATIONS, PROPERTIES = 0x70, 0x71, 0x72, 0x73
APPLICATION_PROPERTIES, DATA, AMQP_SEQUENCE, AMQP_VALUE, FOOTER = 0x74, 0x75, 0x76, 0x77, 0x78
_SYMBOLIC = {"amqp:header:list": HEADER, "amqp:delivery-annotations:map": DELIVERY_ANNOTATIONS,
             "amqp:message-annotations:map": MESSAGE_ANNOTATIONS, "amqp:properties:list": PROPERTIES,
             "amqp:application-properties:map": APPLICATION_PROPERTIES, "amqp:data:binary": DATA,
             "amqp:amqp-sequence:list": AMQP_SEQUENCE, "amqp:amqp-value:*": AMQP_VALUE,
             "amqp:footer:map": FOOTER}
_MAP_SECTIONS = {DELIVERY_ANNOTATIONS: "delivery-annotations", MESSAGE_ANNOTATIONS: "message-annotations",
                 APPLICATION_PROPERTIES: "application-properties", FOOTER: "footer"}

HEADER_FIELDS = ("durable", "priority", "ttl", "first-acquirer", "delivery-count")
PROPERTY_FIELDS = ("message-id", "user-id", "to", "subject", "reply-to", "correlation-id", "content-type",
                   "content-encoding", "absolute-expiry-time", "creation-time", "group-id", "group-sequence",
                   "reply-to-group-id")


# -- decoding ---------------------------------------------------------------------------------------------

def plain(value: Any) -> Any:
    """One decoded AMQP value as a plain Python value (see the module docstring)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, float):
        return float(value)  # float32 -> float
    if isinstance(value, (memoryview, bytes, bytearray)):
        return bytes(value)
    if isinstance(value, str):
        return str(value)  # symbol, char -> str
    if isinstance(value, timestamp):
        try:
            return EPOCH + dt.timedelta(milliseconds=int(value))
        except OverflowError:
            return int(value)
    if isinstance(value, int):
        return int(value)  # every width, and decimal32/64 as raw bits
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dt.datetime):
        return value
    if isinstance(value, dict):
        return {_key(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, Array):
        return [plain(v) for v in value.elements]
    if isinstance(value, Described):
        return {"descriptor": plain(value.descriptor), "value": plain(value.value)}
    return str(value)  # UnmappedType: keep something readable


def _key(key: Any) -> Any:
    converted = plain(key)
    return converted if isinstance(converted, (str, int, bytes, bool, float, type(None))) else repr(converted)


def _descriptor(value: Any) -> int | None:
    if isinstance(value, Described):
        descriptor = value.descriptor
        if isinstance(descriptor, str):
            return _SYMBOLIC.get(str(descriptor))
        if isinstance(descriptor, int):
            return int(descriptor)
    return None


def _named(values: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """A composite (list) section, already plain: null fields are absent fields."""
    if not isinstance(values, list):
        return {}
    return {name: v for name, v in zip(names, values) if v is not None}


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return str(value)


def _body(data: list[bytes], sequences: list[Any], value: Any, has_value: bool) -> bytes:
    if data:
        return data[0] if len(data) == 1 else b"".join(data)
    if sequences:
        items = [item for sequence in sequences for item in sequence]
        return json.dumps(items, default=_json_default, separators=(",", ":")).encode("utf-8")
    if not has_value or value is None:
        return b""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes):
        return value
    return json.dumps(value, default=_json_default, separators=(",", ":")).encode("utf-8")


def decode_message(encoded: bytes | memoryview) -> tuple[dict[str, Any], bytes]:
    """The fields and body of one encoded AMQP message. Raises AdapterError when malformed."""
    view = memoryview(encoded)
    fields: dict[str, Any] = {}
    data: list[bytes] = []
    sequences: list[Any] = []
    value: Any = None
    has_value = False
    codec = Data()
    offset = 0
    try:
        while offset < len(view):
            codec.clear()
            offset += codec.decode(view[offset:])  # type: ignore[arg-type]  # any buffer: no copy of the rest
            codec.rewind()
            codec.next()
            section = codec.get_object()
            kind = _descriptor(section)
            # plain() copies binary out of the codec's buffer before the next decode reuses it
            content = plain(getattr(section, "value", None)) if kind is not None else None
            if kind == HEADER:
                fields["header"] = _named(content, HEADER_FIELDS)
            elif kind == PROPERTIES:
                fields["properties"] = _named(content, PROPERTY_FIELDS)
            elif kind in _MAP_SECTIONS:
                fields[_MAP_SECTIONS[kind]] = content if isinstance(content, dict) else {}
            elif kind == DATA:
                data.append(content if isinstance(content, bytes) else b"")
            elif kind == AMQP_SEQUENCE:
                sequences.append(content if isinstance(content, list) else [content])
            elif kind == AMQP_VALUE:
                value, has_value = content, True
    except Exception as exc:  # proton raises DataException and friends for truncated or foreign bytes
        raise AdapterError(f"AMQP message could not be decoded: {exc}") from exc
    return fields, _body(data, sequences, value, has_value)


# -- encoding ---------------------------------------------------------------------------------------------

class _Unencodable(GatewayError):
    pass


def _timestamp(value: Any) -> timestamp:
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
        return timestamp((moment - EPOCH) // dt.timedelta(milliseconds=1))
    if isinstance(value, int) and not isinstance(value, bool):
        return timestamp(value)
    raise _Unencodable(f"expected a datetime or int milliseconds, found {type(value).__name__}")


def amqp_value(value: Any) -> Any:
    """A plain Python value as the proton type it is sent as."""
    if value is None or isinstance(value, (bool, str, float)):
        return str(value) if isinstance(value, str) else value
    if isinstance(value, int):
        if -(1 << 63) <= value < (1 << 63):
            return int(value)
        if 0 <= value < (1 << 64):
            return ulong(value)
        raise _Unencodable(f"integer {value} does not fit 64 bits")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, dt.datetime):
        return _timestamp(value)
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, dict):
        return {amqp_value(k): amqp_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [amqp_value(v) for v in value]
    raise _Unencodable(f"{type(value).__name__} has no AMQP type")


def _annotation_key(key: Any) -> Any:
    if isinstance(key, int) and not isinstance(key, bool) and key >= 0:
        return ulong(key)
    if isinstance(key, str):
        return symbol(key)
    raise _Unencodable(f"annotation key {key!r} is neither a string nor an unsigned integer")


def _message_id(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return ulong(value)
    if isinstance(value, (str, bytes, bytearray, uuid.UUID)):
        return amqp_value(value)
    raise _Unencodable(f"a message id is a string, binary, uuid or unsigned integer, found {type(value).__name__}")


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise _Unencodable(f"expected a string, found {type(value).__name__}")
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Unencodable(f"expected true or false, found {type(value).__name__}")
    return value


def _unsigned(cast: Callable[[int], Any], bits: int) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < (1 << bits):
            raise _Unencodable(f"expected an unsigned {bits}-bit integer, found {value!r}")
        return cast(value)
    return convert


def _user_id(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise _Unencodable(f"expected bytes, found {type(value).__name__}")


_HEADER_TYPES: dict[str, Callable[[Any], Any]] = {
    "durable": _bool, "priority": _unsigned(ubyte, 8), "ttl": _unsigned(uint, 32),
    "first-acquirer": _bool, "delivery-count": _unsigned(uint, 32)}
_PROPERTY_TYPES: dict[str, Callable[[Any], Any]] = {
    "message-id": _message_id, "user-id": _user_id, "to": _text, "subject": _text, "reply-to": _text,
    "correlation-id": _message_id, "content-type": lambda v: symbol(_text(v)),
    "content-encoding": lambda v: symbol(_text(v)), "absolute-expiry-time": _timestamp,
    "creation-time": _timestamp, "group-id": _text, "group-sequence": _unsigned(uint, 32),
    "reply-to-group-id": _text}


def _composite(section: str, given: Any, names: tuple[str, ...],
               types: dict[str, Callable[[Any], Any]]) -> list[Any] | None:
    if not isinstance(given, dict):
        raise _Unencodable(f"{section} must be a mapping")
    unknown = set(given) - set(names)
    if unknown:
        raise _Unencodable(f"{section} has no field {min(map(str, unknown))!r}")
    values = [types[name](given[name]) if given.get(name) is not None else None for name in names]
    while values and values[-1] is None:
        values.pop()  # trailing absent fields are omitted on the wire
    return values or None


def _map(section: str, given: Any, key: Callable[[Any], Any]) -> dict[Any, Any] | None:
    if given is None:
        return None
    if not isinstance(given, dict):
        raise _Unencodable(f"{section} must be a mapping")
    return {key(k): amqp_value(v) for k, v in given.items()} if given else None


def _put(codec: Data, descriptor: int, value: Any) -> None:
    codec.put_object(Described(ulong(descriptor), value))


def encode_message(envelope: Envelope, *, durable: bool) -> bytes:
    """The envelope's AMQP sections and a data section with its body, encoded for a transfer.

    `durable` is the header's durable flag unless the envelope's header carries one. Raises
    AdapterError (never retriable) for a field that has no AMQP form (sending it again cannot help).
    """
    fields = envelope.fields if envelope.protocol == PROTOCOL else {}
    codec = Data()
    current = ""
    try:
        current = "header"
        header = dict(fields.get("header") or {})
        header.setdefault("durable", durable)
        if (values := _composite("header", header, HEADER_FIELDS, _HEADER_TYPES)) is not None:
            _put(codec, HEADER, values)
        current = "message-annotations"
        if (annotations := _map(current, fields.get(current), _annotation_key)) is not None:
            _put(codec, MESSAGE_ANNOTATIONS, annotations)
        current = "properties"
        if fields.get(current) and (values := _composite(current, fields[current], PROPERTY_FIELDS,
                                                          _PROPERTY_TYPES)) is not None:
            _put(codec, PROPERTIES, values)
        current = "application-properties"
        if (props := _map(current, fields.get(current), lambda k: _text(k))) is not None:
            _put(codec, APPLICATION_PROPERTIES, props)
        current = "body"
        _put(codec, DATA, bytes(envelope.body))
        current = "footer"
        if (footer := _map(current, fields.get(current), _annotation_key)) is not None:
            _put(codec, FOOTER, footer)
        return codec.encode()
    except _Unencodable as exc:
        raise AdapterError(f"AMQP message cannot be encoded: {current}: {exc}") from None
    except Exception as exc:  # proton's codec refusing a value
        raise AdapterError(f"AMQP message cannot be encoded: {current}: {exc}") from exc

