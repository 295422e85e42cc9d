"""Kafka record <-> Envelope, in the KAFKA field shape of gateway/envelope.py.

fields: `topic` str, `partition` int, `key` bytes | None, `headers` list of (name, bytes) in wire
order with repeated names kept, `timestamp` int milliseconds (None when the record has none), and only
where the record has nulls: `tombstone` True (its value is null) and `null_headers` (the positions of the
headers whose value is null).

Judged, a null record value (tombstone) reads as an empty body and a null header value as b"". Produced to
Kafka, null stays null (issue 35): a record forwarded as it came keeps its null value and null header
values, and so does one that goes on as an Envelope (a dead letter, say): `outgoing_record` puts the nulls
back, so that log compaction still sees a tombstone and a consumer tells a null header from an empty one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from gateway.envelope import Envelope

PROTOCOL = "KAFKA"


class OutgoingRecord(NamedTuple):
    """What the sink hands to the producer for one envelope (a tuple: built once per message, and a frozen
    dataclass costs twice as much to build)."""

    value: bytes | None  # None: a tombstone
    key: bytes | None
    headers: list[tuple[str, bytes | None]]
    timestamp_ms: int | None


def record_envelope(record: Any, endpoint: str | None, ack: Any = None) -> Envelope:
    """An aiokafka ConsumerRecord as an Envelope; `position` says where it was read."""
    return kafka_envelope(record.topic, record.partition, record.offset, record.key, record.value, record.headers,
                          record.timestamp, endpoint, ack)


def kafka_envelope(topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None,
                   headers: Iterable[tuple[str, bytes | None]], timestamp_ms: int | None, endpoint: str | None,
                   ack: Any = None) -> Envelope:
    """A Kafka record, given field by field (any client, or a Spark row), as an Envelope."""
    pairs = list(headers)
    fields = {"topic": topic, "partition": partition, "key": key, "headers": pairs,
              "timestamp": timestamp_ms if timestamp_ms is not None and timestamp_ms >= 0 else None}
    for _, data in pairs:  # a null header value is rare: the pairs are looked at again only then
        if data is None:
            fields["null_headers"] = tuple(n for n, (_, data) in enumerate(pairs) if data is None)
            fields["headers"] = [(name, b"" if data is None else data) for name, data in pairs]
            break
    position = {"topic": topic, "partition": partition, "offset": offset}
    if value is None:
        fields["tombstone"] = True
        value = b""
    return Envelope(PROTOCOL, fields, value, endpoint, position, ack)


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
    nulls = fields.get("null_headers")
    if nulls:  # put back where they were: headers added on the way (`xgate-*`, defaults) come after them
        headers = list(headers)
        for number in nulls:
            if number < len(headers):
                headers[number] = (headers[number][0], None)
    body = envelope.body
    timestamp = fields.get("timestamp")
    return OutgoingRecord(
        None if fields.get("tombstone") else body if body.__class__ is bytes else as_bytes(body),
        default_key if key is None else key if key.__class__ is bytes else as_bytes(key),
        headers,
        timestamp if timestamp.__class__ is int and timestamp >= 0 else _timestamp(timestamp),
    )


def forwarded_record(record: Any, default_key: bytes | None = None,
                     default_headers: Iterable[tuple[str, bytes]] = (),
                     added: Iterable[tuple[str, str]] = ()) -> OutgoingRecord:
    """What `outgoing_record(outgoing(record_envelope(record), "KAFKA", added))` gives for an aiokafka
    ConsumerRecord forwarded as it came (a Kafka to Kafka route's records: the conformant ones, and the dead
    letters with their `xgate-*` headers `added`), without an Envelope."""
    return forwarded(record.key, record.value, record.headers, record.timestamp, default_key, default_headers, added)


def forwarded(key: bytes | None, value: bytes | None, headers: Iterable[tuple[str, bytes | None]],
              timestamp_ms: int | None, default_key: bytes | None = None,
              default_headers: Iterable[tuple[str, bytes]] = (),
              added: Iterable[tuple[str, str]] = ()) -> OutgoingRecord:
    """`forwarded_record` of a Kafka record given field by field (a Spark row): as it came, nulls included,
    then the `added` text headers, then the sink's defaults."""
    pairs = list(headers)
    if added:
        pairs += [(name, text.encode("utf-8")) for name, text in added]
    _add_defaults(pairs, default_headers)
    return OutgoingRecord(value, default_key if key is None else key, pairs,
                          timestamp_ms if timestamp_ms is not None and timestamp_ms >= 0 else None)


def _add_defaults(headers: list[tuple[str, bytes | None]], default_headers: Iterable[tuple[str, bytes]]) -> None:
    """The sink's default headers appended where the record has no header of that name."""
    if default_headers:
        present = {name for name, _ in headers}
        headers.extend((name, value) for name, value in default_headers if name not in present)


def _header_bytes(headers: Any) -> list[tuple[str, bytes | None]]:
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
