"""Normalized registry entities.

Every document generation is rewritten into the 1.0 attribute names; an
Entity keeps those attributes as plain values plus where it came from, so
that every later error can name the file and JSON pointer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway import pointers


@dataclass(frozen=True, slots=True)
class Origin:
    file: str
    pointer: str

    def child(self, *segments: str) -> Origin:
        return Origin(self.file, self.pointer + pointers.pointer(segments))


@dataclass(frozen=True, slots=True)
class Ref:
    """A reference written in a document, made absolute.

    kind: "local" (file + JSON pointer), "xid" (registry-wide path) or "remote" (a URI: `file` holds it
    without its fragment, `pointer` the fragment; fetched only as the `remote` settings allow).
    `selector` is a trailing `:TypeName` (Avro record or Protobuf message).
    `text` is what the document said and `where` the attribute that said it, for error messages.
    """

    kind: str
    text: str
    file: str = ""
    pointer: str = ""
    selector: str | None = None
    # where the document wrote it (the attribute as spelled in that file), for error messages
    where: Origin | None = field(default=None, compare=False)


@dataclass(slots=True)
class Entity:
    """One endpoint, message group, message, schema group, schema or schema version."""

    kind: str
    id: str
    attrs: dict[str, Any]
    origin: Origin
    children: dict[str, Entity] = field(default_factory=dict)


@dataclass(slots=True)
class Doc:
    """One document's entities, keyed by collection then id."""

    file: str
    generation: str
    endpoints: dict[str, Entity] = field(default_factory=dict)
    messagegroups: dict[str, Entity] = field(default_factory=dict)
    schemagroups: dict[str, Entity] = field(default_factory=dict)

    def collection(self, name: str) -> dict[str, Entity]:
        return {"endpoints": self.endpoints, "messagegroups": self.messagegroups,
                "schemagroups": self.schemagroups}[name]
