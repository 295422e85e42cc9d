"""What the loader knows about schemas from a Confluent-compatible registry, handed to the compiler."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from gateway.model.resolved import PayloadSchema

# the registry's `schemaType` (absent: AVRO) -> a dataschemaformat name xgate reads
SCHEMA_TYPES = {"AVRO": "Avro", "PROTOBUF": "Protobuf", "JSON": "JsonSchema"}


@dataclass(frozen=True, slots=True)
class RegisteredSchema:
    """One schema of the registry, by id; `subject` and `version` when it was found through a subject."""

    id: int
    schema_type: str          # AVRO | PROTOBUF | JSON
    schema: str
    subject: str | None = None
    version: int | None = None

    @property
    def label(self) -> str:
        where = f"subject {self.subject} version {self.version}" if self.subject is not None else self.schema_type
        return f"{self.id} ({where})"


@dataclass(frozen=True, slots=True)
class RegistryPayloadSchema(PayloadSchema):
    """A payload schema that came from a schema registry: the payload travels in the Confluent wire format.

    `format`, `schema` and `type_name` are those of the default schema (the named version, the newest
    version for `latest`, or the named id): what a payload without the wire-format header, the JSON `data`
    of a structured CloudEvent, is judged by. `allowed` are the schemas whose ids a payload may carry.
    `known` maps every id fetched from the same registry during the load to its label, so that an id that
    exists but is not allowed reads differently from one never seen.
    """

    registry: str = ""
    reference: str = ""
    allowed: tuple[RegisteredSchema, ...] = ()
    default_id: int = 0
    known: Mapping[int, str] = field(default_factory=lambda: MappingProxyType({}), compare=False, repr=False)
