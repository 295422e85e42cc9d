"""Merge the documents' entities into one registry and deep-merge basemessage chains."""

from __future__ import annotations

from typing import Any

from gateway.errors import Diagnostic, Severity
from gateway.loader.refs import is_url
from gateway.model import Doc, Entity


def deep_merge(base: Any, overlay: Any) -> Any:
    """Objects merge key by key; anything else in the overlay replaces the base value (message spec)."""
    if isinstance(base, dict) and isinstance(overlay, dict):
        out = dict(base)
        for key, value in overlay.items():
            out[key] = deep_merge(base[key], value) if key in base else value
        return out
    return overlay


def _merge_children(into: Entity, extra: Entity, diagnostics: list[Diagnostic]) -> None:
    for cid, child in extra.children.items():
        existing = into.children.get(cid)
        if existing is None:
            into.children[cid] = child
        elif child.kind == "version" and _has_content(child) and not _has_content(existing):
            # split-file layouts: an index that only points at a version yields to the file that holds it
            into.children[cid] = child
        elif child.kind == "version" and not _has_content(child):
            continue
        elif child.kind in ("schema",):
            _merge_children(existing, child, diagnostics)
            for key, value in child.attrs.items():
                if existing.attrs.get(key) is None:
                    existing.attrs[key] = value
        elif existing.attrs != child.attrs or existing.children.keys() != child.children.keys():
            diagnostics.append(Diagnostic(
                Severity.WARNING, child.origin.file,
                f"{child.kind} {cid!r} is also defined in {existing.origin.file}#{existing.origin.pointer}; "
                "the first definition is kept", pointer=child.origin.pointer, code="duplicate"))


def _has_content(version: Entity) -> bool:
    return "schema" in version.attrs or "schemabase64" in version.attrs


def merge_documents(docs: list[Doc]) -> tuple[dict[str, dict[str, Entity]], list[Diagnostic]]:
    """One registry from many documents: groups with the same id pool their members; the first endpoint wins."""
    diagnostics: list[Diagnostic] = []
    merged: dict[str, dict[str, Entity]] = {"endpoints": {}, "messagegroups": {}, "schemagroups": {}}
    for doc in docs:
        for collection, pooled in merged.items():
            for eid, entity in doc.collection(collection).items():
                existing = pooled.get(eid)
                if existing is None:
                    pooled[eid] = Entity(entity.kind, entity.id, dict(entity.attrs), entity.origin,
                                         dict(entity.children))
                elif collection == "endpoints":
                    # a fetched registry (gateway.yaml `sources:`) yields to local files and earlier sources:
                    # an operator's override, not a mistake
                    diagnostics.append(Diagnostic(
                        Severity.WARNING if is_url(entity.origin.file) else Severity.ERROR, entity.origin.file,
                        f"endpoint {eid!r} is already defined in {existing.origin.file}; this one is left out",
                        pointer=entity.origin.pointer, code="duplicate"))
                else:
                    _merge_children(existing, entity, diagnostics)
    return merged, diagnostics
