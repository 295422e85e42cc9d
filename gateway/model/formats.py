"""Schema format names as written in registry documents, normalized.

xRegistry documents spell `format` loosely (`JsonSchema/draft-07`,
`JSONSchema/Draft/2020-12`, `AVRO/1.11.2`, `Proto/3`, `XMLSchema/1.1`, even
typos such as `draft-07version`). Everything downstream works on the
normalized `SchemaFormat(kind, version)`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

JSONSCHEMA = "jsonschema"
AVRO = "avro"
PROTOBUF = "protobuf"
XSD = "xsd"

# Canonical JSON Schema versions; "unknown" defers to the schema's `$schema`.
DRAFT_04 = "draft-04"
DRAFT_06 = "draft-06"
DRAFT_07 = "draft-07"
DRAFT_2019_09 = "2019-09"
DRAFT_2020_12 = "2020-12"
UNKNOWN = "unknown"

_KIND_ALIASES: dict[str, str] = {
    "jsonschema": JSONSCHEMA,
    "json-schema": JSONSCHEMA,
    "json": JSONSCHEMA,
    "avro": AVRO,
    "apacheavro": AVRO,
    "protobuf": PROTOBUF,
    "proto": PROTOBUF,
    "protocolbuffers": PROTOBUF,
    "xsd": XSD,
    "xmlschema": XSD,
    "xml-schema": XSD,
}

_IMPLIED_CONTENT_TYPES: dict[str, tuple[str, ...]] = {
    JSONSCHEMA: ("application/json",),
    AVRO: ("application/avro", "avro/binary"),
    PROTOBUF: ("application/protobuf", "application/x-protobuf"),
    XSD: ("application/xml", "text/xml"),
}

# "draft-07", "Draft/2019-09", "draft7", "07", "draft-07version" (a real typo).
_JSON_VERSION = re.compile(r"^(?:draft)?[-/_ ]*(0?4|0?6|0?7|2019-09|2020-12)(?:\D.*)?$")
_JSON_VERSIONS = {
    "4": DRAFT_04,
    "04": DRAFT_04,
    "6": DRAFT_06,
    "06": DRAFT_06,
    "7": DRAFT_07,
    "07": DRAFT_07,
    "2019-09": DRAFT_2019_09,
    "2020-12": DRAFT_2020_12,
}


@dataclass(frozen=True, slots=True)
class SchemaFormat:
    """A normalized schema format: `kind` is jsonschema, avro, protobuf or xsd."""

    kind: str
    version: str


def normalize_schema_format(text: str) -> SchemaFormat | None:
    """Read a document's `format` string; None when the format is not one xgate validates."""
    name, _, version = text.strip().partition("/")
    kind = _KIND_ALIASES.get(name.strip().lower().replace("_", "").replace(" ", ""))
    if kind is None:
        return None
    version = version.strip().lower()
    if kind == JSONSCHEMA:
        return SchemaFormat(kind, _json_version(name.strip().lower(), version))
    if kind == PROTOBUF:
        # "2.0" and "2" mean the same syntax generation; the file's own `syntax` decides anyway.
        return SchemaFormat(kind, version.split(".", 1)[0])
    if kind == XSD:
        return SchemaFormat(kind, "1.1" if version.startswith("1.1") else "1.0")
    return SchemaFormat(kind, version)


def _json_version(name: str, version: str) -> str:
    if name == "json" or not version:
        # `JSON/1.0` and a bare `JsonSchema` carry no draft: the documented default.
        return DRAFT_07
    match = _JSON_VERSION.match(version)
    if match is None:
        return UNKNOWN
    return _JSON_VERSIONS[match.group(1)]


def implied_content_types(kind: str) -> tuple[str, ...]:
    """Media types a payload of this schema kind may declare (validation rule 5.5)."""
    return _IMPLIED_CONTENT_TYPES.get(kind, ())
