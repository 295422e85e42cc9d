"""Follow references: message groups of endpoints, basemessage chains, and payload schema links.

Local references (`#/pointer`, `file.json#/pointer`) resolve inside the
document they name, which must lie inside the directories being loaded;
xids (`/messagegroups/g/...`) resolve in the merged registry; http(s)
references are fetched only as the operator's `remote` settings allow
(validation rule 2: off by default). A remote schema that policy
keeps from being fetched is a warning (its payload is not checked); one
that was allowed but could not be fetched is an error, like a broken local
link. Where the documents come from is `gateway.loader.referenced`.
"""

from __future__ import annotations

import base64
from typing import Any

from gateway.errors import Diagnostic, Severity
from gateway.loader.bundle import RefUnavailable, bundle, is_legacy
from gateway.loader.context import SchemaSource
from gateway.loader.merge import deep_merge
from gateway.loader.referenced import ReferencedSources, Unavailable
from gateway.loader.refs import entity_path, is_url, pointer_segments
from gateway.loader.versions import default_version
from gateway.model import Entity, Origin, Ref
from gateway.model.resolved import EndpointDefinition, MessageDefinition, PayloadSchema, Registry

MAX_CHAIN = 32


class Resolver:
    def __init__(self, merged: dict[str, dict[str, Entity]], sources: ReferencedSources,
                 registries: SchemaSource | None = None) -> None:
        self.merged = merged
        self.sources = sources
        self.diagnostics: list[Diagnostic] = []
        # Confluent-compatible schema registries (gateway.yaml `schemaregistries`), handed in by the snapshot
        self.registries = registries

    # -- reporting ---------------------------------------------------------------------------------
    def error(self, origin: Origin, message: str, code: str) -> None:
        self.diagnostics.append(Diagnostic(Severity.ERROR, origin.file, message, pointer=origin.pointer, code=code))

    def warn(self, origin: Origin, message: str, code: str) -> None:
        self.diagnostics.append(Diagnostic(Severity.WARNING, origin.file, message, pointer=origin.pointer,
                                           code=code))

    # -- entity lookup -----------------------------------------------------------------------------
    def lookup(self, ref: Ref, collection: str) -> tuple[Entity | None, str, str]:
        """(entity, version id, rest-of-pointer) for a local, remote or xid reference, or (None, '', reason)."""
        path = entity_path(ref.pointer)
        if path is None or path.collection != collection:
            if ref.kind == "remote" and not ref.pointer:
                return None, "", f"a remote reference to {collection} needs a #/pointer into the registry document"
            return None, "", f"does not point into {collection}"
        if ref.kind in ("local", "remote"):
            doc = self.sources.document(ref)
            if isinstance(doc, Unavailable):
                return None, "", doc.reason
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
            refusal = self.sources.remote_refusal(ref.file) if ref.kind == "remote" else None
            if refusal is not None:
                self.warn(where, f"basemessage {ref.text!r} is not fetched, so the message is used as written: "
                          f"{refusal}", "dangling-basemessage")
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
            where = message.origin.child("dataschema")
            if attrs.get("dataschemauri") is not None:
                # message spec `dataschema`: "Mutually exclusive with the `dataschemauri` attribute"; a warning,
                # not an error, so a document that says both still judges its messages (by the inline schema)
                self.warn(where, "dataschema and dataschemauri are mutually exclusive (xRegistry message spec); "
                          "the inline dataschema is used", "exclusive-attributes")
            return self._complete(PayloadSchema(fmt, attrs["dataschema"], None, where), where)
        ref = attrs.get("dataschemauri") or attrs.get("dataschemaxid")
        if not isinstance(ref, Ref):
            return None, None, True
        field = "dataschemauri" if attrs.get("dataschemauri") is not None else "dataschemaxid"
        where = ref.where or message.origin.child(field)
        return self._follow_schema(ref, fmt, where, depth=0)

    def _follow_schema(self, ref: Ref, fmt: Any, where: Origin,
                       depth: int) -> tuple[PayloadSchema | None, str | None, bool]:
        from_registry = self.registries.resolve(ref, fmt, where, self) if self.registries is not None else None
        if from_registry is not None:
            return from_registry
        refusal = self.sources.remote_refusal(ref.file) if ref.kind == "remote" else None
        if refusal is not None:
            note = f"schema {ref.text} is not fetched, so the payload is not validated: {refusal}"
            self.warn(where, note, "remote-schema")
            return None, note, True
        if depth > MAX_CHAIN:
            self.error(where, f"schema reference {ref.text!r} nests more than {MAX_CHAIN} references deep "
                       "(a cycle, or a chain too long)", "ref")
            return None, None, False
        if ref.kind in ("local", "remote") and entity_path(ref.pointer) is None:
            # a schema file, whole or at a pointer inside it (`reading.json#/definitions/Reading`)
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
            return self._complete(PayloadSchema(fmt, value, ref.selector, origin), where)
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
        """A whole schema file (`temperature.avsc`, `order.proto`, `https://.../reading.json`)."""
        found = self.sources.schema(ref)
        if isinstance(found, Unavailable):
            self.error(where, f"schema file {ref.text!r} cannot be used: {found.reason}", "dangling-ref")
            return None, None, False
        value, file = found
        if ref.pointer.strip("/"):
            value, problem = navigate(value, ref.pointer)
            if problem:
                self.error(where, f"schema file {ref.text!r}: {problem}", "dangling-ref")
                return None, None, False
        return self._complete(PayloadSchema(fmt, value, ref.selector, Origin(file, ref.pointer.rstrip("/"))), where)

    def _complete(self, payload: PayloadSchema, where: Origin) -> tuple[PayloadSchema | None, str | None, bool]:
        """Embed the documents a JSON Schema's remote `$ref`s name, when remote fetching is on."""
        if self.sources.fetcher is None:
            return payload, None, True  # nothing fetched; the compiler reports a remote $ref it cannot follow
        base = payload.origin.file if is_url(payload.origin.file) else None
        try:
            schema = bundle(payload.schema, base, self.sources.remote_json,
                            legacy=is_legacy(payload.schema, payload.format))
        except RefUnavailable as exc:
            self.error(where, f"schema $ref cannot be followed: {exc}", "dangling-ref")
            return None, None, False
        return PayloadSchema(payload.format, schema, payload.type_name, payload.origin), None, True


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
    attempted: set[tuple[str, str]] = set()
    for gid, group in merged["messagegroups"].items():
        for mid, message in group.children.items():
            attempted.add((gid, mid))
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
            candidates.extend(_group_members(found, registry, attempted, resolver))
        _check_will_message(endpoint, resolver)
        unique = {(m.groupid, m.messageid): m for m in candidates}
        registry.endpoints[eid] = EndpointDefinition(eid, endpoint.attrs, tuple(unique.values()), endpoint.origin)
    return registry


def _group_members(group: Entity, registry: Registry, attempted: set[tuple[str, str]],
                   resolver: Resolver) -> list[MessageDefinition]:
    """The definitions of a group an endpoint names; one from a fetched document or a file outside the
    load set is resolved here, once."""
    for mid, message in group.children.items():
        if (group.id, mid) not in attempted:
            attempted.add((group.id, mid))
            definition = _definition(group.id, message, resolver)
            if definition is not None:
                registry.messages[(group.id, mid)] = definition
    return [registry.messages[(group.id, mid)] for mid in group.children if (group.id, mid) in registry.messages]


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
