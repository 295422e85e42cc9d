"""The Confluent wire-format header and Protobuf message indexes, read and written."""

from __future__ import annotations

import pytest

from gateway.schemaregistry.wire import encode, message_indexes, read_message_indexes, read_varint, wire_header
from tests.unit.schemaregistry.standin import header, indexes_prefix


def test_the_header_is_the_magic_byte_and_a_big_endian_id() -> None:
    assert wire_header(1) == b"\x00\x00\x00\x00\x01"
    assert wire_header(0x01020304) == b"\x00\x01\x02\x03\x04"
    assert wire_header(2**32 - 1) == header(2**32 - 1)
    with pytest.raises(ValueError):
        wire_header(2**32)


@pytest.mark.parametrize(("indexes", "expected"), [
    ([0], b"\x00"),                  # Confluent's shortcut for the first message
    ([1], b"\x02\x02"),              # count 1, index 1, both zigzag
    ([1, 0], b"\x04\x02\x00"),       # a nested message: the first nested type of the second message
    ([0, 2], b"\x04\x00\x04"),
    ([64], b"\x02\x80\x01"),         # zigzag 128 takes two varint bytes
])
def test_message_indexes_are_written_as_confluents_serializer_writes_them(indexes: list[int], expected: bytes) -> None:
    assert message_indexes(indexes) == expected == indexes_prefix(indexes)
    assert read_message_indexes(b"xx" + expected + b"rest", 2) == (tuple(indexes), 2 + len(expected))


def test_a_count_of_zero_means_the_first_message() -> None:
    assert read_message_indexes(b"\x00\x0a", 0) == ((0,), 1)


@pytest.mark.parametrize(("data", "problem"), [
    (b"", "count is truncated"),
    (b"\x80", "count is truncated"),                    # a varint that never ends
    (b"\x80\x80\x80\x80\x80\x01", "count is truncated"),  # longer than 32 bits
    (b"\x01", "count is -1"),                           # zigzag 1 is -1
    (b"\x02", "truncated after 0 of 1"),
    (b"\x04\x02", "truncated after 1 of 2"),
    (b"\x02\x01", "index -1 is negative"),
    (b"\xfe\x01", "count is 127"),
])
def test_broken_message_indexes_say_what_is_wrong(data: bytes, problem: str) -> None:
    found = read_message_indexes(data, 0)
    assert isinstance(found, str) and problem in found


def test_varints_round_trip() -> None:
    for value in (0, 1, -1, 63, -64, 64, 1000, 2**31 - 1, -(2**31)):
        written = indexes_prefix([5, value])[2:] if value != 0 else b"\x00"
        assert read_varint(written, 0) == (value, len(written))


def test_encode_puts_the_indexes_between_header_and_payload() -> None:
    assert encode(7, b"data") == b"\x00\x00\x00\x00\x07data"
    assert encode(7, b"data", [1]) == b"\x00\x00\x00\x00\x07\x02\x02data"
