"""Avro payloads, read by fastavro.

Binary bodies are decoded with `schemaless_reader`, and the decoding must
consume every byte: bytes left over or missing are `decode` violations.

JSON content types carry the Avro JSON encoding (Avro specification, "JSON
Encoding"): a union value other than null is wrapped as `{"<branch name>":
value}`, bytes and fixed are strings of code points 0-255, enums are symbol
strings. `fastavro.validation.validate` alone would judge the *in-memory* form
(unions unwrapped, bytes as `bytes`), which is not what travels on the wire.
So the JSON value is first decoded by fastavro's Avro JSON decoder
(`json_reader`), which applies the spec's union wrapping, byte strings and
field defaults, and the decoded datum is then checked by `validate`, which
checks types and ranges and names the failing field. The reader is asked for
record names, so a union branch is validated as the branch the JSON named,
not as whichever branch happens to fit.
"""

from __future__ import annotations

import json
import re
from io import BytesIO, StringIO
from typing import Any

import orjson
from fastavro import json_reader, parse_schema, schemaless_reader
from fastavro.validation import ValidationError as AvroValidationError
from fastavro.validation import validate

from gateway.errors import SchemaCompileError
from gateway.limits import MAX_NESTING, nesting_exceeds
from gateway.model.formats import AVRO
from gateway.verdict import Violation

from .avro_scan import needs_scan, scan
from .base import (
    MAX_VIOLATIONS,
    Violations,
    check_json_body,
    decode_violation,
    is_json_media_type,
    one_line,
    schema_violation,
)

# a schema document deeper than this is refused: the compile steps below recurse once per level
_SCHEMA_NESTING = 2 * MAX_NESTING
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # object addresses in exception texts
# fastavro's own markers: a dict carrying them is taken as already parsed, with
# its named types, so a named type picked out of a larger schema reads alone.
_PARSED = "__fastavro_parsed"
_NAMED = "__named_schemas"


def compile_avro(schema: object, type_name: str | None) -> AvroValidator:
    """Parse the schema once; `type_name` picks a named type (full or short name)."""
    source = _schema_source(schema)
    if nesting_exceeds(source, _SCHEMA_NESTING):
        raise SchemaCompileError(f"Avro schema nests deeper than {_SCHEMA_NESTING} levels")
    _require_fields(source)
    named: dict[str, Any] = {}
    try:
        parsed = parse_schema(source, named)
    except Exception as exc:  # fastavro raises several unrelated types
        raise SchemaCompileError(f"invalid Avro schema: {one_line(exc)}") from exc
    if type_name:
        parsed = _select(named, type_name)
    paths: dict[str, str] = {}
    _walk(parsed, "", named, paths)
    return AvroValidator(parsed, paths, named if needs_scan(parsed, named) else None)


def _schema_source(schema: object) -> Any:
    if isinstance(schema, bytes):
        schema = schema.decode("utf-8", "replace")
    if isinstance(schema, str):
        text = schema.strip()
        if not text.startswith(("{", "[", '"')):
            return text  # a bare primitive or type name, e.g. `string`
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise SchemaCompileError(f"Avro schema is not valid JSON: {exc}") from exc
    if isinstance(schema, (dict, list)):
        return schema
    raise SchemaCompileError(f"an Avro schema is JSON, not {type(schema).__name__}")


def _require_fields(node: Any) -> None:
    """fastavro silently reads a record without `fields` as empty; the spec requires them."""
    if isinstance(node, list):
        for branch in node:
            _require_fields(branch)
    elif isinstance(node, dict):
        kind = node.get("type")
        if kind in ("record", "error"):
            fields = node.get("fields")
            if not isinstance(fields, list):
                raise SchemaCompileError(f"Avro record {node.get('name')!r} has no 'fields' list")
            for field in fields:
                if isinstance(field, dict):
                    _require_fields(field.get("type"))
        elif kind == "array":
            _require_fields(node.get("items"))
        elif kind == "map":
            _require_fields(node.get("values"))
        elif isinstance(kind, (dict, list)):
            _require_fields(kind)


def _select(named: dict[str, Any], type_name: str) -> Any:
    wanted = type_name.lstrip(".")
    matches = [n for n in named if n == wanted]
    if not matches:
        matches = [n for n in named if n.rsplit(".", 1)[-1] == wanted]
    if len(matches) != 1:
        known = ", ".join(sorted(named)) or "none"
        problem = "is ambiguous" if matches else "is not a named type of the schema"
        raise SchemaCompileError(f"Avro type {type_name!r} {problem} (named types: {known})")
    selected = named[matches[0]]
    if not isinstance(selected, dict):
        return selected
    selected = dict(selected)
    selected[_PARSED] = True
    selected[_NAMED] = named
    return selected


def _walk(node: Any, pointer: str, named: dict[str, Any], paths: dict[str, str]) -> None:
    """Map each record's full name to the JSON pointer where it first appears.

    fastavro names a failing field `<record full name>.<field>`; this map turns
    that into a pointer. Array items and map values share their container's
    pointer because fastavro does not report indices or keys, and a record
    used in several places is reported at its first place.
    """
    if isinstance(node, str):
        target = named.get(node)
        if isinstance(target, dict) and target.get("name") not in paths:
            _walk(target, pointer, named, paths)
    elif isinstance(node, list):
        for branch in node:
            _walk(branch, pointer, named, paths)
    elif isinstance(node, dict):
        kind = node.get("type")
        if kind in ("record", "error"):
            name = str(node.get("name"))
            if name in paths:
                return
            paths[name] = pointer
            for field in node.get("fields") or ():
                _walk(field.get("type"), f"{pointer}/{field.get('name')}", named, paths)
        elif kind == "array":
            _walk(node.get("items"), pointer, named, paths)
        elif kind == "map":
            _walk(node.get("values"), pointer, named, paths)
        elif isinstance(kind, (dict, list)):
            _walk(kind, pointer, named, paths)


class AvroValidator:
    """One compiled Avro schema (or a named type selected from it)."""

    kind: str = AVRO
    __slots__ = ("_paths", "_scan_named", "_schema")

    def __init__(self, schema: Any, paths: dict[str, str], scan_named: dict[str, Any] | None) -> None:
        self._schema = schema
        self._paths = paths
        # the named types, when the schema's data must be scanned before fastavro reads it (avro_scan.py)
        self._scan_named = scan_named

    def decode(self, body: bytes) -> object:
        """The datum in `body`, for a person to read (the console); raises what fastavro raises on bad data.
        A schema that needs its data scanned first (avro_scan.py) is scanned first here too."""
        if self._scan_named is not None and scan(body, self._schema, self._scan_named) is not None:
            raise ValueError("not Avro binary of the schema")
        return schemaless_reader(BytesIO(body), self._schema)

    def check_bytes(self, body: bytes, content_type: str | None) -> Violations | None:
        if content_type is not None and is_json_media_type(content_type):
            return check_json_body(body, self.check_value)
        if self._scan_named is not None:
            problem = scan(body, self._schema, self._scan_named)
            if problem is not None:
                return (problem,)
        stream = BytesIO(body)
        try:
            schemaless_reader(stream, self._schema)
        except Exception as exc:
            detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            detail = _ADDRESS.sub("", detail)  # fastavro may name the stream object: keep verdicts reproducible
            return (
                decode_violation(
                    "Avro binary encoding",
                    body,
                    f"payload is not Avro binary of the schema ({detail}; truncated or corrupt)",
                ),
            )
        left = len(body) - stream.tell()
        if left:
            return (
                decode_violation(
                    f"{stream.tell()} bytes",
                    f"{len(body)} bytes",
                    f"{left} byte{'s' if left != 1 else ''} left over after decoding one Avro datum",
                ),
            )
        return None

    def check_value(self, value: object) -> Violations | None:
        """A JSON value in the Avro JSON encoding."""
        try:
            text = orjson.dumps(value).decode()
        except TypeError:
            try:
                text = json.dumps(value)  # integers beyond 64 bits; still one line
            except (TypeError, ValueError, RecursionError) as exc:
                return (decode_violation("a JSON value", repr(value), f"payload is not JSON data: {exc}"),)
        try:
            # json_reader reads one JSON value per line; orjson/json.dumps output is one line.
            reader = json_reader(StringIO(text), self._schema)
            reader.options = {**reader.options, "return_record_name": True}
            datum = next(iter(reader))
        except Exception as exc:
            return (
                schema_violation(
                    "",
                    "Avro JSON encoding",
                    value,
                    f"payload does not follow the Avro JSON encoding of the schema ({type(exc).__name__}: {one_line(exc)})",
                ),
            )
        try:
            if validate(datum, self._schema, raise_errors=True):
                return None
        except AvroValidationError as exc:
            return self._explain(exc.errors, value)
        except Exception as exc:
            return (schema_violation("", "valid", value, f"payload fails its Avro schema ({one_line(exc)})"),)
        return (schema_violation("", "valid", value, "payload fails its Avro schema"),)

    def _explain(self, errors: Any, value: object) -> Violations:
        found: list[Violation] = []
        for error in list(errors)[:MAX_VIOLATIONS]:
            field = getattr(error, "field", "") or ""
            expected = _describe(getattr(error, "schema", None))
            datum = getattr(error, "datum", None)
            where = field.rsplit(".", 1)[-1] if field else "value"
            found.append(
                schema_violation(
                    self._pointer(field),
                    expected,
                    _jsonable(datum),
                    f"{where} is {one_line(repr(datum), 80)}, expected Avro {expected}",
                )
            )
        if not found:
            found.append(schema_violation("", "valid", value, "payload fails its Avro schema"))
        return tuple(found)

    def _pointer(self, field: str) -> str:
        best = ""
        for name in self._paths:
            if field.startswith(name + ".") and len(name) > len(best):
                best = name
        if not best:
            return ""
        return self._paths[best] + "/" + field[len(best) + 1 :]


def _describe(schema: Any) -> str:
    if isinstance(schema, str):
        return schema
    if isinstance(schema, list):
        return "union [" + ", ".join(_describe(s) for s in schema) + "]"
    if isinstance(schema, dict):
        kind = schema.get("type")
        name = schema.get("logicalType") or schema.get("name")
        return f"{kind} {name}" if name else str(kind)
    return str(schema)


def _jsonable(datum: object) -> object:
    if isinstance(datum, tuple) and len(datum) == 2:
        return datum[1]  # (record name, record) from the union notation
    if isinstance(datum, bytes):
        return datum.decode("latin-1")
    return datum
