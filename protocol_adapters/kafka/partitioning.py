"""The hash the Kafka clients' default partitioner gives a record key: murmur2, as Java's `Utils.murmur2`.

The sink picks a keyed record's partition with it once per message: `murmur2` is the native core's
(native/src/murmur.rs, ~20x faster) where it is installed, else `murmur2_python`. The latter gives the same
value as `aiokafka.partitioner.murmur2`, bit for bit, in about half the time: the key is read four bytes at a
time with one `struct` call, and each step masks to 32 bits only where the next one reads the high bits.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF
# little-endian 32-bit word readers by word count, made once (keys are mostly short)
_WORDS = tuple(struct.Struct(f"<{count}I") for count in range(64))


def murmur2_python(data: bytes) -> int:
    """The unsigned 32-bit murmur2 hash of `data` (seed 0x9747b28c, as Kafka's clients)."""
    length = len(data)
    h = _SEED ^ length
    words = length >> 2
    if words:
        reader = _WORDS[words] if words < 64 else struct.Struct(f"<{words}I")
        for k in reader.unpack_from(data):
            k = (k * _M) & _MASK
            # the low 32 bits of a product and an xor depend only on the operands' low 32 bits: one mask for both
            h = (h * _M ^ (k ^ k >> 24) * _M) & _MASK
    tail = length & 3
    if tail:  # the last 1-3 bytes, xored in as one little-endian number
        h = ((h ^ int.from_bytes(data[length - tail:], "little")) * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    return h ^ h >> 15


def _native() -> Callable[[bytes], int]:
    try:  # the native core, built by `make install`
        from xgate_core import murmur2 as native
    except ImportError:  # pragma: no cover - a checkout without the core
        return murmur2_python
    return native


murmur2 = _native()
