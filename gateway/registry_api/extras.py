"""What the documents say about an entity beyond what xgate judges with: `name`, `labels`, `documentation`,
`icon`, `deprecated`, `createdat`/`modifiedat` and extension attributes (core spec "Common Attributes",
"Extensions"), so that the registry API and `xgate export` drop nothing a document declared.

The loader keeps only what validation needs; these come from the document's own bytes (`Snapshot.contents`),
at the entity's JSON pointer. Documents of the 1.0 generation give every attribute no other part writes
(extensions included); older generations give only the common attributes, since their other keys are
that generation's own spelling of attributes the loader already translated.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gateway import pointers
from gateway.loader.decode import decode_bytes, decode_file
from gateway.loader.refs import is_url
from gateway.loader.snapshot import Snapshot
from gateway.model import Origin

COMMON = ("name", "description", "documentation", "icon", "labels", "deprecated", "createdat", "modifiedat")
# written by the server, or by document.py from what the loader normalized (references made absolute...)
SERVER = frozenset({"self", "shortself", "xid", "epoch", "versionid", "isdefault", "ancestorid", "metaurl", "meta",
                    "versions", "versionsurl", "versionscount", "specversion", "$schema",
                    *(f"{c}{suffix}" for c in ("endpoints", "messagegroups", "schemagroups", "messages", "schemas")
                      for suffix in ("url", "count"))})
# older spellings the loader still reads inside a 1.0 document: translated, so never extensions
TOLERATED = frozenset({"dataschemaurl", "schemauri", "schemaurl", "schemaUrl", "schemaURL", "schemaUri", "schemaformat",
                       "format", "binding", "metadata", "config", "definitions", "ownergroup", "schemaobject",
                       "envelopemetadata", "basemessageurl"})
HANDLED: dict[str, frozenset[str]] = {
    "endpoint": frozenset({"endpointid", "usage", "envelope", "envelopeoptions", "protocol", "protocoloptions",
                           "messagegroups", "messages", "messagesurl", "messagescount", "description", "labels"}),
    "messagegroup": frozenset({"messagegroupid", "envelope", "protocol", "messages", "messagesurl",
                               "messagescount", "description"}),
    "message": frozenset({"messageid", "basemessage", "basemessageuri", "basemessageurl", "envelope",
                          "envelopemetadata", "envelopeoptions", "protocol", "protocoloptions", "dataschemaformat",
                          "dataschema", "dataschemauri", "dataschemaxid", "datacontenttype", "description"}),
    "schemagroup": frozenset({"schemagroupid", "schemas", "schemasurl", "schemascount", "description"}),
    "schema": frozenset({"schemaid", "format", "schema", "schemabase64", "schemaurl", "schemauri",
                         "defaultversionid", "defaultversionsticky"}),
}


class DeclaredAttributes:
    """The extra attributes of entities by origin, each document decoded once."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.generations = {f.file: f.generation for f in snapshot.files}
        self._raw: dict[str, Any] = {}

    def _document(self, file: str) -> Any:
        if file not in self._raw:
            data = self.snapshot.contents.get(file)
            value: Any = None
            if data is not None:
                value, problem = decode_bytes(data, file, yaml_syntax=False) if is_url(file) \
                    else decode_file(Path(file), data)
                value = value if problem is None else None
            self._raw[file] = value
        return self._raw[file]

    def of(self, origin: Origin, kind: str) -> dict[str, Any]:
        """The attributes the entity at `origin` declares that `kind`'s writer does not write itself."""
        raw = _at(self._document(origin.file), origin.pointer)
        if not isinstance(raw, dict):
            return {}
        if self.generations.get(origin.file, "1.0") != "1.0":
            return {k: raw[k] for k in COMMON if raw.get(k) is not None}
        skip = SERVER | HANDLED.get(kind, frozenset()) | (TOLERATED - {"format"} if kind.startswith("schema") else TOLERATED)
        return {k: v for k, v in raw.items() if isinstance(k, str) and k not in skip and v is not None}


def _at(value: Any, pointer: str) -> Any:
    """The value at an RFC 6901 pointer, or None."""
    if not pointer:
        return value
    for part in pointer.lstrip("/").split("/"):
        key = pointers.unescape(part)
        if isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return None
    return value
