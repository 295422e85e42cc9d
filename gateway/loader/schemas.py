"""Normalize schema groups, schemas and versions of every generation."""

from __future__ import annotations

from typing import Any

from gateway.loader.context import Ctx, as_map, first
from gateway.loader.refs import parse_ref
from gateway.model import Entity, Origin


def normalize_schemagroup(gid: str, raw: Any, origin: Origin, ctx: Ctx) -> Entity | None:
    if not isinstance(raw, dict):
        ctx.error(origin, f"schema group must be an object, found {type(raw).__name__}", "shape")
        return None
    group = Entity("schemagroup", gid, {"description": raw.get("description")}, origin)
    schemas = raw.get("schemas")
    if schemas is None:
        return group
    for sid, sraw in as_map(schemas, origin.child("schemas"), ctx, "schemas").items():
        schema = normalize_schema(sid, sraw, origin.child("schemas", sid), ctx)
        if schema is not None:
            group.children[sid] = schema
    return group


def normalize_schema(sid: str, raw: Any, origin: Origin, ctx: Ctx) -> Entity | None:
    if not isinstance(raw, dict):
        ctx.error(origin, f"schema must be an object, found {type(raw).__name__}", "shape")
        return None
    meta: dict[str, Any] = raw["meta"] if isinstance(raw.get("meta"), dict) else {}
    attrs = {"format": raw.get("format", raw.get("schemaformat")),
             "metadefaultversionid": meta.get("defaultversionid"),
             "defaultversionid": raw.get("defaultversionid")}
    schema = Entity("schema", sid, attrs, origin)
    versions = raw.get("versions")
    if versions is None:
        # a schema written without versions is its own single version
        if any(k in raw for k in ("schema", "schemaurl", "schemauri", "schemaUrl")):
            schema.children["1"] = normalize_version("1", raw, origin, ctx, attrs["format"])
        return schema
    if isinstance(versions, list):
        versions = {str(v.get("versionid", v.get("id", i + 1))) if isinstance(v, dict) else str(i + 1): v
                    for i, v in enumerate(versions)}
    for vid, vraw in as_map(versions, origin.child("versions"), ctx, "versions").items():
        if not isinstance(vraw, dict):
            ctx.error(origin.child("versions", vid), "schema version must be an object", "shape")
            continue
        schema.children[str(vid)] = normalize_version(str(vid), vraw, origin.child("versions", vid), ctx,
                                                       attrs["format"])
    return schema


def normalize_version(vid: str, raw: dict[str, Any], origin: Origin, ctx: Ctx, fmt: Any) -> Entity:
    attrs: dict[str, Any] = {"format": raw.get("format", raw.get("schemaformat", fmt)),
                             "isdefault": raw.get("isdefault") is True}
    key, inline = first(raw, ("schema", "schemaobject"))
    if key is not None:
        attrs["schema"] = inline
    elif "schemabase64" in raw:
        attrs["schemabase64"] = raw["schemabase64"]
    key, uri = first(raw, ("schemauri", "schemaurl", "schemaUrl", "schemaURL", "schemaUri"))
    if key is not None and "schema" not in attrs and isinstance(uri, str):
        attrs["schemauri"] = parse_ref(uri, ctx.file, origin.child(key))
    return Entity("version", vid, attrs, origin)
