"""Kafka's wire types and a codec driven by message schemas (schemas.py), for the few APIs the proxy reads.

A schema is a tuple of fields, each valid over a range of versions; a message version at or above its
`flexible` one uses the compact forms (unsigned varint lengths plus one) and carries tagged fields after
every struct. Decoded messages are plain dicts; an array of structs a list of dicts; each struct's tagged
fields stay raw bytes by tag under `TAGS` (the proxy rewrites none of them), so a message encodes back to
the bytes it came from.

Bounds: every length is checked against what is left of the frame before anything is allocated, so a frame
that claims more than it holds is a `WireError`, never a large allocation. So is a null where the version
allows none (Kafka's readers refuse it, and code iterating a list would trip on it), and tagged fields out of
ascending order or repeated (Kafka writes them ascending; others would not encode back to what came).
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from struct import Struct
from typing import Any

from gateway.errors import GatewayError

TAGS = "_tagged"


class WireError(GatewayError):
    """A frame that does not read as the message it claims to be."""


@dataclass(frozen=True, slots=True)
class Versions:
    low: int
    high: int | None  # None: no upper bound

    @classmethod
    def parse(cls, text: str) -> Versions:
        """Kafka's notation: "3+", "0-12", "5", "none"."""
        if text == "none":
            return cls(1, 0)
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        low, _, high = text.partition("-")
        return cls(int(low), int(high or low))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.low <= version and (self.high is None or version <= self.high)


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: str | tuple[Field, ...]  # a primitive's name, "[]" + a primitive's, or a struct array's fields
    versions: Versions
    nullable: Versions


def field(name: str, kind: str | tuple[Field, ...], versions: str = "0+", nullable: str = "none") -> Field:
    return Field(name, kind, Versions.parse(versions), Versions.parse(nullable))


@dataclass(frozen=True, slots=True)
class Message:
    name: str
    flexible: int  # the first flexible version
    fields: tuple[Field, ...]

    def decode(self, data: bytes | memoryview, version: int, offset: int = 0) -> tuple[dict[str, Any], int]:
        """The message read from `data` at `offset`, and where it ended."""
        reader = Reader(data, offset)
        value = reader.struct(self.fields, version, version >= self.flexible)
        return value, reader.offset

    def encode(self, value: dict[str, Any], version: int) -> bytes:
        writer = Writer()
        writer.struct(self.fields, value, version, version >= self.flexible)
        return writer.getvalue()


_FIXED = {"int8": struct.Struct(">b"), "int16": struct.Struct(">h"), "int32": struct.Struct(">i"),
          "int64": struct.Struct(">q"), "uint16": struct.Struct(">H"), "float64": struct.Struct(">d")}


class Reader:
    __slots__ = ("data", "offset")

    def __init__(self, data: bytes | memoryview, offset: int = 0) -> None:
        self.data = memoryview(data)
        self.offset = offset

    def take(self, size: int) -> memoryview:
        if size < 0 or self.offset + size > len(self.data):
            raise WireError(f"{size} bytes claimed at offset {self.offset}, {len(self.data) - self.offset} left")
        start = self.offset
        self.offset += size
        return self.data[start:self.offset]

    def fixed(self, kind: str) -> Any:
        codec = _FIXED[kind]
        return codec.unpack(self.take(codec.size))[0]

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise WireError(f"an unsigned varint longer than 5 bytes at offset {self.offset}")

    def length(self, compact: bool, wide: bool = False) -> int:
        """A length prefix; -1 for null."""
        if compact:
            return self.uvarint() - 1
        return int(self.fixed("int32" if wide else "int16"))

    def string(self, compact: bool) -> str | None:
        size = self.length(compact)
        if size < 0:
            return None
        try:
            return str(self.take(size), "utf-8")
        except UnicodeDecodeError as exc:
            raise WireError(f"a string that is not UTF-8 at offset {self.offset - size}") from exc

    def blob(self, compact: bool) -> bytes | None:
        size = self.length(compact, wide=True)
        return None if size < 0 else bytes(self.take(size))

    def value(self, kind: str, compact: bool) -> Any:
        if kind in _FIXED:
            return self.fixed(kind)
        if kind == "bool":
            return self.take(1)[0] != 0
        if kind == "string":
            return self.string(compact)
        if kind in ("bytes", "records"):
            return self.blob(compact)
        if kind == "uuid":
            return uuid.UUID(bytes=bytes(self.take(16)))
        raise WireError(f"no reader for the type {kind}")

    def count(self, compact: bool) -> int:
        """An array's item count; -1 for null. Every item takes at least a byte, so more than are left is wrong."""
        count = self.length(compact, wide=True)
        if count > len(self.data) - self.offset:
            raise WireError(f"an array of {count} items at offset {self.offset} in a shorter frame")
        return count

    def tagged(self) -> dict[int, bytes]:
        fields: dict[int, bytes] = {}
        last = -1
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            if tag <= last:
                raise WireError(f"tagged field {tag} after tagged field {last} at offset {self.offset}")
            fields[tag] = bytes(self.take(self.uvarint()))
            last = tag
        return fields

    def struct(self, fields: tuple[Field, ...], version: int, flexible: bool) -> dict[str, Any]:
        value: dict[str, Any] = {}
        for name, kind, nullable in _steps(fields, version):
            if kind.__class__ is Struct:  # fixed-size numbers, the most common fields, without a call
                item = kind.unpack(self.take(kind.size))[0]
            else:
                item = self.item(kind, version, flexible)
                if item is None and not nullable:  # Kafka's own readers refuse these too
                    raise WireError(f"{name} is null before offset {self.offset}, which version {version} forbids")
            value[name] = item
        if flexible:
            value[TAGS] = self.tagged()
        return value

    def item(self, kind: str | tuple[Field, ...], version: int, flexible: bool) -> Any:
        if isinstance(kind, str) and not kind.startswith("[]"):
            return self.value(kind, flexible)
        count = self.count(flexible)
        if count < 0:
            return None
        if isinstance(kind, tuple):
            return [self.struct(kind, version, flexible) for _ in range(count)]
        return [self.value(kind[2:], flexible) for _ in range(count)]


# (fields, version) -> the fields present at that version as (name, type, nullable), a fixed-size number's
# type as its Struct: a produce request is decoded for every request, and asking each field whether it
# exists at this version took a third of that. Keyed by the tuple's id, kept beside it (ids are reused).
_STEPS: dict[tuple[int, int], tuple[tuple[Field, ...], tuple[tuple[str, Any, bool], ...]]] = {}


def _steps(fields: tuple[Field, ...], version: int) -> tuple[tuple[str, Any, bool], ...]:
    found = _STEPS.get((id(fields), version))
    if found is not None and found[0] is fields:
        return found[1]
    steps = tuple((spec.name, _FIXED.get(spec.type, spec.type) if isinstance(spec.type, str) else spec.type,
                   version in spec.nullable) for spec in fields if version in spec.versions)
    _STEPS[(id(fields), version)] = (fields, steps)
    return steps


class Writer:
    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def getvalue(self) -> bytes:
        return b"".join(self.parts)

    def fixed(self, kind: str, number: Any) -> None:
        self.parts.append(_FIXED[kind].pack(number))

    def uvarint(self, number: int) -> None:
        out = bytearray()
        while number > 0x7F:
            out.append((number & 0x7F) | 0x80)
            number >>= 7
        out.append(number)
        self.parts.append(bytes(out))

    def length(self, size: int, compact: bool, wide: bool = False) -> None:
        if compact:
            self.uvarint(size + 1)
        else:
            self.fixed("int32" if wide else "int16", size)

    def value(self, kind: str, item: Any, compact: bool) -> None:
        if kind in _FIXED:
            self.fixed(kind, item)
        elif kind == "bool":
            self.parts.append(b"\x01" if item else b"\x00")
        elif kind == "string":
            if item is None:
                self.length(-1, compact)
            else:
                encoded = item.encode("utf-8")
                self.length(len(encoded), compact)
                self.parts.append(encoded)
        elif kind in ("bytes", "records"):
            if item is None:
                self.length(-1, compact, wide=True)
            else:
                self.length(len(item), compact, wide=True)
                self.parts.append(bytes(item))
        elif kind == "uuid":
            self.parts.append(item.bytes)
        else:
            raise WireError(f"no writer for the type {kind}")

    def tagged(self, fields: dict[int, bytes]) -> None:
        self.uvarint(len(fields))
        for tag in sorted(fields):
            self.uvarint(tag)
            self.uvarint(len(fields[tag]))
            self.parts.append(fields[tag])

    def struct(self, fields: tuple[Field, ...], value: dict[str, Any], version: int, flexible: bool) -> None:
        for spec in fields:
            if version not in spec.versions:
                continue
            item = value.get(spec.name)
            kind = spec.type
            if isinstance(kind, str) and not kind.startswith("[]"):
                self.value(kind, item, flexible)
            elif item is None:
                self.length(-1, flexible, wide=True)
            else:
                self.length(len(item), flexible, wide=True)
                for element in item:
                    if isinstance(kind, tuple):
                        self.struct(kind, element, version, flexible)
                    else:
                        self.value(kind[2:], element, flexible)
        if flexible:
            self.tagged(value.get(TAGS) or {})
