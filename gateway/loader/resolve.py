"""Follow references: message groups of endpoints, basemessage chains, and payload schema links.

Local references (`#/pointer`, `file.json#/pointer`) resolve inside the
document they name; xids (`/messagegroups/g/...`) resolve in the merged
registry; http(s) references are never fetched here (CONFORMANCE.md
section 2: off by default) and are reported as warnings.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gateway.errors import Diagnostic, Severity
from gateway.loader.merge import deep_merge
from gateway.loader.refs import entity_path, pointer_segments
from gateway.loader.versions import default_version
from gateway.model import Doc, Entity, Origin, Ref
from gateway.model.resolved import EndpointDefinition, MessageDefinition, PayloadSchema, Registry

MAX_CHAIN = 32


class Resolver:
    def __init__(self, merged: dict[str, dict[str, Entity]], docs: dict[str, Doc],
                 load_doc: Callable[[str], Doc | None]) -> None:
        self.merged = merged
        self.docs = docs
        self.load_doc = load_doc
        self.diagnostics: list[Diagnostic] = []

    # -- reporting ---------------------------------------------------------------------------------
    def error(self, origin: Origin, message: str, code: str) -> None:
        self.diagnostics.append(Diagnostic(Severity.ERROR, origin.file, message, pointer=origin.pointer, code=code))

    def warn(self, origin: Origin, message: str, code: str) -> None:
        self.diagnostics.append(Diagnostic(Severity.WARNING, origin.file, message, pointer=origin.pointer,
                                           code=code))

    # -- entity lookup -----------------------------------------------------------------------------
    def _doc(self, file: str) -> Doc | None:
        doc = self.docs.get(file)
        return doc if doc is not None else self.load_doc(file)

    def lookup(self, ref: Ref, collection: str) -> tuple[Entity | None, str, str]:
        """(entity, version id, rest-of-pointer) for a local or xid reference, or (None, '', reason)."""
        path = entity_path(ref.pointer)
        if path is None or path.collection != collection:
            return None, "", f"does not point into {collection}"
        if ref.kind == "local":
            doc = self._doc(ref.file)
            if doc is None:
                return None, "", f"file {ref.file} cannot be loaded"
            groups = doc.collection(collection)
        else:
            groups = self.merged[collection]
        group = groups.get(path.group)
        if group is None:
            return None, "", f"{collection} {path.group!r} does not exist"
        if path.member is None:
            return group, "", path.rest
        member = group.children.get(path.member)
        if member is None:
            return None, "", f"{path.member!r} does not exist in {collection} {path.group!r}"
        return member, path.version or "", path.rest

    # -- basemessage ---------------------------------------------------------------------------------
    def materialize(self, message: Entity) -> dict[str, Any] | None:
        """Follow the basemessage chain to its root and deep-merge back down; None when on a cycle."""
        chain = [message]
        seen = {id(message)}
        current = message
        while isinstance(current.attrs.get("basemessage"), Ref):
            ref = current.attrs["basemessage"]
            where = ref.where or current.origin.child("basemessage")
            if ref.kind == "remote":
                self.warn(where, f"basemessage {ref.text!r} is an external reference and is not fetched; "
                          "the message is used as written", "dangling-basemessage")
                break
            base, _, reason = self.lookup(ref, "messagegroups")
            if base is None or base.kind != "message":
                self.warn(where, f"basemessage {ref.text!r} does not resolve ({reason or 'not a message'}); "
                          "the message is used as written", "dangling-basemessage")
                break
            if id(base) in seen or len(chain) > MAX_CHAIN:
                self.error(message.origin.child("basemessage"),
                           f"basemessage chain of {message.id!r} is circular "
                           f"({' -> '.join(m.id for m in chain)} -> {base.id}); the message is left out",
                           "basemessage-cycle")
                return None
            seen.add(id(base))
            chain.append(base)
            current = base
        attrs: dict[str, Any] = {}
        for entity in reversed(chain):
            attrs = deep_merge(attrs, entity.attrs)
        attrs.pop("basemessage", None)
        return attrs

    # -- payload schema -------------------------------------------------------------------------------
    def payload(self, message: Entity, attrs: dict[str, Any]) -> tuple[PayloadSchema | None, str | None, bool]:
        """(schema, note, ok): ok is False when a schema link is broken and the message must be left out."""
        fmt = attrs.get("dataschemaformat")
        if "dataschema" in attrs:
            return PayloadSchema(fmt, attrs["dataschema"], None, message.origin.child("dataschema")), None, True
        ref = attrs.get("dataschemauri") or attrs.get("dataschemaxid")
        if not isinstance(ref, Ref):
            return None, None, True
        field = "dataschemauri" if attrs.get("dataschemauri") is not None else "dataschemaxid"
        where = ref.where or message.origin.child(field)
        return self._follow_schema(ref, fmt, where, depth=0)

    def _follow_schema(self, ref: Ref, fmt: Any, where: Origin,
                       depth: int) -> tuple[PayloadSchema | None, str | None, bool]:
        if ref.kind == "remote":
            note = f"schema {ref.text} is remote; remote fetching is off, so the payload is not validated"
            self.warn(where, note, "remote-schema")
            return None, note, True
        if depth > MAX_CHAIN:
            self.error(where, f"schema reference {ref.text!r} nests too deep", "ref")
            return None, None, False
        if ref.kind == "local" and not ref.pointer.strip("/"):
            return self._schema_file(ref, fmt, where)
        version_owner, vid, rest = self.lookup(ref, "schemagroups")
        if version_owner is None or version_owner.kind != "schema":
            reason = rest if version_owner is None else "it names a schema group, not a schema"
            self.error(where, f"schema reference {ref.text!r} does not resolve: {reason}", "dangling-ref")
            return None, None, False
        version = version_owner.children.get(vid) if vid else default_version(version_owner)
        if version is None:
            detail = f"version {vid!r} does not exist" if vid else "the schema has no versions"
            self.error(where, f"schema reference {ref.text!r} does not resolve: {detail}", "dangling-ref")
            return None, None, False
        fmt = fmt or version.attrs.get("format") or version_owner.attrs.get("format")
        if "schema" in version.attrs or "schemabase64" in version.attrs:
            value = version.attrs.get("schema")
            if value is None:
                value = base64.b64decode(version.attrs["schemabase64"]).decode("utf-8", "replace")
            origin = version.origin.child("schema")
            if rest:
                value, problem = navigate(value, rest)
                if problem:
                    self.error(where, f"schema reference {ref.text!r}: {problem}", "dangling-ref")
                    return None, None, False
            return PayloadSchema(fmt, value, ref.selector, origin), None, True
        inner = version.attrs.get("schemauri")
        if isinstance(inner, Ref) and inner.kind != "remote":
            target, _, _ = self.lookup(inner, "schemagroups")
            if target is version_owner or target is version:
                self.error((inner.where or version.origin.child("schemauri")),
                           f"schema version refers to its own schema ({inner.text!r}); there is no schema content",
                           "circular-ref")
                return None, None, False
        if isinstance(inner, Ref):
            if ref.selector and not inner.selector:
                inner = Ref(inner.kind, inner.text, inner.file, inner.pointer, ref.selector)
            return self._follow_schema(inner, fmt, (inner.where or version.origin.child("schemauri")), depth + 1)
        self.error(where, f"schema reference {ref.text!r}: the version holds neither `schema` nor `schemauri`",
                   "dangling-ref")
        return None, None, False

    def _schema_file(self, ref: Ref, fmt: Any, where: Origin) -> tuple[PayloadSchema | None, str | None, bool]:
        """A relative reference to a plain schema file (`temperature.avsc`, `order.proto`)."""
        path = Path(ref.file)
        try:
            text = path.read_text("utf-8")
        except OSError as exc:
            self.error(where, f"schema file {ref.text!r} cannot be read: {exc.strerror}", "dangling-ref")
            return None, None, False
        value: Any = text
        if path.suffix.lower() in (".json", ".avsc", ".jsonschema"):
            import json

            try:
                value = json.loads(text)
            except ValueError as exc:
                self.error(where, f"schema file {ref.text!r} is not valid JSON: {exc}", "parse")
                return None, None, False
        return PayloadSchema(fmt, value, ref.selector, Origin(str(path), "")), None, True


def navigate(value: Any, pointer: str) -> tuple[Any, str]:
    """Follow a JSON pointer inside a schema value; for JSON Schema keep the root's definitions reachable."""
    root = value
    for segment in pointer_segments(pointer):
        if isinstance(value, dict) and segment in value:
            value = value[segment]
        elif isinstance(value, list) and segment.isdigit() and int(segment) < len(value):
            value = value[int(segment)]
        else:
            return None, f"pointer {pointer!r} does not exist inside the schema"
    if isinstance(value, dict) and isinstance(root, dict) and value is not root:
        value = dict(value)
        for key in ("definitions", "$defs", "$schema"):
            if key in root and key not in value:
                value[key] = root[key]
    return value, ""


def build_registry(merged: dict[str, dict[str, Entity]], resolver: Resolver) -> Registry:
    registry = Registry(messagegroups=merged["messagegroups"], schemagroups=merged["schemagroups"])
    for gid, group in merged["messagegroups"].items():
        for mid, message in group.children.items():
            definition = _definition(gid, message, resolver)
            if definition is not None:
                registry.messages[(gid, mid)] = definition
    for eid, endpoint in merged["endpoints"].items():
        candidates: list[MessageDefinition] = []
        for mid, message in endpoint.children.items():
            definition = _definition(eid, message, resolver)
            if definition is not None:
                candidates.append(definition)
        for ref, where in endpoint.attrs.get("messagegroups", []):
            found, _, reason = resolver.lookup(ref, "messagegroups")
            if found is None or found.kind != "messagegroup":
                resolver.error(where, f"message group reference {ref.text!r} does not resolve: "
                               f"{reason or 'not a message group'}; the reference is left out", "dangling-ref")
                continue
            candidates.extend(registry.messages[(found.id, mid)] for mid in found.children
                              if (found.id, mid) in registry.messages)
        _check_will_message(endpoint, resolver)
        unique = {(m.groupid, m.messageid): m for m in candidates}
        registry.endpoints[eid] = EndpointDefinition(eid, endpoint.attrs, tuple(unique.values()), endpoint.origin)
    return registry


def _check_will_message(endpoint: Entity, resolver: Resolver) -> None:
    """An MQTT endpoint's `willmessage` (an xid) must name an existing message; remote ones are not fetched."""
    will = endpoint.attrs.get("willmessage")
    if will is None or will[0].kind == "remote":
        return
    ref, where = will
    path = entity_path(ref.pointer)
    collection = "endpoints" if path is not None and path.collection == "endpoints" else "messagegroups"
    target, _, reason = resolver.lookup(ref, collection)
    if target is None or target.kind != "message":
        resolver.error(where, f"willmessage {ref.text!r} does not resolve: {reason or 'not a message definition'}",
                       "dangling-ref")


def _definition(gid: str, message: Entity, resolver: Resolver) -> MessageDefinition | None:
    attrs = resolver.materialize(message)
    if attrs is None:
        return None
    payload, note, ok = resolver.payload(message, attrs)
    if not ok:
        resolver.error(message.origin, f"message {message.id!r} is left out because its schema link is broken",
                       "message-left-out")
        return None
    return MessageDefinition(gid, message.id, attrs, payload, message.origin, note)
