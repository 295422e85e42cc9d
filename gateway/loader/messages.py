"""Normalize message definitions of every generation into 1.0 attribute names.

`format`/`envelope`, `metadata`/`envelopemetadata` (flat or in an
`attributes` wrapper), `binding`/`protocol`, the schema link spellings, the
Message Catalog's `versions[].definition`, and property definitions written
as plain values or `{"value", "required"}` wrappers all become one shape.
References are made absolute so that they survive a `basemessage` merge.
"""

from __future__ import annotations

from typing import Any

from gateway.loader.context import Ctx, first
from gateway.loader.names import normalize_envelope, normalize_protocol
from gateway.loader.refs import parse_ref
from gateway.model import Entity, Origin

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


def normalize_message(gid: str, mid: str, raw: Any, origin: Origin, ctx: Ctx,
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
    metadata_key, metadata = first(raw, ("envelopemetadata", "metadata"))
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
    key, base = first(raw, BASEMESSAGE_KEYS)
    if key is not None and base not in (None, ""):
        ref = parse_ref(base, ctx.file, origin.child(key))
        if ref is None:
            ctx.error(origin.child(key), f"{key} {base!r} is not a reference", "ref")
        else:
            attrs["basemessage"] = ref
    if "description" in raw:
        attrs["description"] = raw["description"]
    return Entity("message", mid, attrs, origin)


def _normalize_schema_link(raw: dict[str, Any], attrs: dict[str, Any], origin: Origin, ctx: Ctx) -> None:
    _, fmt = first(raw, ("dataschemaformat", "schemaformat", "schemaFormat", "dataSchemaFormat"))
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
    key, uri = first(raw, SCHEMA_URI_KEYS)
    if key is None and _looks_like_uri(raw.get("schema")):
        key, uri = "schema", raw["schema"]
    if key is not None and uri not in (None, ""):
        ref = parse_ref(uri, ctx.file, origin.child(key))
        if ref is None:
            ctx.error(origin.child(key), f"{key} {uri!r} is not a reference", "ref")
        else:
            attrs["dataschemauri"] = ref
    xid = raw.get("dataschemaxid")
    if isinstance(xid, str) and xid:
        attrs["dataschemaxid"] = parse_ref(xid, ctx.file, origin.child("dataschemaxid"))


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


def _normalize_metadata(metadata: Any, origin: Origin, ctx: Ctx) -> dict[str, dict[str, Any]]:
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
