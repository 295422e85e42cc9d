"""XSD payloads, validated by xmlschema.

Both the schema and every payload are read with `allow="none"` (no file or
URL is ever opened: an `xs:import`/`xs:include` with a location, or an
`xsi:schemaLocation` hint, is not followed) and `defuse="always"` (entity
declarations are refused, the defusedxml rule against entity expansion
bombs). Sources are wrapped in in-memory streams so that text which does not
start with `<` is never taken for a path or URL.

`pattern` facets run on a linear-time engine (linear_regex.py), not on the
backtracking `re` xmlschema compiles them to. A payload nested deeper than
gateway/limits.py's MAX_NESTING elements is a `limit` violation: xmlschema
validates recursively, and its own depth limit (1000) lies beyond Python's
stack.
"""

from __future__ import annotations

import warnings
from io import BytesIO, StringIO
from typing import IO, Any

from xmlschema import XMLResource, XMLSchema10, XMLSchema11
from xmlschema.exceptions import XMLResourceExceeded
from xmlschema.validators import XMLSchemaBase
from xmlschema.validators.facets import XsdPatternFacets

from gateway.errors import SchemaCompileError
from gateway.limits import MAX_NESTING, nesting_violation
from gateway.model.formats import XSD
from gateway.verdict import Violation

from .base import MAX_VIOLATIONS, PATH_PREFIX, Violations, decode_violation, one_line, schema_violation
from .linear_regex import LinearPattern

_ALLOW = "none"
_DEFUSE = "always"


def compile_xsd(schema: object, version: str, type_name: str | None) -> XsdValidator:
    """Build the schema once; `type_name` restricts the payload's root to one global element."""
    if isinstance(schema, bytes):
        source: IO[Any] = BytesIO(schema)
    elif isinstance(schema, str):
        source = StringIO(schema)
    else:
        raise SchemaCompileError(f"an XSD schema is XML text, not {type(schema).__name__}")
    cls = XMLSchema11 if version == "1.1" else XMLSchema10
    with warnings.catch_warnings(record=True) as caught:
        # A failed import is only a warning to xmlschema; keep it for the error text.
        warnings.simplefilter("always")
        try:
            compiled = cls(source, allow=_ALLOW, defuse=_DEFUSE)
        except Exception as exc:  # parse errors, forbidden resources, bad components
            notes = " ".join(one_line(w.message, 200) for w in caught)
            raise SchemaCompileError(f"invalid XSD: {one_line(exc, 500)}{' (' + notes + ')' if notes else ''}") from exc
    _linear_patterns(compiled)
    root: str | None = None
    if type_name:
        root = _select(compiled, type_name)
    return XsdValidator(compiled, root)


def _linear_patterns(compiled: XMLSchemaBase) -> None:
    """Swap every pattern facet's `re.Pattern` for a LinearPattern (see linear_regex.py)."""
    for component in compiled.iter_components():
        if isinstance(component, XsdPatternFacets):
            for index, (pattern, text) in enumerate(zip(component.patterns, component.regexps)):
                try:
                    component.patterns[index] = LinearPattern(pattern.pattern)  # type: ignore[call-overload]
                except ValueError as exc:
                    raise SchemaCompileError(f"XSD pattern {text!r} cannot run on the linear-time regex "
                                             f"engine: {one_line(exc, 200)}") from exc


def _select(compiled: XMLSchemaBase, type_name: str) -> str:
    for element in compiled.elements.values():
        if type_name in (element.name, element.local_name, element.prefixed_name):
            return str(element.name)
    known = ", ".join(str(e.prefixed_name or e.name) for e in compiled.elements.values()) or "none"
    raise SchemaCompileError(f"XSD element {type_name!r} is not a global element (elements: {known})")


class XsdValidator:
    """One compiled XSD; any global element may be the root unless one was selected."""

    kind: str = XSD
    __slots__ = ("_root", "_schema")

    def __init__(self, schema: XMLSchemaBase, root: str | None) -> None:
        self._schema = schema
        self._root = root

    def check_bytes(self, body: bytes, content_type: str | None) -> Violations | None:
        return self._check(BytesIO(body), body)

    def check_value(self, value: object) -> Violations | None:
        """Structured JSON data can carry XML only as a string."""
        if isinstance(value, str):
            return self._check(StringIO(value), value)
        return (schema_violation("", "XML text", value, "expected XML text (a JSON string) for an XSD schema"),)

    def _check(self, stream: IO[Any], raw: object) -> Violations | None:
        try:
            resource = XMLResource(stream, allow=_ALLOW, defuse=_DEFUSE)
        except XMLResourceExceeded:
            return (nesting_violation(PATH_PREFIX, "the XML payload"),)
        except Exception as exc:
            return (decode_violation("well-formed XML", raw, f"payload is not well-formed XML: {exc}"),)
        if _deeper_than(resource.root, MAX_NESTING):
            return (nesting_violation(PATH_PREFIX, "the XML payload"),)
        if self._root is not None:
            tag = str(resource.root.tag)
            if tag != self._root:
                return (
                    schema_violation(
                        "/" + _local(tag), f"root element {self._root}", tag, f"root element {tag} is not {self._root}"
                    ),
                )
        found: list[Violation] = []
        try:
            for error in self._schema.iter_errors(resource):
                found.append(_violation(error))
                if len(found) >= MAX_VIOLATIONS:
                    break
        except Exception as exc:
            found.append(schema_violation("", "valid", raw, f"payload fails its XSD ({one_line(exc)})"))
        return tuple(found) if found else None


def _deeper_than(root: Any, limit: int) -> bool:
    """Whether elements nest more than `limit` levels (the root is one); iterative."""
    stack = [(root, 1)]
    while stack:
        element, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in element)
    return False


def _violation(error: Any) -> Violation:
    validator = getattr(error, "validator", None)
    expected = (
        ("a global element of the schema" if isinstance(validator, XMLSchemaBase) else None)
        or getattr(validator, "prefixed_name", None)
        or getattr(validator, "name", None)
        or type(validator).__name__
    )
    obj = getattr(error, "obj", None)
    actual = obj if isinstance(obj, (str, int, float, bool)) or obj is None else _describe_node(obj)
    reason = getattr(error, "reason", None) or getattr(error, "message", "") or str(error)
    return schema_violation(getattr(error, "path", None) or "", str(expected), actual, one_line(reason))


def _describe_node(node: Any) -> str:
    tag = getattr(node, "tag", None)
    return f"<{_local(str(tag))}>" if tag is not None else one_line(repr(node), 120)


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]
