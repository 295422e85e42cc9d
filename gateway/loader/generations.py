"""Normalize every document generation of CONFORMANCE.md section 1 into 1.0 attribute names.

The shape decides the generation, never the `specversion` label: collections
and attribute names of each generation are looked up by their aliases, and
each item is rewritten into the 1.0 vocabulary (`envelope`,
`envelopemetadata`, `protocol`, `protocoloptions`, `dataschemaformat`,
`dataschema`/`dataschemauri`, `basemessage`). References are made absolute
(`gateway.loader.refs`) so that they survive a `basemessage` merge.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from gateway.errors import Diagnostic, Severity
from gateway.loader.names import normalize_envelope, normalize_protocol
from gateway.loader.refs import parse_ref
from gateway.model import Doc, Entity, Origin, Ref

GROUP_KEYS = ("messagegroups", "definitionGroups", "definitiongroups", "groups")
MESSAGE_KEYS = ("messages", "definitions")
SCHEMAGROUP_KEYS = ("schemagroups", "schemaGroups")
PROPDEF_KEYS = frozenset({"type", "value", "required", "description", "specurl", "name"})
SCHEMA_URI_KEYS = ("dataschemauri", "dataschemaurl", "schemauri", "schemaurl", "schemaUrl", "schemaURL", "schemaUri")
# keys of a group entry in an xRegistry model file (model.json), never in a registry document
MODEL_KEYS = frozenset({"plural", "singular", "resources", "$include", "modelversion"})
WILL_KEYS = ("willmessage", "will-message")
BASEMESSAGE_KEYS = ("basemessage", "basemessageurl", "basemessageuri", "basemessageUrl")
# old protocol option spellings -> 1.0 names
OPTION_ALIASES = {"topic-name": "topic_name", "user-properties": "user_properties",
                  "application_properties": "application-properties",
                  "message_annotations": "message-annotations",
                  "delivery_annotations": "delivery-annotations", "reply_to": "reply-to",
                  "content-type": "content_type", "response-topic": "response_topic",
                  "correlation-data": "correlation_data", "payload-format": "payload_format",
                  "message-expiry-interval": "message_expiry_interval",
                  "consumer-group": "consumergroup", "will-topic": "willtopic", "will-message": "willmessage"}


class _Ctx:
    def __init__(self, file: str) -> None:
        self.file = file
        self.diagnostics: list[Diagnostic] = []

    def error(self, origin: Origin, message: str, code: str) -> None:
        self.diagnostics.append(Diagnostic(Severity.ERROR, self.file, message, pointer=origin.pointer, code=code))

    def warn(self, origin: Origin, message: str, code: str) -> None:
        self.diagnostics.append(Diagnostic(Severity.WARNING, self.file, message, pointer=origin.pointer, code=code))


def _first(raw: dict[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    for key in keys:
        if key in raw:
            return key, raw[key]
    return None, None


def _as_map(value: Any, origin: Origin, ctx: _Ctx, what: str) -> dict[str, Any]:
    """Collections are maps by id; a list of objects with an `id`/`name` is tolerated."""
    if isinstance(value, dict):
        return value
    if isinstance(value, list):
        out: dict[str, Any] = {}
        for index, item in enumerate(value):
            ident = isinstance(item, dict) and (item.get("id") or item.get("name"))
            if isinstance(ident, str):
                out[ident] = item
            else:
                ctx.error(origin.child(str(index)), f"{what} entry has no id", "shape")
        return out
    ctx.error(origin, f"expected an object of {what} keyed by id, found {type(value).__name__}", "shape")
    return {}


def detect_generation(raw: dict[str, Any]) -> str:
    if any(k in raw for k in ("definitionGroups", "definitiongroups", "schemaGroups")):
        return "0.4/0.5 CloudEvents Registry"
    if "groups" in raw and "messagegroups" not in raw:
        return "Discovery"
    groups = raw.get("messagegroups")
    if isinstance(groups, dict):
        for group in groups.values():
            definitions = group.get("definitions") if isinstance(group, dict) else None
            if isinstance(definitions, dict) and any(isinstance(d, dict) and "versions" in d
                                                     for d in definitions.values()):
                return "Message Catalog 0.1"
            messages = group.get("messages", definitions) if isinstance(group, dict) else None
            if isinstance(messages, dict):
                for msg in messages.values():
                    if isinstance(msg, dict) and "envelope" in msg:
                        return "1.0"
                    if isinstance(msg, dict) and "format" in msg:
                        return "0.5-wip early"
    return "1.0"


def _foreign_kind(raw: dict[str, Any]) -> str | None:
    """Documents that sit beside registries but are not one: xRegistry model files, JSON Schemas, OpenAPI."""
    groups = raw.get("groups")
    if isinstance(groups, dict) and groups and all(
            key == "$includes" or (isinstance(value, dict) and not MODEL_KEYS.isdisjoint(value))
            for key, value in groups.items()):
        return "an xRegistry model definition"
    if any(k in raw for k in (*GROUP_KEYS, *SCHEMAGROUP_KEYS, "endpoints")):
        return None
    if isinstance(raw.get("$schema"), str) and "json-schema.org" in raw["$schema"]:
        return "a JSON Schema"
    if "openapi" in raw or "asyncapi" in raw:
        return "an OpenAPI/AsyncAPI document"
    return None


def normalize_document(raw: Any, file: str) -> tuple[Doc, list[Diagnostic]]:
    ctx = _Ctx(file)
    root = Origin(file, "")
    if not isinstance(raw, dict):
        ctx.error(root, f"a registry document is a JSON object, found {type(raw).__name__}", "shape")
        return Doc(file, "unknown"), ctx.diagnostics
    kind = _foreign_kind(raw)
    if kind is not None:
        ctx.warn(root, f"{kind}, not a registry document: nothing is loaded from it", "not-registry")
        return Doc(file, "not a registry"), ctx.diagnostics
    doc = Doc(file, detect_generation(raw))
    key, groups = _first(raw, GROUP_KEYS)
    if key is not None:
        for gid, graw in _as_map(groups, root.child(key), ctx, "message groups").items():
            group = _normalize_group(gid, graw, root.child(key, gid), ctx)
            if group is not None:
                doc.messagegroups[gid] = group
    key, sgroups = _first(raw, SCHEMAGROUP_KEYS)
    if key is not None:
        for gid, graw in _as_map(sgroups, root.child(key), ctx, "schema groups").items():
            sgroup = _normalize_schemagroup(gid, graw, root.child(key, gid), ctx)
            if sgroup is not None:
                doc.schemagroups[gid] = sgroup
    if "endpoints" in raw:
        for eid, eraw in _as_map(raw["endpoints"], root.child("endpoints"), ctx, "endpoints").items():
            endpoint = _normalize_endpoint(eid, eraw, root.child("endpoints", eid), ctx)
            if endpoint is not None:
                doc.endpoints[eid] = endpoint
    _normalize_loose_resources(raw, doc, root, ctx)
    return doc, ctx.diagnostics


def _normalize_loose_resources(raw: dict[str, Any], doc: Doc, root: Origin, ctx: _Ctx) -> None:
    """Split-file layouts hold one resource per file; its place in the folder tree gives its ids.

    `schemagroups/G/schemas/S/index.json` is schema S, `.../S$meta/index.json` its metadata and
    `.../S/versions/V/index.json` one version.
    """
    if doc.endpoints or doc.messagegroups or doc.schemagroups:
        return
    parts = PurePath(ctx.file).parts
    lowered = [p.lower() for p in parts]
    if "schemagroups" in lowered:
        at = len(lowered) - 1 - lowered[::-1].index("schemagroups")
        tail = list(parts[at + 1:-1])
        if len(tail) >= 3 and tail[1] == "schemas":
            gid, sid = tail[0], tail[2].removesuffix("$meta")
            group = Entity("schemagroup", gid, {}, root)
            if len(tail) >= 5 and tail[3] == "versions":
                schema = Entity("schema", sid, {"format": raw.get("format")}, root)
                vraw, vorigin = raw, root
                inner = raw.get("versions")
                if isinstance(inner, dict) and isinstance(inner.get(tail[4]), dict) and not any(
                        k in raw for k in ("schema", "schemaobject", "schemabase64", *SCHEMA_URI_KEYS)):
                    # the version's folder holds the whole schema resource (codegen split-files): take V from it
                    vraw, vorigin = inner[tail[4]], root.child("versions", tail[4])
                schema.children[tail[4]] = _normalize_version(tail[4], vraw, vorigin, ctx, raw.get("format"))
            else:
                built = normalize_schema(sid, raw, root, ctx)
                if built is None:
                    return
                schema = built
            group.children[sid] = schema
            doc.schemagroups[gid] = group
            doc.generation = "1.0 split files"
            return
    ctx.warn(root, "document holds no endpoints, message groups or schema groups", "empty")


def _normalize_group(gid: str, raw: Any, origin: Origin, ctx: _Ctx) -> Entity | None:
    if not isinstance(raw, dict):
        ctx.error(origin, f"message group must be an object, found {type(raw).__name__}", "shape")
        return None
    attrs = {"envelope": normalize_envelope(raw.get("envelope", raw.get("format"))),
             "protocol": normalize_protocol(raw.get("protocol", raw.get("binding"))),
             "description": raw.get("description")}
    group = Entity("messagegroup", gid, attrs, origin)
    key, messages = _first(raw, MESSAGE_KEYS)
    if key is not None:
        for mid, mraw in _as_map(messages, origin.child(key), ctx, "messages").items():
            msg = normalize_message(gid, mid, mraw, origin.child(key, mid), ctx, group_attrs=attrs)
            if msg is not None:
                group.children[mid] = msg
    return group


def _latest_catalog_version(raw: dict[str, Any]) -> dict[str, Any] | None:
    versions = raw.get("versions")
    items: list[Any]
    if isinstance(versions, list):
        items = versions
    elif isinstance(versions, dict):
        from gateway.loader.versions import order_version_ids

        items = [versions[k] for k in order_version_ids(list(versions))]
    else:
        return None
    defs = [v.get("definition") for v in items if isinstance(v, dict) and isinstance(v.get("definition"), dict)]
    return defs[-1] if defs else None


def normalize_message(gid: str, mid: str, raw: Any, origin: Origin, ctx: _Ctx,
                      group_attrs: dict[str, Any] | None = None) -> Entity | None:
    if not isinstance(raw, dict):
        ctx.error(origin, f"message definition must be an object, found {type(raw).__name__}", "shape")
        return None
    catalog = _latest_catalog_version(raw)
    if catalog is not None:
        raw = {**{k: v for k, v in raw.items() if k != "versions"}, **catalog}
    attrs: dict[str, Any] = {}
    envelope_raw = raw.get("envelope", raw.get("format"))
    protocol_raw = raw.get("protocol", raw.get("binding"))
    protocol_format = False
    if normalize_envelope(envelope_raw) is None and normalize_protocol(envelope_raw) is not None:
        # 0.4-wip wrote the protocol binding into `format` (`"format": "MQTT/3.1.1"`)
        protocol_raw = protocol_raw if protocol_raw is not None else envelope_raw
        envelope_raw = None
        attrs["envelope"] = None
        protocol_format = True
    elif envelope_raw is None and group_attrs:
        envelope_raw = group_attrs.get("envelope")
    if envelope_raw is not None:
        envelope = normalize_envelope(envelope_raw)
        if envelope is None:
            ctx.warn(origin.child("envelope"), f"unknown envelope {envelope_raw!r}: treated as none", "envelope")
        attrs["envelope"] = envelope
    # the 1.0 `protocoloptions` of old generations: 232ff64 `binding` + `message{...}`, and 0.4/0.5 protocol
    # fields (`properties`, `application-properties`, `header`, ...) under the `metadata` of a protocol-format message
    legacy_options = raw.get("message") if isinstance(raw.get("message"), dict) else None
    metadata_key, metadata = _first(raw, ("envelopemetadata", "metadata"))
    if metadata_key == "metadata" and protocol_format and isinstance(metadata, dict) and "attributes" not in metadata:
        legacy_options, metadata_key = metadata, None
    if metadata_key is None and catalog is not None and isinstance(catalog.get("attributes"), dict):
        # Message Catalog 0.1 declares the CloudEvents attributes as `versions[].definition.attributes`
        metadata_key, metadata = "attributes", catalog["attributes"]
    if metadata_key is not None:
        attrs["envelopemetadata"] = _normalize_metadata(metadata, origin.child(metadata_key), ctx)
    if protocol_raw is None and group_attrs:
        protocol_raw = group_attrs.get("protocol")
    if protocol_raw is not None:
        protocol = normalize_protocol(protocol_raw)
        if protocol is None and str(protocol_raw).lower() != "none":
            ctx.warn(origin.child("protocol"), f"unknown protocol {protocol_raw!r}: protocol constraints ignored",
                     "protocol")
        attrs["protocol"] = protocol
    if isinstance(raw.get("protocoloptions"), dict):
        attrs["protocoloptions"] = normalize_options(raw["protocoloptions"], attrs.get("protocol"))
    elif legacy_options is not None:
        attrs["protocoloptions"] = normalize_options(legacy_options, attrs.get("protocol"))
    if "envelopeoptions" in raw:
        attrs["envelopeoptions"] = raw["envelopeoptions"]
    _normalize_schema_link(raw, attrs, origin, ctx)
    if "datacontenttype" in raw:
        attrs["datacontenttype"] = raw["datacontenttype"]
    key, base = _first(raw, BASEMESSAGE_KEYS)
    if key is not None and base not in (None, ""):
        ref = parse_ref(base, ctx.file)
        if ref is None:
            ctx.error(origin.child(key), f"{key} {base!r} is not a reference", "ref")
        else:
            attrs["basemessage"] = ref
    if "description" in raw:
        attrs["description"] = raw["description"]
    return Entity("message", mid, attrs, origin)


def _normalize_schema_link(raw: dict[str, Any], attrs: dict[str, Any], origin: Origin, ctx: _Ctx) -> None:
    fmt = raw.get("dataschemaformat", raw.get("schemaformat"))
    inline = raw.get("dataschema")
    if isinstance(inline, dict) and "schematype" in inline and "schema" in inline:
        # Message Catalog 0.1: dataschema{schema, schematype}
        fmt = fmt or inline["schematype"]
        inline = inline["schema"]
    elif inline is None and "schema" in raw and not _looks_like_uri(raw["schema"]):
        inline = raw["schema"]
    if fmt is not None:
        attrs["dataschemaformat"] = fmt
    if inline is not None:
        attrs["dataschema"] = inline
    key, uri = _first(raw, SCHEMA_URI_KEYS)
    if key is None and _looks_like_uri(raw.get("schema")):
        key, uri = "schema", raw["schema"]
    if key is not None and uri not in (None, ""):
        ref = parse_ref(uri, ctx.file)
        if ref is None:
            ctx.error(origin.child(key), f"{key} {uri!r} is not a reference", "ref")
        else:
            attrs["dataschemauri"] = ref
    xid = raw.get("dataschemaxid")
    if isinstance(xid, str) and xid:
        attrs["dataschemaxid"] = parse_ref(xid, ctx.file)


def _looks_like_uri(value: Any) -> bool:
    """Old generations put either a URI or inline schema text (Protobuf, XSD) under `schema`."""
    return isinstance(value, str) and bool(value) and not any(c.isspace() for c in value) and \
        not value.startswith(("{", "[", "<"))


def normalize_propdef(spec: Any) -> dict[str, Any]:
    """`{type, value, required}` (also old `{"value", "required"}` wrappers); a plain value is required."""
    if isinstance(spec, dict) and (set(spec) & {"type", "value", "required"} or set(spec) <= PROPDEF_KEYS):
        out: dict[str, Any] = {}
        if "required" in spec:
            # absent stays absent so that a basemessage merge keeps the base's requirement
            out["required"] = spec["required"] is True
        if "type" in spec and isinstance(spec["type"], str):
            out["type"] = spec["type"]
        if "value" in spec:
            out["value"] = spec["value"]
        return out
    return {"required": True, "value": spec}


def _normalize_metadata(metadata: Any, origin: Origin, ctx: _Ctx) -> dict[str, dict[str, Any]]:
    if not isinstance(metadata, dict):
        ctx.error(origin, "envelopemetadata must be an object of attribute definitions", "shape")
        return {}
    attributes = metadata.get("attributes")
    # a wrapper maps attribute names to definitions (all objects); a property definition of an extension
    # attribute named `attributes` has scalar `type`/`required`/..., so only `{"value": {...}}` is ambiguous
    if isinstance(attributes, dict) and all(isinstance(v, dict) for v in attributes.values()) and (
            not attributes or set(attributes) != {"value"}):
        extra = {k: v for k, v in metadata.items() if k != "attributes"}
        metadata = {**extra, **attributes}
    return {name: normalize_propdef(spec) for name, spec in metadata.items()}


def normalize_options(options: dict[str, Any], protocol: str | None) -> dict[str, Any]:
    """Rename old option spellings; MQTT options once sat in a `properties` wrapper."""
    renamed = {OPTION_ALIASES.get(k, k): v for k, v in options.items()}
    if protocol and protocol.startswith("MQTT") and isinstance(renamed.get("properties"), dict):
        inner = renamed.pop("properties")
        for key, value in inner.items():
            key = OPTION_ALIASES.get(key, key)
            renamed.setdefault("topic_name" if key == "topic" else key, value)
    return renamed


def _normalize_schemagroup(gid: str, raw: Any, origin: Origin, ctx: _Ctx) -> Entity | None:
    if not isinstance(raw, dict):
        ctx.error(origin, f"schema group must be an object, found {type(raw).__name__}", "shape")
        return None
    group = Entity("schemagroup", gid, {"description": raw.get("description")}, origin)
    schemas = raw.get("schemas")
    if schemas is None:
        return group
    for sid, sraw in _as_map(schemas, origin.child("schemas"), ctx, "schemas").items():
        schema = normalize_schema(sid, sraw, origin.child("schemas", sid), ctx)
        if schema is not None:
            group.children[sid] = schema
    return group


def normalize_schema(sid: str, raw: Any, origin: Origin, ctx: _Ctx) -> Entity | None:
    if not isinstance(raw, dict):
        ctx.error(origin, f"schema must be an object, found {type(raw).__name__}", "shape")
        return None
    meta = raw.get("meta") if isinstance(raw.get("meta"), dict) else {}
    attrs = {"format": raw.get("format", raw.get("schemaformat")),
             "metadefaultversionid": meta.get("defaultversionid"),
             "defaultversionid": raw.get("defaultversionid")}
    schema = Entity("schema", sid, attrs, origin)
    versions = raw.get("versions")
    if versions is None:
        # a schema written without versions is its own single version
        if any(k in raw for k in ("schema", "schemaurl", "schemauri", "schemaUrl")):
            schema.children["1"] = _normalize_version("1", raw, origin, ctx, attrs["format"])
        return schema
    if isinstance(versions, list):
        versions = {str(v.get("versionid", v.get("id", i + 1))) if isinstance(v, dict) else str(i + 1): v
                    for i, v in enumerate(versions)}
    for vid, vraw in _as_map(versions, origin.child("versions"), ctx, "versions").items():
        if not isinstance(vraw, dict):
            ctx.error(origin.child("versions", vid), "schema version must be an object", "shape")
            continue
        schema.children[str(vid)] = _normalize_version(str(vid), vraw, origin.child("versions", vid), ctx,
                                                       attrs["format"])
    return schema


def _normalize_version(vid: str, raw: dict[str, Any], origin: Origin, ctx: _Ctx, fmt: Any) -> Entity:
    attrs: dict[str, Any] = {"format": raw.get("format", raw.get("schemaformat", fmt)),
                             "isdefault": raw.get("isdefault") is True}
    key, inline = _first(raw, ("schema", "schemaobject"))
    if key is not None:
        attrs["schema"] = inline
    elif "schemabase64" in raw:
        attrs["schemabase64"] = raw["schemabase64"]
    key, uri = _first(raw, ("schemauri", "schemaurl", "schemaUrl", "schemaURL", "schemaUri"))
    if key is not None and "schema" not in attrs and isinstance(uri, str):
        attrs["schemauri"] = parse_ref(uri, ctx.file)
    return Entity("version", vid, attrs, origin)


def _normalize_endpoint(eid: str, raw: Any, origin: Origin, ctx: _Ctx) -> Entity | None:
    if not isinstance(raw, dict):
        ctx.error(origin, f"endpoint must be an object, found {type(raw).__name__}", "shape")
        return None
    config = raw.get("config") if isinstance(raw.get("config"), dict) else {}
    protocol_raw = raw.get("protocol", config.get("protocol"))
    protocol = normalize_protocol(protocol_raw)
    if protocol_raw is not None and protocol is None:
        ctx.warn(origin.child("protocol"), f"unknown protocol {protocol_raw!r}", "protocol")
    options = raw.get("protocoloptions")
    options = dict(options) if isinstance(options, dict) else {}
    if isinstance(config.get("options"), dict):
        options = {**config["options"], **options}
    if isinstance(options.get("options"), dict):
        options = {**options.pop("options"), **options}
    uris = raw.get("endpoints", options.pop("endpoints", config.get("endpoints")))
    usage = raw.get("usage", [])
    usage = [usage] if isinstance(usage, str) else list(usage) if isinstance(usage, list) else []
    envelope_options = raw.get("envelopeoptions") if isinstance(raw.get("envelopeoptions"), dict) else {}
    attrs: dict[str, Any] = {
        "protocol": protocol, "protocoloptions": normalize_options(options, protocol),
        "endpoints": [u.get("uri") if isinstance(u, dict) else u for u in uris] if isinstance(uris, list) else [],
        "usage": [str(u).lower() for u in usage],
        "envelope": normalize_envelope(raw.get("envelope")),
        "envelopemode": str(envelope_options.get("mode")).lower() if envelope_options.get("mode") else None,
        "labels": raw.get("labels") if isinstance(raw.get("labels"), dict) else {},
        "description": raw.get("description"),
    }
    refs = []
    key, groups = _first(raw, GROUP_KEYS)
    if key is not None:
        if not isinstance(groups, list):
            groups = list(groups) if isinstance(groups, dict) else [groups]
        for index, text in enumerate(groups):
            ref = parse_ref(text, ctx.file) if isinstance(text, str) else None
            if ref is None:
                ctx.error(origin.child(key, str(index)), f"message group reference {text!r} is not a reference",
                          "ref")
            else:
                refs.append((ref, origin.child(key, str(index))))
    attrs["messagegroups"] = refs
    will = _will_message(raw, origin, ctx)
    if will is not None:
        attrs["willmessage"] = will
    endpoint = Entity("endpoint", eid, attrs, origin)
    key, messages = _first(raw, MESSAGE_KEYS)
    if key is not None:
        defaults = {"envelope": raw.get("envelope"), "protocol": protocol_raw}
        for mid, mraw in _as_map(messages, origin.child(key), ctx, "messages").items():
            msg = normalize_message(eid, mid, mraw, origin.child(key, mid), ctx, group_attrs=defaults)
            if msg is not None:
                endpoint.children[mid] = msg
    return endpoint


def _will_message(raw: dict[str, Any], origin: Origin, ctx: _Ctx) -> tuple[Ref, Origin] | None:
    """MQTT `willmessage` (endpoint spec: the xid of a message definition), wherever the generation put it.

    Looked up in the order the options merge: `protocoloptions`, its `options`, legacy `config.options`.
    """
    for place in (("protocoloptions",), ("protocoloptions", "options"), ("config", "options")):
        holder: Any = raw
        for step in place:
            holder = holder.get(step) if isinstance(holder, dict) else None
        key, text = _first(holder, WILL_KEYS) if isinstance(holder, dict) else (None, None)
        if key is None:
            continue
        where = origin.child(*place, key)
        ref = parse_ref(text, ctx.file) if isinstance(text, str) else None
        if ref is None:
            ctx.error(where, f"{key} {text!r} is not a reference to a message definition", "ref")
            return None
        return ref, where
    return None
