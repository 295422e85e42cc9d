"""API-view serialization of entities and collections (core spec "Registry Entity", "Group Entity",
"Resource Entity", "Meta Entity", "Version Entity", "Registry Collections"), with `inline` and `filter`.

A request targets an entity or a collection; `at` is the abstract path (collection names) from the target
down to the entity being written, which is what `inline` paths and filter expressions are relative to.

Filtering (HTTP binding `?filter`): each filter selects the entities at its deepest level whose every
expression holds on the entity or ancestor at that expression's level, plus the parents leading to them and
everything below them; the filters' selections are combined. Collection counts count what was selected, and
collection URLs carry the part of the filters that still applies below (`excludeall` for an empty one).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from gateway.registry_api.query import EXCLUDE_ALL, Filter, Inline
from gateway.registry_api.registry_model import MODEL
from gateway.registry_api.tree import Node, Stamp

SPECVERSION = "1.0-rc4"
DETAILS = "$details"
def capabilities(writable: bool) -> dict[str, Any]:
    """The capabilities map (core spec "Registry Capabilities"): with writes on, the entities are mutable
    (`available.entities.mutable`, and `entities` in the `mutable` list); capabilities and the model never are."""
    return {
        "available": {"capabilities": {"mutable": False}, "entities": {"mutable": writable},
                      "model": {"mutable": False}},
        "flags": ["filter", "inline"],
        "formats": [],
        "ignores": [],
        "mutable": ["entities"] if writable else [],
        "pagination": False,
        "shortself": False,
        "specversions": [SPECVERSION],
    }


def _times(attrs: dict[str, Any], stamp: Stamp) -> dict[str, Any]:
    """`createdat`/`modifiedat`: what the document declared, else when xgate first saw (last saw change)."""
    return {"createdat": attrs.get("createdat") or stamp.createdat,
            "modifiedat": attrs.get("modifiedat") or stamp.modifiedat}


def _inlined_document(singular: str, attrs: dict[str, Any]) -> dict[str, Any]:
    """The Version's document inlined (core spec "<RESOURCE> Attribute"): a JSON value as `<RESOURCE>`, text
    (Protobuf, XSD, Avro IDL...) as `<RESOURCE>base64`, since its bytes are not JSON."""
    if singular in attrs:
        content = attrs[singular]
        if isinstance(content, str):
            return {f"{singular}base64": base64.b64encode(content.encode("utf-8")).decode("ascii")}
        return {singular: content}
    if f"{singular}base64" in attrs:
        return {f"{singular}base64": attrs[f"{singular}base64"]}
    return {}


@dataclass
class Chain:
    """The entities from the request's target down to one entity, and the collections between them."""

    nodes: tuple[Node, ...]
    colls: tuple[str, ...] = ()

    def down(self, plural: str, child: Node) -> Chain:
        return Chain((*self.nodes, child), (*self.colls, plural))


@dataclass
class Renderer:
    base: str                       # absolute URL of the registry root, no trailing slash
    stamps: dict[str, Stamp]
    inline: Inline
    filters: list[Filter] = field(default_factory=list)
    registry_id: str = "xgate"
    # (plural, group id) -> the write API edits that group; None: writes are off (served.py `Editable`)
    editable: Callable[[str, str], bool] | None = None
    _views: dict[int, dict[str, Any]] = field(default_factory=dict)
    _admitted: dict[tuple[int, int], bool] = field(default_factory=dict)

    # -- urls -------------------------------------------------------------------------------------------------------
    def url(self, xid: str, *, details: bool = False) -> str:
        return self.base + quote(xid, safe="/:@") + (DETAILS if details else "")

    def self_url(self, node: Node) -> str:
        if node.kind == "registry":
            return self.base + "/"
        return self.url(node.xid, details=node.kind in ("resource", "version") and bool(
            node.resource and node.resource.hasdocument))

    # -- filters ------------------------------------------------------------------------------------------------------
    def view(self, node: Node) -> dict[str, Any]:
        """The entity's own attributes as served (what filter expressions examine), `meta` included."""
        key = id(node)
        if key not in self._views:
            plain = Renderer(self.base, self.stamps, Inline(frozenset({("meta",)})), registry_id=self.registry_id,
                             editable=self.editable)
            self._views[key] = plain.entity(node, ())
        return self._views[key]

    def _target_holds(self, flt: Filter, target: Node) -> bool:
        return all(e.holds(self.view(target)) for e in flt.expressions if not e.colls)

    def target_admitted(self, node: Node) -> bool:
        """The target itself: some filter's expressions without a path hold on it (deeper ones never 404 it)."""
        return not self.filters or any(self._target_holds(f, node) for f in self.filters)

    def _admitted_by(self, index: int, flt: Filter, chain: Chain) -> bool:
        deepest = flt.deepest
        if deepest is None:
            return False
        depth = len(chain.colls)
        reach = min(depth, len(deepest))
        if chain.colls[:reach] != deepest[:reach]:
            return False
        key = (index, id(chain.nodes[-1]))
        if key in self._admitted:
            return self._admitted[key]
        result = all(e.holds(self.view(chain.nodes[len(e.colls)])) for e in flt.expressions if len(e.colls) <= depth)
        if result and depth < len(deepest):
            plural = deepest[depth]
            result = any(self._admitted_by(index, flt, chain.down(plural, child))
                         for child in chain.nodes[-1].collections.get(plural, {}).values())
        self._admitted[key] = result
        return result

    def members(self, owner: Chain, plural: str) -> dict[str, Node]:
        """The collection's entities the filters select, sorted by id (the spec's recommended order)."""
        everything = owner.nodes[-1].collections.get(plural, {})
        if not self.filters:
            return dict(sorted(everything.items()))
        return {mid: member for mid, member in sorted(everything.items())
                if any(self._admitted_by(i, f, owner.down(plural, member)) for i, f in enumerate(self.filters))}

    def collection_url(self, owner: Chain, plural: str, count: int) -> str:
        url = self.url(owner.nodes[-1].xid.rstrip("/") + "/" + plural)
        if not self.filters:
            return url
        if count == 0:
            return f"{url}?filter={EXCLUDE_ALL}"
        depth = len(owner.colls)
        below: list[str] = []
        for index, flt in enumerate(self.filters):
            if flt.deepest is None:
                continue
            admitted = self._target_holds(flt, owner.nodes[0]) if not owner.colls else \
                self._admitted_by(index, flt, owner)
            if not admitted:
                continue
            if len(flt.deepest) <= depth:
                return url  # everything below an entity this filter selected is selected
            if flt.deepest[depth] == plural:
                below.append(",".join(e.relative(depth + 1) for e in flt.expressions if len(e.colls) > depth))
        return url + "?" + "&".join(f"filter={quote(text, safe='=,.*[]')}" for text in below) if below else url

    # -- entities ------------------------------------------------------------------------------------------------------
    def entity(self, node: Node, at: tuple[str, ...], chain: Chain | None = None) -> dict[str, Any]:
        chain = chain or Chain((node,))
        if node.kind == "registry":
            return self._registry(node, at, chain)
        if node.kind == "group":
            return self._group(node, at, chain)
        if node.kind == "resource":
            return self._resource(node, at, chain)
        return self._version(node, at)

    def _stamp(self, xid: str) -> Stamp:
        return self.stamps.get(xid) or Stamp("", 1, "1970-01-01T00:00:00.000Z", "1970-01-01T00:00:00.000Z")

    def _collections(self, out: dict[str, Any], node: Node, at: tuple[str, ...], chain: Chain) -> None:
        for plural in node.collections:
            members = self.members(chain, plural)
            out[f"{plural}url"] = self.collection_url(chain, plural, len(members))
            out[f"{plural}count"] = len(members)
            if self.inline.wants(at, plural):
                out[plural] = {mid: self.entity(member, (*at, plural), chain.down(plural, member))
                               for mid, member in members.items()}

    def _registry(self, node: Node, at: tuple[str, ...], chain: Chain) -> dict[str, Any]:
        stamp = self._stamp(node.xid)
        out: dict[str, Any] = {"specversion": SPECVERSION, "registryid": self.registry_id, "self": self.self_url(node),
                               "xid": "/", "epoch": stamp.epoch, "createdat": stamp.createdat,
                               "modifiedat": stamp.modifiedat}
        if self.inline.wants(at, "capabilities"):
            out["capabilities"] = capabilities(self.editable is not None)
        if self.inline.wants(at, "model"):
            out["model"] = MODEL
        self._collections(out, node, at, chain)
        return out

    def _group(self, node: Node, at: tuple[str, ...], chain: Chain) -> dict[str, Any]:
        assert node.group is not None
        stamp = self._stamp(node.xid)
        out: dict[str, Any] = {f"{node.group.singular}id": node.id, "self": self.self_url(node), "xid": node.xid,
                               "epoch": stamp.epoch, **node.attrs, **_times(node.attrs, stamp)}
        self._collections(out, node, at, chain)
        return out

    def _version_attrs(self, version: Node, at: tuple[str, ...], out: dict[str, Any]) -> None:
        """The Version's attributes, with its document (`schema`/`schemabase64`) only when inlined."""
        resource = version.resource
        assert resource is not None
        documents = (resource.singular, f"{resource.singular}base64") if resource.hasdocument else ()
        stamp = self._stamp(version.xid)
        out["epoch"] = stamp.epoch
        out["isdefault"] = version.isdefault
        out.update({k: v for k, v in version.attrs.items() if k not in documents})
        out.update(**_times(version.attrs, stamp), ancestorid=version.ancestor)
        if resource.hasdocument and self.inline.wants(at, resource.singular):
            out.update(_inlined_document(resource.singular, version.attrs))

    def _resource(self, node: Node, at: tuple[str, ...], chain: Chain) -> dict[str, Any]:
        resource = node.resource
        assert resource is not None
        out: dict[str, Any] = {f"{resource.singular}id": node.id, "versionid": node.default,
                               "self": self.self_url(node), "xid": node.xid}
        default = node.default_version()
        if default is not None:
            self._version_attrs(default, at, out)
        out["metaurl"] = self.url(node.meta_xid)
        if self.inline.wants(at, "meta"):
            out["meta"] = self.meta(node)
        self._collections(out, node, at, chain)
        return out

    def _version(self, node: Node, at: tuple[str, ...]) -> dict[str, Any]:
        resource = node.resource
        assert resource is not None
        out: dict[str, Any] = {f"{resource.singular}id": node.owner, "versionid": node.id,
                               "self": self.self_url(node), "xid": node.xid}
        self._version_attrs(node, at, out)
        return out

    def _editable(self, xid: str) -> bool:
        """Whether a write through this API may change the entity at `xid` (its group is the API's own)."""
        parts = xid.strip("/").split("/")
        return self.editable is not None and len(parts) >= 2 and self.editable(parts[0], parts[1])

    def meta(self, node: Node) -> dict[str, Any]:
        resource = node.resource
        assert resource is not None
        stamp = self._stamp(node.meta_xid)
        return {f"{resource.singular}id": node.id, "self": self.url(node.meta_xid), "xid": node.meta_xid,
                "epoch": stamp.epoch, "createdat": stamp.createdat, "modifiedat": stamp.modifiedat,
                "readonly": not self._editable(node.xid), "defaultversionid": node.default,
                "defaultversionurl": self.url(f"{node.xid}/versions/{node.default}",
                                              details=resource.hasdocument),
                "defaultversionsticky": node.sticky}
