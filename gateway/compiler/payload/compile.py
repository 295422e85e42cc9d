"""Compiling a schema of any format: the one module that knows every format's compiler.

It sits above the formats (each imports only `base` and `formats`), so no format imports it back.
"""

from __future__ import annotations

from gateway.errors import SchemaCompileError
from gateway.model.formats import AVRO, JSONSCHEMA, PROTOBUF, XSD, SchemaFormat

from .base import PayloadValidator


def compile_payload_validator(
    fmt: SchemaFormat,
    schema: object,
    *,
    type_name: str | None = None,
    where: str = "",
) -> PayloadValidator:
    """Compile `schema` of format `fmt`; raises SchemaCompileError when it cannot compile.

    `type_name` selects a named type inside the schema (Avro named type,
    Protobuf message, XSD global element); JSON Schema ignores it. `where`
    labels the schema in error messages (for example its registry path).
    """
    # Imported lazily: a deployment that only uses JSON Schema never loads protoc or xmlschema.
    try:
        if fmt.kind == JSONSCHEMA:
            from .jsonschema import compile_jsonschema

            return compile_jsonschema(schema, fmt.version)
        if fmt.kind == AVRO:
            from .avro import compile_avro

            return compile_avro(schema, type_name)
        if fmt.kind == PROTOBUF:
            from .protobuf import compile_protobuf

            return compile_protobuf(schema, type_name)
        if fmt.kind == XSD:
            from .xsd import compile_xsd

            return compile_xsd(schema, fmt.version, type_name)
    except SchemaCompileError as exc:
        if not where:
            raise
        raise SchemaCompileError(f"{where}: {exc}", exc.pointer) from exc
    message = f"unsupported schema format {fmt.kind!r}"
    raise SchemaCompileError(f"{where}: {message}" if where else message)
