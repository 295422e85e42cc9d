"""A message definition's rules in words, as the console's registry page shows them: "type must be
com.example.x", "source like /sites/{site}/devices/{device}", "data: JSON Schema, an object that requires
orderid, items". Read from the loaded registry (gateway/model), the same documents the compiler reads; these
are descriptions for a person, not the rules themselves (the compiler is their one author).
"""

from __future__ import annotations

from typing import Any

from gateway.model.resolved import MessageDefinition

TYPE_WORDS = {"timestamp": "an RFC 3339 timestamp", "uritemplate": "a URI", "uri": "a URI", "uri-reference":
              "a URI reference", "integer": "an integer", "boolean": "true or false", "binary": "bytes",
              "string": "text"}
SHOWN_MEMBERS = 8


def _value_rule(name: str, spec: Any) -> str:
    """One declared value (an attribute, a header, a protocol field) in words."""
    if not isinstance(spec, dict):
        return f"{name} must be {spec!r}"
    value, kind = spec.get("value"), spec.get("type")
    optional = "" if spec.get("required") else " (optional)"
    if isinstance(value, str) and "{" in value and "}" in value:
        return f"{name} like {value}{optional}"
    if value is not None and kind not in ("timestamp",):
        return f"{name} must be {value!r}{optional}" if not isinstance(value, str) else f"{name} must be {value}{optional}"
    if kind:
        return f"{name} must be {TYPE_WORDS.get(kind, kind)}{optional}"
    return f"{name} must be present" if spec.get("required") else f"{name} may be present"


def _members(names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN_MEMBERS])
    return shown + (f" and {len(names) - SHOWN_MEMBERS} more" if len(names) > SHOWN_MEMBERS else "")


def _json_schema(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any JSON" if schema is True else "no JSON at all" if schema is False else "a JSON Schema"
    kind = schema.get("type")
    described = f"a{'n' if str(kind)[:1] in 'aeiou' else ''} {kind}" if isinstance(kind, str) else "a JSON value"
    parts = []
    required = schema.get("required")
    if isinstance(required, list) and required:
        parts.append("that requires " + _members([str(r) for r in required]))
    properties = schema.get("properties")
    if isinstance(properties, dict):
        optional = [str(k) for k in properties if not isinstance(required, list) or k not in required]
        if optional:
            parts.append("may have " + _members(optional))
    if schema.get("additionalProperties") is False:
        parts.append("nothing else")
    return " ".join([described, ", ".join(parts)]) if parts else described


def _avro(schema: Any) -> str:
    if isinstance(schema, dict) and schema.get("type") == "record":
        fields = [f"{f.get('name')} ({_avro_type(f.get('type'))})" for f in schema.get("fields", [])
                  if isinstance(f, dict)]
        return f"an Avro record {schema.get('name')}: " + _members(fields)
    return f"Avro {_avro_type(schema)}"


def _avro_type(kind: Any) -> str:
    if isinstance(kind, str):
        return kind
    if isinstance(kind, list):
        return " or ".join(_avro_type(k) for k in kind)
    if isinstance(kind, dict):
        if kind.get("type") == "enum":
            return "one of " + "|".join(str(s) for s in kind.get("symbols", []))
        if kind.get("type") == "array":
            return f"array of {_avro_type(kind.get('items'))}"
        return str(kind.get("name") or kind.get("type"))
    return "?"


def data_words(definition: MessageDefinition) -> str:
    payload = definition.payload
    if payload is None:
        return definition.payload_note or "data: anything (no schema)"
    fmt = (payload.format or "").lower()
    if fmt.startswith("jsonschema"):
        return f"data: {payload.format}, {_json_schema(payload.schema)}"
    if fmt.startswith("avro"):
        return f"data: {_avro(payload.schema)}"
    if fmt.startswith("protobuf"):
        return f"data: Protobuf message {payload.type_name or '(the first one)'}"
    return f"data: {payload.format or 'a schema'}"


def definition_words(definition: MessageDefinition) -> list[str]:
    """Each rule of the definition as one line."""
    attrs = definition.attrs
    lines: list[str] = []
    envelope = attrs.get("envelope")
    if envelope:
        lines.append(f"envelope: {envelope}")
    metadata = attrs.get("envelopemetadata")
    if isinstance(metadata, dict):
        lines.extend(_value_rule(name, spec) for name, spec in metadata.items())
    protocol = attrs.get("protocol")
    if protocol:
        lines.append(f"protocol: {protocol}")
    options = attrs.get("protocoloptions")
    if isinstance(options, dict):
        for name, spec in options.items():
            if isinstance(spec, dict) and spec and all(isinstance(v, dict) for v in spec.values()) \
                    and not {"value", "type", "required"} & set(spec):
                lines.extend(_value_rule(f"{name}.{inner}", value) for inner, value in spec.items())
            else:
                lines.append(_value_rule(name, spec))
    content_type = attrs.get("datacontenttype")
    if content_type:
        lines.append(f"content type: {content_type}")
    lines.append(data_words(definition))
    return lines
