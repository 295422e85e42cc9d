"""Kafka record <-> Envelope, in the KAFKA field shape of gateway/envelope.py.

fields: `topic` str, `partition` int, `key` bytes | None, `headers` list of (name, bytes) in wire
order with repeated names kept, `timestamp` int milliseconds (None when the record has none).
A null record value (tombstone) becomes an empty body; a null header value becomes b"".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from gateway.envelope import Envelope

PROTOCOL = "KAFKA"


class OutgoingRecord(NamedTuple):
    """What the sink hands to the producer for one envelope (a tuple: built once per message, and a frozen
    dataclass costs twice as much to build)."""

    value: bytes
    key: bytes | None
    headers: list[tuple[str, bytes]]
    timestamp_ms: int | None


def record_envelope(record: Any, endpoint: str | None, ack: Any = None) -> Envelope:
    """An aiokafka ConsumerRecord as an Envelope; `position` says where it was read."""
    return kafka_envelope(record.topic, record.partition, record.offset, record.key, record.value, record.headers,
                          record.timestamp, endpoint, ack)


def kafka_envelope(topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None,
                   headers: Iterable[tuple[str, bytes | None]], timestamp_ms: int | None, endpoint: str | None,
                   ack: Any = None) -> Envelope:
    """A Kafka record, given field by field (any client, or a Spark row), as an Envelope."""
    fields = {"topic": topic, "partition": partition, "key": key, "headers": _header_list(headers),
              "timestamp": timestamp_ms if timestamp_ms is not None and timestamp_ms >= 0 else None}
    position = {"topic": topic, "partition": partition, "offset": offset}
    return Envelope(PROTOCOL, fields, b"" if value is None else value, endpoint, position, ack)


def outgoing_record(envelope: Envelope, default_key: bytes | None = None,
                    default_headers: Iterable[tuple[str, bytes]] = ()) -> OutgoingRecord:
    """The record to produce for `envelope`: its body, key, headers and timestamp, as bytes for the wire."""
    fields = envelope.fields
    key = fields.get("key")
    headers = fields.get("headers")
    if headers.__class__ is list and not default_headers:
        # a Kafka source's (str, bytes) pairs go to the producer as they are (it only reads them)
        for name, value in headers:
            if name.__class__ is not str or value.__class__ is not bytes:
                headers = _header_bytes(headers)
                break
    else:
        headers = _header_bytes(headers)
        _add_defaults(headers, default_headers)
    body = envelope.body
    timestamp = fields.get("timestamp")
    return OutgoingRecord(
        body if body.__class__ is bytes else as_bytes(body),
        default_key if key is None else key if key.__class__ is bytes else as_bytes(key),
        headers,
        timestamp if timestamp.__class__ is int and timestamp >= 0 else _timestamp(timestamp),
    )


def forwarded_record(record: Any, default_key: bytes | None = None,
                     default_headers: Iterable[tuple[str, bytes]] = ()) -> OutgoingRecord:
    """What `outgoing_record(record_envelope(record))` gives for an aiokafka ConsumerRecord forwarded as it came
    (a Kafka to Kafka route's conformant records), without the Envelope."""
    return forwarded(record.key, record.value, record.headers, record.timestamp, default_key, default_headers)


def forwarded(key: bytes | None, value: bytes | None, headers: Iterable[tuple[str, bytes | None]],
              timestamp_ms: int | None, default_key: bytes | None = None,
              default_headers: Iterable[tuple[str, bytes]] = ()) -> OutgoingRecord:
    """`forwarded_record` of a Kafka record given field by field (a Spark row)."""
    pairs = _header_list(headers)
    _add_defaults(pairs, default_headers)
    return OutgoingRecord(b"" if value is None else value, default_key if key is None else key, pairs,
                          timestamp_ms if timestamp_ms is not None and timestamp_ms >= 0 else None)


def _header_list(headers: Iterable[tuple[str, bytes | None]]) -> list[tuple[str, bytes]]:
    """Header pairs as a new list (a consumer gives a tuple), a null value as b""."""
    pairs = list(headers)
    for _, data in pairs:  # a null header value is rare: the pairs are copied one by one only then
        if data is None:
            return [(name, b"" if data is None else data) for name, data in pairs]
    return pairs  # type: ignore[return-value]  # no None in them


def _add_defaults(headers: list[tuple[str, bytes]], default_headers: Iterable[tuple[str, bytes]]) -> None:
    """The sink's default headers appended where the record has no header of that name."""
    if default_headers:
        present = {name for name, _ in headers}
        headers.extend((name, value) for name, value in default_headers if name not in present)


def _header_bytes(headers: Any) -> list[tuple[str, bytes]]:
    """Header pairs (a list or a map) as new (str, bytes) pairs."""
    return [(name, value) if name.__class__ is str and value.__class__ is bytes else (str(name), as_bytes(value))
            for name, value in _pairs(headers)]


def as_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if value is None:
        return b""
    return str(value).encode("utf-8")


def _pairs(headers: Any) -> Iterable[tuple[Any, Any]]:
    if not headers:
        return ()
    if isinstance(headers, Mapping):
        return headers.items()
    pairs: Iterable[tuple[Any, Any]] = headers
    return pairs


def _timestamp(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    return int(value)
