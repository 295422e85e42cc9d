"""The sink's murmur2 against the Kafka clients': the partition of every keyed record depends on it."""

from __future__ import annotations

import random
from typing import Any

import pytest
from aiokafka.partitioner import murmur2 as aiokafka_murmur2  # type: ignore[import-untyped]

from protocol_adapters.kafka.partitioning import murmur2, murmur2_python

try:
    from xgate_core import murmur2 as native_murmur2
except ImportError:  # a checkout without the core: the Python one only
    native_murmur2 = None

# the sink's (the core's, where built) and the Python one: both must be Kafka's
HASHES = [pytest.param(murmur2_python, id="python"),
          pytest.param(native_murmur2, id="native",
                       marks=pytest.mark.skipif(native_murmur2 is None, reason="the native core is not built"))]

# Java's UtilsTest.testMurmur2 (signed int32 there)
JAVA_VECTORS = [(b"21", -973932308), (b"foobar", -790332482), (b"a-little-bit-long-string", -985981536),
                (b"a-little-bit-longer-string", -1486304829),
                (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971), (b"abc", 479470107)]


@pytest.mark.parametrize("hash_of", HASHES)
@pytest.mark.parametrize("key, expected", JAVA_VECTORS)
def test_the_java_clients_vectors(hash_of: Any, key: bytes, expected: int) -> None:
    assert hash_of(key) == expected & 0xFFFFFFFF


@pytest.mark.parametrize("hash_of", HASHES)
def test_equal_to_aiokafka_on_random_keys_of_every_length_up_to_300(hash_of: Any) -> None:
    chance = random.Random(18)
    keys = [b"", b"\x00", b"\xff" * 4, b"\xff" * 7, b"\x80" * 300]
    keys += [chance.randbytes(length) for length in range(301) for _ in range(10)]
    for key in keys:
        assert hash_of(key) == aiokafka_murmur2(key), key


@pytest.mark.parametrize("hash_of", HASHES)
def test_keys_longer_than_the_prepared_readers(hash_of: Any) -> None:
    key = bytes(range(256)) * 8
    assert hash_of(key) == aiokafka_murmur2(key)


def test_the_sink_hashes_with_the_core_where_it_is_built() -> None:
    assert murmur2 is (native_murmur2 or murmur2_python)
