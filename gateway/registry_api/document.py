"""The merged registry of a Snapshot as one xRegistry document: what `xgate export` writes and `/registry` serves.

Two forms, both in 1.0 attribute names (whatever generation the files were written in):

- declared (`resolved=False`): every entity as the documents declared it after normalization and merging,
  `basemessageuri` chains kept, messages the loader left out still present;
- resolved (`resolved=True`): what xgate judges with: each message's `basemessageuri` chain materialized,
  its payload schema inlined as `dataschema` where it was resolved, messages the loader left out absent,
  endpoint references to message groups that yielded nothing dropped, and message groups known only through
  a fetched (remote) reference included.

The document is in the form an xRegistry import takes: server-generated attributes (`self`, `epoch`,
`*url`...) are the API's business (`tree.py`, `render.py`). It loads on its own and judges as the directory
did; references are rewritten for that (`references.py`). What cannot stand on its own keeps its text: a
schema file named with a `:Type` selector (an inline `dataschema` cannot carry one), or one no message used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.loader.endpoints import address_entries
from gateway.loader.snapshot import Snapshot
from gateway.loader.versions import default_version
from gateway.model import Entity, Origin, Ref
from gateway.model.resolved import EndpointDefinition, MessageDefinition
from gateway.registry_api.extras import DeclaredAttributes
from gateway.registry_api.references import Declared, is_file, loaded_urls, ref_text
from gateway.schemaregistry.model import RegistryPayloadSchema

SPECVERSION = "1.0-rc4"
REGISTRY_ID = "xgate"
# message attributes in the order the message spec lists them
MESSAGE_ATTRS = ("description", "basemessage", "envelope", "envelopemetadata", "envelopeoptions", "protocol",
                 "protocoloptions", "dataschemaformat", "dataschema", "dataschemauri", "dataschemaxid",
                 "datacontenttype")
# the name message/model.json (and its document schema) give the base message reference
BASEMESSAGE = "basemessageuri"


def registry_document(snapshot: Snapshot, *, resolved: bool, schema_links: bool = False) -> dict[str, Any]:
    """The registry of `snapshot` as one document: `endpoints`, `messagegroups` and `schemagroups`.
    `schema_links` (the API): a resolved message whose schema is one of the registry's own keeps its reference
    (`dataschemauri: /schemagroups/...`, what the document said) rather than a copy of the schema."""
    return _Writer(snapshot, resolved, schema_links).document()


def _file_schemas(snapshot: Snapshot) -> dict[tuple[str, str], Any]:
    """What the loader read from each schema file a definition named: (file, pointer) -> schema value."""
    found: dict[tuple[str, str], Any] = {}
    registry = snapshot.registry
    for definition in [*registry.messages.values(), *(m for e in registry.endpoints.values() for m in e.messages)]:
        payload = definition.payload
        if payload is not None:
            found.setdefault((payload.origin.file, payload.origin.pointer), payload.schema)
    return found


def _resolved_attrs(definition: MessageDefinition, links: Callable[[Any], bool] | None = None) -> dict[str, Any]:
    """Materialized attributes, with the payload schema inlined when the loader resolved one; with `links`, a
    reference it accepts (one into this registry's schema groups) is kept instead of inlining the schema."""
    attrs = dict(definition.attrs)
    payload = definition.payload
    if payload is None or payload.type_name is not None or isinstance(payload, RegistryPayloadSchema):
        # nothing resolved (or a `:Type` selector, which an inline `dataschema` cannot carry, or a schema
        # registry's, whose reference also says that payloads carry the Confluent wire format)
        return attrs
    if links is not None and "dataschema" not in attrs and \
            any(links(attrs.get(key)) for key in ("dataschemauri", "dataschemaxid")):
        return attrs
    attrs["dataschema"] = payload.schema
    if payload.format is not None:
        attrs["dataschemaformat"] = payload.format
    link = attrs.pop("dataschemauri", None)  # the message spec: `dataschema` and `dataschemauri` exclude each other
    if isinstance(link, Ref) and not is_file(link) and link.kind != "remote" and "dataschemaxid" not in attrs:
        attrs["dataschemaxid"] = link  # an xid says which schema of this registry was inlined
    xid = attrs.get("dataschemaxid")
    if isinstance(xid, Ref) and is_file(xid):
        del attrs["dataschemaxid"]  # a file path says nothing beside the inlined schema
    return attrs


def _inline_definitions(endpoint: EndpointDefinition) -> list[MessageDefinition]:
    """The resolved messages an endpoint declares itself (not those of its message groups)."""
    origin = endpoint.origin
    return [m for m in endpoint.messages if m.groupid == endpoint.endpointid and m.origin.file == origin.file
            and m.origin.pointer.startswith(origin.pointer + "/")]


def _group_attrs(group: Entity | None) -> dict[str, Any]:
    attrs = group.attrs if group is not None else {}
    return {k: attrs[k] for k in ("description", "envelope", "protocol") if attrs.get(k) is not None}


class _Writer:
    def __init__(self, snapshot: Snapshot, resolved: bool, schema_links: bool = False) -> None:
        self.snapshot = snapshot
        self.resolved = resolved
        self.files = _file_schemas(snapshot)
        self.extras = DeclaredAttributes(snapshot)
        self.declared = None if resolved else Declared(snapshot)
        loaded = loaded_urls(snapshot)
        self.links: Callable[[Any], bool] | None = None if not schema_links else \
            (lambda ref: isinstance(ref, Ref) and ref_text(ref, loaded).startswith("/schemagroups/"))
        self.text: Callable[[Ref], str] = (lambda ref: ref_text(ref, loaded)) if self.declared is None \
            else self.declared.text

    def document(self) -> dict[str, Any]:
        registry = self.snapshot.registry
        groups = self._resolved_groups() if self.resolved else self._declared_groups()
        declared = self.declared.endpoints() if self.declared is not None else {}
        endpoints = {eid: self._endpoint(e, declared.get(eid)) for eid, e in registry.endpoints.items()}
        schemagroups = {gid: self._schemagroup(group) for gid, group in registry.schemagroups.items()}
        return {"specversion": SPECVERSION, "registryid": REGISTRY_ID, "endpoints": endpoints,
                "messagegroups": groups, "schemagroups": schemagroups}

    # -- values ---------------------------------------------------------------------------------------------------
    def plain(self, value: Any) -> Any:
        """Attribute values with references written back as text."""
        if isinstance(value, Ref):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.plain(v) for v in value]
        return value

    def file_content(self, ref: Ref) -> tuple[bool, Any]:
        key = (ref.file, ref.pointer.rstrip("/"))
        return (True, self.files[key]) if is_file(ref) and key in self.files else (False, None)

    # -- messages -------------------------------------------------------------------------------------------------
    def with_declared(self, out: dict[str, Any], origin: Origin | None, kind: str) -> dict[str, Any]:
        """`out` with what the document declared beyond it (name, labels, extensions...; extras.py)."""
        if origin is not None:
            for key, value in self.extras.of(origin, kind).items():
                out.setdefault(key, value)
        return out

    def message(self, mid: str, attrs: dict[str, Any], defaults: dict[str, Any],
                origin: Origin | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"messageid": mid}
        attrs = dict(attrs)
        link = attrs.get("dataschemauri")
        if isinstance(link, Ref) and link.selector is None and "dataschema" not in attrs:
            known, content = self.file_content(link)
            if known:  # a schema file beside the documents: the document carries it, to stand on its own
                attrs["dataschema"] = content
                del attrs["dataschemauri"]
        for key in MESSAGE_ATTRS:
            value = attrs.get(key)
            if key in ("envelope", "protocol") and key in attrs and value is None and defaults.get(key) is not None:
                # declared as none in a group (or endpoint) that has one: say so, or the group's would apply
                value = "none" if key == "envelope" else "None"
            if value is not None:
                out[BASEMESSAGE if key == "basemessage" else key] = self.plain(value)
        return self.with_declared(out, origin, "message")

    def _declared_groups(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for gid, group in self.snapshot.registry.messagegroups.items():
            attrs = _group_attrs(group)
            messages = {mid: self.message(mid, m.attrs, attrs, m.origin) for mid, m in group.children.items()}
            out[gid] = self.with_declared({"messagegroupid": gid, **attrs, "messages": messages}, group.origin,
                                     "messagegroup")
        return out

    def _resolved_groups(self) -> dict[str, Any]:
        """Local groups with the members that resolved, then groups only known through a fetched reference."""
        registry = self.snapshot.registry
        members: dict[str, list[MessageDefinition]] = {
            gid: [registry.messages[(gid, mid)] for mid in group.children if (gid, mid) in registry.messages]
            for gid, group in registry.messagegroups.items()}
        for (gid, mid), definition in registry.messages.items():
            listed = members.setdefault(gid, [])
            if all(d.messageid != mid for d in listed):
                listed.append(definition)
        out: dict[str, Any] = {}
        for gid, definitions in members.items():
            group = registry.messagegroups.get(gid)
            attrs = _group_attrs(group)
            messages = {d.messageid: self.message(d.messageid, _resolved_attrs(d, self.links), attrs, d.origin)
                        for d in definitions}
            out[gid] = self.with_declared({"messagegroupid": gid, **attrs, "messages": messages},
                                     group.origin if group is not None else None, "messagegroup")
        return out

    # -- endpoints ------------------------------------------------------------------------------------------------
    def _group_refs(self, endpoint: EndpointDefinition) -> list[str]:
        out: list[str] = []
        if self.resolved:
            # the groups whose messages the endpoint judges with (a reference that yielded nothing is left out)
            inline = {id(m) for m in _inline_definitions(endpoint)}
            for message in endpoint.messages:
                text = f"/messagegroups/{message.groupid}"
                if id(message) not in inline and text not in out:
                    out.append(text)
            return out
        for ref, _ in endpoint.attrs.get("messagegroups", []):
            text = self.text(ref)
            if text not in out:
                out.append(text)
        return out

    def _endpoint(self, endpoint: EndpointDefinition, declared: Entity | None) -> dict[str, Any]:
        attrs = endpoint.attrs
        out: dict[str, Any] = {"endpointid": endpoint.endpointid}
        for key in ("description", "labels", "usage", "envelope", "protocol"):
            if attrs.get(key):
                out[key] = self.plain(attrs[key])
        if attrs.get("envelopemode"):
            out["envelopeoptions"] = {"mode": attrs["envelopemode"]}
        options = self.plain(dict(attrs.get("protocoloptions") or {}))
        if attrs.get("willmessage") is not None:
            options["willmessage"] = self.text(attrs["willmessage"][0])
        uris = [u for u in attrs.get("endpoints", []) if isinstance(u, str) and u]
        if uris:
            options["endpoints"] = address_entries(attrs.get("protocol"), uris)
        if options:
            out["protocoloptions"] = options
        out["messagegroups"] = self._group_refs(endpoint)
        defaults = {"envelope": attrs.get("envelope"), "protocol": attrs.get("protocol")}
        if self.resolved:
            out["messages"] = {m.messageid: self.message(m.messageid, _resolved_attrs(m, self.links), defaults, m.origin)
                               for m in _inline_definitions(endpoint)}
        else:
            children = declared.children if declared is not None else {}
            out["messages"] = {mid: self.message(mid, m.attrs, defaults, m.origin) for mid, m in children.items()}
        return self.with_declared(out, endpoint.origin, "endpoint")

    # -- schema groups --------------------------------------------------------------------------------------------
    def _version(self, vid: str, sid: str, version: Entity, is_default: bool) -> dict[str, Any]:
        attrs = version.attrs
        out: dict[str, Any] = {"schemaid": sid, "versionid": vid}
        if attrs.get("format") is not None:
            out["format"] = attrs["format"]
        out["isdefault"] = is_default
        if "schema" in attrs:
            out["schema"] = attrs["schema"]
        elif "schemabase64" in attrs:
            out["schemabase64"] = attrs["schemabase64"]
        elif isinstance(attrs.get("schemauri"), Ref):
            known, content = self.file_content(attrs["schemauri"])
            out["schema" if known else "schemaurl"] = content if known else self.text(attrs["schemauri"])
        return self.with_declared(out, version.origin, "schema")

    def _schemagroup(self, group: Entity) -> dict[str, Any]:
        schemas: dict[str, Any] = {}
        for sid, schema in group.children.items():
            default = default_version(schema)
            chosen = any(schema.attrs.get(k) is not None for k in ("metadefaultversionid", "defaultversionid")) or \
                any(v.attrs.get("isdefault") for v in schema.children.values())
            out: dict[str, Any] = {"schemaid": sid}
            if schema.attrs.get("format") is not None:
                out["format"] = schema.attrs["format"]
            if default is not None:
                out["meta"] = {"defaultversionid": default.id, "defaultversionsticky": chosen}
            versions = {vid: self._version(vid, sid, version, version is default)
                        for vid, version in schema.children.items()}
            # a Resource's own attributes are its default Version's (core spec "Resource Entity")
            own = self.with_declared({}, schema.origin, "schema")
            if default is not None and default.id in versions:
                for key, value in own.items():
                    versions[default.id].setdefault(key, value)
            out["versions"] = versions
            schemas[sid] = out
        result: dict[str, Any] = {"schemagroupid": group.id}
        if group.attrs.get("description") is not None:
            result["description"] = group.attrs["description"]
        result["schemas"] = schemas
        return self.with_declared(result, group.origin, "schemagroup")
