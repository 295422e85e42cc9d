"""Normalize every document generation of validation rule 1 into 1.0 attribute names.

This module handles the document level (which collections a document has,
split-file layouts, files that are not registry documents); messages,
schemas and endpoints are normalized in their own modules. The shape decides the generation, never the `specversion` label: collections
and attribute names of each generation are looked up by their aliases, and
each item is rewritten into the 1.0 vocabulary (`envelope`,
`envelopemetadata`, `protocol`, `protocoloptions`, `dataschemaformat`,
`dataschema`/`dataschemauri`, `basemessage`). References are made absolute
(`gateway.loader.refs`) so that they survive a `basemessage` merge.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from gateway.errors import Diagnostic
from gateway.loader.context import Ctx, as_map, first
from gateway.loader.endpoints import normalize_endpoint
from gateway.loader.messages import (
    GROUP_KEYS,
    MESSAGE_KEYS,
    MODEL_KEYS,
    SCHEMA_URI_KEYS,
    SCHEMAGROUP_KEYS,
    normalize_message,
)
from gateway.loader.names import normalize_envelope, normalize_protocol
from gateway.loader.schemas import normalize_schema, normalize_schemagroup, normalize_version
from gateway.model import Doc, Entity, Origin


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
    ctx = Ctx(file)
    root = Origin(file, "")
    if not isinstance(raw, dict):
        ctx.error(root, f"a registry document is a JSON object, found {type(raw).__name__}", "shape")
        return Doc(file, "unknown"), ctx.diagnostics
    kind = _foreign_kind(raw)
    if kind is not None:
        ctx.warn(root, f"{kind}, not a registry document: nothing is loaded from it", "not-registry")
        return Doc(file, "not a registry"), ctx.diagnostics
    doc = Doc(file, detect_generation(raw))
    key, groups = first(raw, GROUP_KEYS)
    if key is not None:
        for gid, graw in as_map(groups, root.child(key), ctx, "message groups").items():
            group = _normalize_group(gid, graw, root.child(key, gid), ctx)
            if group is not None:
                doc.messagegroups[gid] = group
    if isinstance(raw.get("definitions"), dict):
        _normalize_owned_definitions(raw["definitions"], doc, root.child("definitions"), ctx)
    key, sgroups = first(raw, SCHEMAGROUP_KEYS)
    if key is not None:
        for gid, graw in as_map(sgroups, root.child(key), ctx, "schema groups").items():
            sgroup = normalize_schemagroup(gid, graw, root.child(key, gid), ctx)
            if sgroup is not None:
                doc.schemagroups[gid] = sgroup
    if "endpoints" in raw:
        for eid, eraw in as_map(raw["endpoints"], root.child("endpoints"), ctx, "endpoints").items():
            endpoint = normalize_endpoint(eid, eraw, root.child("endpoints", eid), ctx)
            if endpoint is not None:
                doc.endpoints[eid] = endpoint
    _normalize_loose_resources(raw, doc, root, ctx)
    return doc, ctx.diagnostics


def _normalize_owned_definitions(definitions: dict[str, Any], doc: Doc, origin: Origin, ctx: Ctx) -> None:
    """Discovery documents list definitions at the top level; `ownergroup` (an id or a reference) places them."""
    for mid, mraw in definitions.items():
        owner = mraw.get("ownergroup") if isinstance(mraw, dict) else None
        if not isinstance(owner, str) or not owner.strip("#/"):
            ctx.error(origin.child(mid), "a top-level definition needs an `ownergroup` naming its group", "shape")
            continue
        gid = owner.rstrip("/").rsplit("/", 1)[-1]
        group = doc.messagegroups.get(gid)
        if group is None:
            group = doc.messagegroups[gid] = Entity("messagegroup", gid, {}, origin.child(mid, "ownergroup"))
        message = normalize_message(gid, mid, mraw, origin.child(mid), ctx, group_attrs=group.attrs)
        if message is not None:
            group.children.setdefault(mid, message)


def _normalize_loose_resources(raw: dict[str, Any], doc: Doc, root: Origin, ctx: Ctx) -> None:
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
                schema.children[tail[4]] = normalize_version(tail[4], vraw, vorigin, ctx, raw.get("format"))
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


def _normalize_group(gid: str, raw: Any, origin: Origin, ctx: Ctx) -> Entity | None:
    if not isinstance(raw, dict):
        ctx.error(origin, f"message group must be an object, found {type(raw).__name__}", "shape")
        return None
    attrs = {"envelope": normalize_envelope(raw.get("envelope", raw.get("format"))),
             "protocol": normalize_protocol(raw.get("protocol", raw.get("binding"))),
             "description": raw.get("description")}
    group = Entity("messagegroup", gid, attrs, origin)
    key, messages = first(raw, MESSAGE_KEYS)
    if key is not None:
        for mid, mraw in as_map(messages, origin.child(key), ctx, "messages").items():
            msg = normalize_message(gid, mid, mraw, origin.child(key, mid), ctx, group_attrs=attrs)
            if msg is not None:
                group.children[mid] = msg
    return group
