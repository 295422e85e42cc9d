"""The resolved registry: what the compiler consumes (references followed, basemessage merged)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.model.entities import Entity, Origin


@dataclass(frozen=True, slots=True)
class PayloadSchema:
    format: str | None
    schema: Any
    type_name: str | None
    origin: Origin


@dataclass(frozen=True, slots=True)
class MessageDefinition:
    groupid: str
    messageid: str
    attrs: dict[str, Any]
    payload: PayloadSchema | None
    origin: Origin
    # why a declared schema is not checked (a remote URI that may not be fetched)
    payload_note: str | None = None


@dataclass(frozen=True, slots=True)
class EndpointDefinition:
    endpointid: str
    attrs: dict[str, Any]
    messages: tuple[MessageDefinition, ...]
    origin: Origin


@dataclass(slots=True)
class Registry:
    endpoints: dict[str, EndpointDefinition] = field(default_factory=dict)
    messages: dict[tuple[str, str], MessageDefinition] = field(default_factory=dict)
    messagegroups: dict[str, Entity] = field(default_factory=dict)
    schemagroups: dict[str, Entity] = field(default_factory=dict)
