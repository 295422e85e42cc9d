"""The sink's murmur2 against the Kafka clients': the partition of every keyed record depends on it."""

from __future__ import annotations

import random

import pytest
from aiokafka.partitioner import murmur2 as aiokafka_murmur2  # type: ignore[import-untyped]

from protocol_adapters.kafka.partitioning import murmur2

# Java's UtilsTest.testMurmur2 (signed int32 there)
JAVA_VECTORS = [(b"21", -973932308), (b"foobar", -790332482), (b"a-little-bit-long-string", -985981536),
                (b"a-little-bit-longer-string", -1486304829),
                (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971), (b"abc", 479470107)]


@pytest.mark.parametrize("key, expected", JAVA_VECTORS)
def test_the_java_clients_vectors(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected & 0xFFFFFFFF


def test_equal_to_aiokafka_on_random_keys_of_every_length_up_to_300() -> None:
    chance = random.Random(18)
    keys = [b"", b"\x00", b"\xff" * 4, b"\xff" * 7, b"\x80" * 300]
    keys += [chance.randbytes(length) for length in range(301) for _ in range(10)]
    for key in keys:
        assert murmur2(key) == aiokafka_murmur2(key), key


def test_keys_longer_than_the_prepared_readers() -> None:
    key = bytes(range(256)) * 8
    assert murmur2(key) == aiokafka_murmur2(key)
