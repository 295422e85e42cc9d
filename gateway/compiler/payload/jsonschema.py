"""JSON Schema payloads, validated by jsonschema-rs.

Draft choice: a recognized `$schema` wins; otherwise the document's format
version (draft-07 when none is given, 2020-12 when it is "unknown").
jsonschema-rs's draft classes ignore `$schema`, so the class is picked here.

`format` is an annotation, never an assertion, in every draft: that is what
the JSON-Schema-Test-Suite's required tests expect (assertion lives in
optional/), and jsonschema-rs would otherwise assert formats for draft 4-7.

Remote `$ref`s are never fetched: a gateway must not reach out to URLs named
by a document. The retriever refuses, so such a schema fails to compile and
the error names the reference.

`pattern` and `patternProperties` run on the Rust `regex` crate
(`RegexOptions`), which matches in time linear in the input, instead of
jsonschema-rs's default fancy-regex, which backtracks: a payload string must
never cost more than its length. That engine has no lookaround and no
backreferences, so a schema whose pattern needs them fails to compile, with
an error naming the pattern and its place in the schema.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsonschema_rs
import orjson

from gateway.errors import SchemaCompileError
from gateway.model.formats import (
    DRAFT_04,
    DRAFT_06,
    DRAFT_07,
    DRAFT_2019_09,
    DRAFT_2020_12,
    JSONSCHEMA,
    UNKNOWN,
)
from gateway.verdict import Violation

from .base import (
    MAX_VIOLATIONS,
    Violations,
    check_json_body,
    decode_violation,
    json_pointer,
    one_line,
    schema_violation,
)
from .explain_bound import UNLISTED, explain_depth, payload_depth
from .native import native_type

_BY_VERSION: dict[str, type[jsonschema_rs.Validator]] = {
    DRAFT_04: jsonschema_rs.Draft4Validator,
    DRAFT_06: jsonschema_rs.Draft6Validator,
    DRAFT_07: jsonschema_rs.Draft7Validator,
    DRAFT_2019_09: jsonschema_rs.Draft201909Validator,
    DRAFT_2020_12: jsonschema_rs.Draft202012Validator,
}

# `$schema` URIs without scheme and trailing "#".
_BY_META_SCHEMA: dict[str, type[jsonschema_rs.Validator]] = {
    "json-schema.org/draft-04/schema": jsonschema_rs.Draft4Validator,
    "json-schema.org/draft-06/schema": jsonschema_rs.Draft6Validator,
    "json-schema.org/draft-07/schema": jsonschema_rs.Draft7Validator,
    "json-schema.org/draft/2019-09/schema": jsonschema_rs.Draft201909Validator,
    "json-schema.org/draft/2020-12/schema": jsonschema_rs.Draft202012Validator,
}

# the draft's name in the native core's plan (gateway/compiler/lower.py)
_DRAFT_NAMES: dict[type[jsonschema_rs.Validator], str] = {
    jsonschema_rs.Draft4Validator: "draft4", jsonschema_rs.Draft6Validator: "draft6",
    jsonschema_rs.Draft7Validator: "draft7", jsonschema_rs.Draft201909Validator: "draft2019-09",
    jsonschema_rs.Draft202012Validator: "draft2020-12",
}

# Keywords whose error value is a nested error list or nothing worth printing.
_NO_VALUE = frozenset({"anyOf", "oneOf", "propertyNames", "contains", "uniqueItems", "falseSchema"})
_EXPECTED_LIMIT = 80


def _refuse_retrieval(uri: str) -> Any:
    raise ValueError(f"remote reference {uri} is not fetched (xgate resolves no remote $ref)")


def _validator_class(schema: dict[str, Any] | bool, version: str) -> type[jsonschema_rs.Validator]:
    if isinstance(schema, dict):
        meta = schema.get("$schema")
        if isinstance(meta, str):
            key = meta.strip().split("://", 1)[-1].rstrip("#")
            cls = _BY_META_SCHEMA.get(key)
            if cls is not None:
                return cls
    if version == UNKNOWN:
        return jsonschema_rs.Draft202012Validator
    return _BY_VERSION.get(version, jsonschema_rs.Draft7Validator)


def compile_jsonschema(schema: object, version: str) -> JsonSchemaValidator:
    """Build the validator once; SchemaCompileError when the schema is invalid or unresolvable."""
    if isinstance(schema, (str, bytes)):
        # Registries may hold the schema as JSON text.
        try:
            schema = orjson.loads(schema)
        except orjson.JSONDecodeError as exc:
            raise SchemaCompileError(f"JSON Schema is not valid JSON: {exc}") from exc
    if not isinstance(schema, (dict, bool)):
        raise SchemaCompileError(f"a JSON Schema is an object or a boolean, not {type(schema).__name__}")
    cls = _validator_class(schema, version)
    try:
        # built here only to report a bad schema at load time, then dropped: the validator is built again
        # on first use (issue 31: with the native core, most schemas are never used by the Python judge)
        _engine(cls, schema)
    except jsonschema_rs.ValidationError as exc:
        if isinstance(exc.kind, jsonschema_rs.ValidationErrorKind.Referencing):
            raise SchemaCompileError(f"unresolvable reference in JSON Schema: {one_line(exc.message)}") from exc
        if _needs_backtracking(exc):
            raise SchemaCompileError(
                f"pattern {one_line(repr(exc.instance), 120)} needs lookaround or backreferences, which xgate "
                "does not run: payload patterns run on a linear-time regex engine (no catastrophic "
                "backtracking); rewrite the pattern without them", json_pointer(exc.instance_path)) from exc
        # Meta-schema failures locate the fault by the *schema* document's instance path.
        raise SchemaCompileError(
            f"invalid JSON Schema: {one_line(exc.message)}", json_pointer(exc.instance_path)
        ) from exc
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise SchemaCompileError(f"invalid JSON Schema: {one_line(exc)}") from exc
    return JsonSchemaValidator(cls, schema)


def _engine(cls: type[jsonschema_rs.Validator], schema: dict[str, Any] | bool) -> jsonschema_rs.Validator:
    return cls(schema, validate_formats=False, retriever=_refuse_retrieval,
               pattern_options=jsonschema_rs.RegexOptions())


def _needs_backtracking(error: jsonschema_rs.ValidationError) -> bool:
    """A `regex` format failure on a pattern that fancy-regex (lookaround, backreferences) would compile."""
    pattern = error.instance
    if not isinstance(error.kind, jsonschema_rs.ValidationErrorKind.Format) or not isinstance(pattern, str):
        return False
    try:
        jsonschema_rs.Draft7Validator({"pattern": pattern}, pattern_options=jsonschema_rs.FancyRegexOptions())
    except (jsonschema_rs.ValidationError, ValueError):
        return False
    return True


class JsonSchemaValidator:
    """One compiled JSON Schema; `is_valid` first, the detailed pass only on failure.

    The engine and the msgspec type are built on first use (`__getattr__`): a registry of thousands of
    schemas costs its documents, not thousands of validators, where the native core judges the traffic."""

    kind: str = JSONSCHEMA
    __slots__ = ("_cls", "_is_valid", "_validator", "draft", "explain_depth", "is_valid", "native", "schema")

    # built on first use (`__getattr__`); declared for the type checker, the slots hold them
    native: Any
    is_valid: Callable[[Any], bool]
    # the deepest failing payload whose errors are listed (explain_bound.py); None: any
    explain_depth: int | None

    def __init__(self, cls: type[jsonschema_rs.Validator], schema: dict[str, Any] | bool) -> None:
        self._cls = cls
        # the schema document and its draft, for the native core's plan (gateway/compiler/lower.py)
        self.schema = schema
        self.draft = _DRAFT_NAMES[cls]

    def __getattr__(self, name: str) -> Any:
        """Called only for a slot not yet set: builds it (once; a race builds it twice, harmlessly)."""
        if name in ("_validator", "is_valid", "_is_valid"):
            validator = _engine(self._cls, self.schema)
            self._validator = validator
            # the accepting pass calls it on values orjson produced (always JSON data: it cannot raise)
            self.is_valid = self._is_valid = validator.is_valid
        elif name == "native":
            # the schema as a msgspec type when it maps soundly (payload/native.py): the accepting pass
            # decodes and validates with it in one pass
            self.native = native_type(self.schema, self._cls)
        elif name == "explain_depth":
            self.explain_depth = explain_depth(self.schema)
        else:
            raise AttributeError(name)
        return getattr(self, name)

    def check_bytes(self, body: bytes, content_type: str | None) -> Violations | None:
        # The content type needs no dispatch: a JSON Schema payload is JSON.
        return check_json_body(body, self.check_value)

    def check_value(self, value: object) -> Violations | None:
        try:
            if self._is_valid(value):
                return None
        except Exception as exc:
            return (decode_violation("a JSON value", repr(value), f"payload is not JSON data: {exc}"),)
        return self._explain(value)

    def explain_value(self, value: object) -> Violations | None:
        """`check_value` for a message already known to fail somewhere: the detailed pass alone when it finds
        errors (one pass over the payload instead of two); otherwise `check_value` decides, as always."""
        if not self._itemised(value):
            return self.check_value(value)
        found: list[Violation] = []
        try:
            for error in self._validator.iter_errors(value):
                found.append(_violation(error))
                if len(found) >= MAX_VIOLATIONS:
                    break
        except Exception:
            return self.check_value(value)
        return tuple(found) if found else self.check_value(value)

    def _itemised(self, value: object) -> bool:
        """Whether listing this failing payload's errors stays cheap (explain_bound.py)."""
        bound = self.explain_depth
        return bound is None or payload_depth(value) <= bound

    def _explain(self, value: object) -> Violations:
        if not self._itemised(value):
            return (schema_violation("", "valid", value, UNLISTED),)
        found: list[Violation] = []
        try:
            for error in self._validator.iter_errors(value):
                found.append(_violation(error))
                if len(found) >= MAX_VIOLATIONS:
                    break
        except Exception as exc:
            found.append(schema_violation("", "valid", value, f"payload fails its JSON Schema ({exc})"))
        if not found:
            found.append(schema_violation("", "valid", value, "payload fails its JSON Schema"))
        return tuple(found)


def _violation(error: jsonschema_rs.ValidationError) -> Violation:
    return schema_violation(
        json_pointer(error.instance_path),
        _expected(error),
        error.instance,
        one_line(error.message),
    )


def _expected(error: jsonschema_rs.ValidationError) -> str:
    """`minimum: 5`, `type: "string"`, `required: "id"`; the bare keyword for composite ones."""
    kind = error.kind
    name = kind.name
    if name == "falseSchema":
        return "false schema"
    # The schema path names the keyword actually written (dependentRequired, minContains).
    last = error.schema_path[-1] if error.schema_path else name
    keyword = last if isinstance(last, str) else name
    if name in _NO_VALUE:
        return keyword
    try:
        value = kind.value
        if name == "type" and isinstance(value, list) and len(value) == 1:
            value = value[0]
        text = orjson.dumps(value).decode()
    except Exception:
        return keyword
    if len(text) > _EXPECTED_LIMIT:
        text = text[: _EXPECTED_LIMIT - 3] + "..."
    return f"{keyword}: {text}"
