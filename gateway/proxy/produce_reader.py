"""A produce request's body read in straight-line code: every produce request is read, and the schema-driven
codec (wire.py, schemas.PRODUCE_REQUEST) took 20-27 µs for one of three partitions, a tenth of the proxy's
time at half load. This gives the codec's dict, field for field, for a request that reads cleanly, and None
for anything else (a null where none may be, a cut or over-long body, bad UTF-8, tagged fields): the codec
then reads it and says what is wrong, so it stays the one author of what a produce request is.
"""

from __future__ import annotations

import struct
from typing import Any

from gateway.errors import GatewayError
from gateway.proxy.wire import TAGS

_I16 = struct.Struct(">h").unpack_from
_I32 = struct.Struct(">i").unpack_from
_TWO_I32 = struct.Struct(">ii").unpack_from
_ACKS_TIMEOUT = struct.Struct(">hi").unpack_from
FIRST_FLEXIBLE = 9  # schemas.FLEXIBLE[PRODUCE]


class _Unread(GatewayError):  # internal: never leaves this module
    pass


def read(frame: bytes, offset: int, version: int) -> dict[str, Any] | None:
    """The request body from `offset` to the end of `frame` as schemas.PRODUCE_REQUEST decodes it at
    `version` (3-12), or None when the codec must read it."""
    if not 3 <= version <= 12:  # no TransactionalId before 3, a TopicId for a name from 13
        return None
    try:
        if version >= FIRST_FLEXIBLE:
            return _Flexible(frame, offset).request()
        return _classic(frame, offset)
    except (_Unread, struct.error, UnicodeDecodeError, IndexError):
        return None


def _classic(data: bytes, at: int) -> dict[str, Any]:
    """Versions 3-8: int16-length strings, int32-length arrays and bytes."""
    end = len(data)
    transactional_id, at = _int16_text(data, at)
    acks, timeout = _ACKS_TIMEOUT(data, at)
    at += 6
    count, at = _int32_count(data, at)
    topics = []
    for _ in range(count):
        name, at = _int16_text(data, at)
        if name is None:
            raise _Unread
        partitions_count, at = _int32_count(data, at)
        partitions = []
        for _ in range(partitions_count):
            index, size = _TWO_I32(data, at)
            at += 8
            records = None
            if size >= 0:
                if at + size > end:
                    raise _Unread
                records = data[at:at + size]
                at += size
            partitions.append({"Index": index, "Records": records})
        topics.append({"Name": name, "PartitionData": partitions})
    if at != end:
        raise _Unread
    return {"TransactionalId": transactional_id, "Acks": acks, "TimeoutMs": timeout, "TopicData": topics}


def _int32_count(data: bytes, at: int) -> tuple[int, int]:
    """An array's int32 item count at `at`, and where it ends; a null array, or more items than bytes left
    (each takes at least one), is the codec's to refuse."""
    count = _I32(data, at)[0]
    at += 4
    if not 0 <= count <= len(data) - at:
        raise _Unread
    return count, at


def _int16_text(data: bytes, at: int) -> tuple[str | None, int]:
    """An int16-length string at `at` (None for null), and where it ends."""
    size = _I16(data, at)[0]
    at += 2
    if size < 0:
        return None, at
    if at + size > len(data):
        raise _Unread
    return data[at:at + size].decode(), at + size


class _Flexible:
    """Version 9 on: compact (unsigned varint, plus one) lengths, and tagged fields after every struct, which
    must be none here (a request that carries some goes to the codec)."""

    __slots__ = ("at", "data")

    def __init__(self, data: bytes, at: int) -> None:
        self.data, self.at = data, at

    def request(self) -> dict[str, Any]:
        data, end = self.data, len(self.data)
        transactional_id = self.text(nullable=True)
        acks, timeout = _ACKS_TIMEOUT(data, self.at)
        self.at += 6
        topics = []
        for _ in range(self.count()):
            name = self.text(nullable=False)
            partitions = []
            for _ in range(self.count()):
                index = _I32(data, self.at)[0]
                self.at += 4
                size = self.uvarint() - 1
                records = None
                if size >= 0:
                    if self.at + size > end:
                        raise _Unread
                    records = data[self.at:self.at + size]
                    self.at += size
                partitions.append({"Index": index, "Records": records, TAGS: self.no_tags()})
            topics.append({"Name": name, "PartitionData": partitions, TAGS: self.no_tags()})
        request = {"TransactionalId": transactional_id, "Acks": acks, "TimeoutMs": timeout, "TopicData": topics,
                   TAGS: self.no_tags()}
        if self.at != end:
            raise _Unread
        return request

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.data[self.at]
            self.at += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise _Unread

    def text(self, nullable: bool) -> str | None:
        size = self.uvarint() - 1
        if size < 0:
            if nullable:
                return None
            raise _Unread
        start = self.at
        if start + size > len(self.data):
            raise _Unread
        self.at += size
        return self.data[start:self.at].decode()

    def count(self) -> int:
        count = self.uvarint() - 1
        if not 0 <= count <= len(self.data) - self.at:
            raise _Unread
        return count

    def no_tags(self) -> dict[int, bytes]:
        if self.uvarint() != 0:
            raise _Unread
        return {}
