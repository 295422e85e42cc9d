"""Payloads in the Confluent wire format, for schemas that came from a Confluent-compatible registry.

The header (gateway/schemaregistry/wire.py) is read and stripped, its schema id must be one the definition
allows, and the rest is judged by the schema of that id: the writer's schema, the only one an Avro binary
payload can be decoded with. Protobuf payloads carry message indexes after the id; they select the message
type inside the .proto (any of the file's messages, or only the one a `:Type` selector names).

Verdicts (validation rule 6 rule names, path `dataschema:`):

- `decode`: the bytes cannot be read as the format requires: empty, a first byte other than the magic
  byte 0x00, fewer than the 5 header bytes, truncated or invalid Protobuf message indexes, indexes that
  name no message of the schema; and whatever the writer's schema cannot decode (Avro bytes left over...);
- `schema`: the header is readable but names a schema the definition does not accept: an id that is not
  allowed (one fetched from the registry for another subject or version), an id never fetched (unknown:
  ids are not looked up while messages flow), a Protobuf message other than the selected one; and a
  payload that decodes but breaks its schema (JSON Schema, missing proto2 required fields).

Nothing here does I/O: every schema was fetched when loading.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from gateway.errors import SchemaCompileError
from gateway.model.formats import JSONSCHEMA, PROTOBUF, SchemaFormat, normalize_schema_format
from gateway.schemaregistry.model import SCHEMA_TYPES, RegistryPayloadSchema
from gateway.schemaregistry.wire import HEADER_SIZE, MAGIC, read_message_indexes

from .base import PayloadValidator, Violations, decode_violation, schema_violation
from .compile import compile_payload_validator

HEADER = "Confluent wire format: magic byte 0x00, then a 4-byte schema id"
PayloadCheck = Callable[[bytes], "Violations | None"]
MAX_LISTED = 5  # allowed ids named in a violation


@dataclass(frozen=True, slots=True)
class WireSchema:
    """One schema a payload may name: its registry id, how to report it, its format and text."""

    id: int
    label: str
    format: SchemaFormat
    schema: object


class ConfluentValidator:
    """Strips and checks the wire-format header, then judges the payload by the schema its id names."""

    __slots__ = ("_allowed", "_default", "_known", "_registry", "_wanted", "kind")

    def __init__(self, kind: str, allowed: dict[int, PayloadCheck], default: PayloadValidator, wanted: str,
                 known: Mapping[int, str], registry: str) -> None:
        self.kind = kind
        self._allowed = allowed
        self._default = default
        self._wanted = wanted
        self._known = known
        self._registry = registry

    def check_bytes(self, body: bytes, content_type: str | None) -> Violations | None:
        # the encoding is the registry's (Avro and Protobuf binary, JSON text), whatever the content type says
        if len(body) >= HEADER_SIZE and body[0] == MAGIC:
            check = self._allowed.get(int.from_bytes(body[1:HEADER_SIZE], "big"))
            if check is not None:
                return check(body)
        return self._header_problem(body)

    def check_value(self, value: object) -> Violations | None:
        """A parsed JSON value (structured CloudEvent `data`) has no header: judged by the default schema."""
        return self._default.check_value(value)

    def _header_problem(self, body: bytes) -> Violations:
        if not body:
            return (decode_violation(HEADER, "", "payload is empty; expected the Confluent wire-format header "
                                     "(magic byte 0x00 and a 4-byte schema id) before the data"),)
        if body[0] != MAGIC:
            return (decode_violation(HEADER, _hex(body), f"payload starts with 0x{body[0]:02x}, not the Confluent "
                                     "wire-format magic byte 0x00: it was not written by a schema-registry "
                                     "serializer"),)
        if len(body) < HEADER_SIZE:
            return (decode_violation(HEADER, _hex(body), f"payload is {len(body)} byte{'s' if len(body) != 1 else ''}, "
                                     f"shorter than the {HEADER_SIZE}-byte Confluent wire-format header "
                                     "(truncated)"),)
        schema_id = int.from_bytes(body[1:HEADER_SIZE], "big")
        label = self._known.get(schema_id)
        if label is not None:
            message = (f"schema id {label} of registry {self._registry!r} is not one this definition allows "
                       f"(allowed: {self._wanted})")
        else:
            message = (f"schema id {schema_id} is unknown: it is not among the ids fetched from registry "
                       f"{self._registry!r} when loading (ids are not looked up while messages flow; a version "
                       f"registered since is known after a reload); allowed: {self._wanted}")
        return (schema_violation("", f"schema id {self._wanted}", schema_id, message),)


def _hex(body: bytes) -> str:
    """The first bytes, as the header is read: `00 00 00 00 2a ...`."""
    return body[:16].hex(" ") + (" ..." if len(body) > 16 else "")


def compile_registry_payload(payload: RegistryPayloadSchema) -> ConfluentValidator:
    """The validator of a definition whose schema came from a registry. A declared JSON Schema draft
    (`dataschemaformat: JsonSchema/draft/2020-12`) applies to the registry's JSON schemas."""
    declared = normalize_schema_format(payload.format) if isinstance(payload.format, str) else None
    schemas = []
    for registered in payload.allowed:
        fmt = normalize_schema_format(SCHEMA_TYPES[registered.schema_type])
        assert fmt is not None
        if declared is not None and declared.kind == fmt.kind:
            fmt = declared
        schemas.append(WireSchema(registered.id, registered.label, fmt, registered.schema))
    return compile_confluent(schemas, payload.default_id, payload.type_name, payload.known, payload.registry)


def compile_confluent(schemas: Sequence[WireSchema], default_id: int, type_name: str | None,
                      known: Mapping[int, str], registry: str) -> ConfluentValidator:
    """One validator for every schema a definition allows; SchemaCompileError names the failing one."""
    allowed: dict[int, PayloadCheck] = {}
    default: PayloadValidator | None = None
    kind = ""
    for wire in schemas:
        try:
            check, validator = _compile_one(wire, type_name)
        except SchemaCompileError as exc:
            raise SchemaCompileError(f"registry schema id {wire.label}: {exc}", exc.pointer) from exc
        allowed[wire.id] = check
        if wire.id == default_id:
            default, kind = validator, wire.format.kind
    if default is None:
        raise SchemaCompileError(f"schema id {default_id} is not among the allowed schemas")
    shown = [w.label for w in schemas[-MAX_LISTED:]]  # the newest, for a `latest` subject of many versions
    wanted = " or ".join(shown) + (f" (and {len(schemas) - len(shown)} older)" if len(schemas) > len(shown) else "")
    return ConfluentValidator(kind, allowed, default, wanted, known, registry)


def _compile_one(wire: WireSchema, type_name: str | None) -> tuple[PayloadCheck, PayloadValidator]:
    if wire.format.kind == PROTOBUF:
        from .protobuf import compile_protobuf_indexed

        by_index, selected = compile_protobuf_indexed(wire.schema, type_name)
        default = by_index[selected if selected is not None else (0,)]
        return _protobuf_check(wire, by_index, selected), default
    # JSON Schema ignores a selector; Avro uses it to pick a named type
    validator = compile_payload_validator(wire.format, wire.schema,
                                          type_name=type_name if wire.format.kind != JSONSCHEMA else None)
    check_bytes = validator.check_bytes

    def check(body: bytes) -> Violations | None:
        return check_bytes(body[HEADER_SIZE:], None)
    return check, validator


def _protobuf_check(wire: WireSchema, by_index: Mapping[tuple[int, ...], PayloadValidator],
                    selected: tuple[int, ...] | None) -> PayloadCheck:
    label = wire.label
    selected_name = getattr(by_index[selected], "type_name", str(selected)) if selected is not None else None

    def check(body: bytes) -> Violations | None:
        read = read_message_indexes(body, HEADER_SIZE)
        if isinstance(read, str):
            return (decode_violation("Protobuf message indexes after the schema id", body[HEADER_SIZE:],
                                     f"payload of schema id {label}: {read}"),)
        indexes, offset = read
        validator = by_index.get(indexes)
        if validator is None:
            return (decode_violation("message indexes of a message type of the schema", list(indexes),
                                     f"message indexes {list(indexes)} name no message type of schema id {label}"),)
        if selected is not None and indexes != selected:
            name = getattr(validator, "type_name", "")
            return (schema_violation("", f"message indexes {list(selected)} ({selected_name})", list(indexes),
                                     f"message indexes {list(indexes)} select {name}; the definition names "
                                     f"{selected_name}"),)
        return validator.check_bytes(body[offset:], None)
    return check
