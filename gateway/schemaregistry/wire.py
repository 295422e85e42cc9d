"""The Confluent wire format: what schema-registry serializers put in front of a Kafka record's payload.

    byte 0      magic byte 0x00
    bytes 1-4   schema id, big-endian (the id the registry gave the writer's schema)
    then        Protobuf only: the message indexes, a path to the message type inside the .proto:
                a varint count, then that many varint indexes (Kafka's zigzag varints, as Confluent's
                `MessageIndexes` writes them); the single byte 0x00 stands for [0], the first message
    then        the payload: Avro binary, Protobuf binary or JSON text

Pure functions: the hot path reads headers with them, tests and producers write them.
"""

from __future__ import annotations

from collections.abc import Sequence

MAGIC = 0
HEADER_SIZE = 5
# Confluent's reader takes 32-bit varints; a path deeper than this names no real message type
MAX_INDEXES = 64
_VARINT_BYTES = 5


def wire_header(schema_id: int) -> bytes:
    """Magic byte and schema id."""
    if not 0 <= schema_id < 2**32:
        raise ValueError(f"a schema id is an unsigned 32-bit number, not {schema_id}")
    return bytes((MAGIC,)) + schema_id.to_bytes(4, "big")


def _zigzag_varint(value: int) -> bytes:
    encoded = (value << 1) ^ (value >> 31)  # 32-bit zigzag, as Kafka's ByteUtils.writeVarint
    encoded &= 0xFFFFFFFF
    out = bytearray()
    while encoded > 0x7F:
        out.append((encoded & 0x7F) | 0x80)
        encoded >>= 7
    out.append(encoded)
    return bytes(out)


def message_indexes(indexes: Sequence[int]) -> bytes:
    """The Protobuf message-index prefix for a path such as [0] (first message) or [1, 0] (a nested one)."""
    if list(indexes) == [0]:
        return b"\x00"
    return _zigzag_varint(len(indexes)) + b"".join(_zigzag_varint(i) for i in indexes)


def encode(schema_id: int, payload: bytes, indexes: Sequence[int] | None = None) -> bytes:
    """A complete wire-format payload; `indexes` for Protobuf."""
    return wire_header(schema_id) + (message_indexes(indexes) if indexes is not None else b"") + payload


def read_varint(data: bytes, offset: int) -> tuple[int, int] | None:
    """A zigzag varint at `offset`: (value, offset after it), or None when truncated or longer than 32 bits."""
    result = 0
    shift = 0
    for position in range(offset, min(offset + _VARINT_BYTES, len(data))):
        byte = data[position]
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            result &= 0xFFFFFFFF
            return (result >> 1) ^ -(result & 1), position + 1
        shift += 7
    return None


def read_message_indexes(data: bytes, offset: int) -> tuple[tuple[int, ...], int] | str:
    """The message indexes starting at `offset`: (indexes, offset of the Protobuf payload), or what is wrong."""
    count = read_varint(data, offset)
    if count is None:
        return "the message-index count is truncated or not a varint"
    size, offset = count
    if size == 0:
        return (0,), offset
    if size < 0 or size > MAX_INDEXES:
        return f"the message-index count is {size}, expected 1 to {MAX_INDEXES}"
    indexes: list[int] = []
    for _ in range(size):
        index = read_varint(data, offset)
        if index is None:
            return f"the message indexes are truncated after {len(indexes)} of {size}"
        value, offset = index
        if value < 0:
            return f"message index {value} is negative"
        indexes.append(value)
    return tuple(indexes), offset
