"""The registry as an xRegistry entity tree, with an `epoch` and timestamps per entity kept across reloads
(and across restarts, through the state file of state.py).

The model has three Group types (endpoint, message and schema spec): `endpoints` and `messagegroups` hold
`messages` Resources (`maxversions` 1, no domain document: one Version, `1`), `schemagroups` hold `schemas`
Resources whose Versions carry the schema document (`hasdocument`, so HTTP `self` URLs end in `$details`).

Epochs follow the core spec (`epoch` attribute): an entity's epoch increases when the entity changes, and a
parent's when a member is added to or removed from one of its collections, never merely because a member
changed. So each entity is digested over its own attributes plus the ids of its collections' members; the
Resource's `meta` over its default Version and Version ids. A digest that differs from the last one seen for
that xid (or an entity that was absent and is back) gets the next epoch and the time of that reload.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gateway.loader.versions import order_version_ids


@dataclass(frozen=True, slots=True)
class ResourceType:
    plural: str
    singular: str
    hasdocument: bool
    maxversions: int


@dataclass(frozen=True, slots=True)
class GroupType:
    plural: str
    singular: str
    resources: tuple[ResourceType, ...]


MESSAGES = ResourceType("messages", "message", hasdocument=False, maxversions=1)
SCHEMAS = ResourceType("schemas", "schema", hasdocument=True, maxversions=0)
GROUP_TYPES = (GroupType("endpoints", "endpoint", (MESSAGES,)),
               GroupType("messagegroups", "messagegroup", (MESSAGES,)),
               GroupType("schemagroups", "schemagroup", (SCHEMAS,)))
GROUPS = {g.plural: g for g in GROUP_TYPES}
MESSAGE_VERSION = "1"  # messages have no version history: their one Version


@dataclass(frozen=True, slots=True)
class Stamp:
    digest: str
    epoch: int
    createdat: str
    modifiedat: str


@dataclass(slots=True)
class Node:
    """One entity. `kind`: registry, group, resource or version; collections map plural -> id -> Node."""

    kind: str
    id: str
    xid: str
    attrs: dict[str, Any]
    collections: dict[str, dict[str, Node]] = field(default_factory=dict)
    group: GroupType | None = None          # group nodes
    resource: ResourceType | None = None    # resource and version nodes
    default: str | None = None              # resource: the default Version's id
    sticky: bool = False                    # resource: the documents chose the default Version
    ancestor: str | None = None             # version: the Version before it (itself for the first)
    owner: str | None = None                # version: the Resource's id
    isdefault: bool = False                 # version: the Resource's default Version

    def default_version(self) -> Node | None:
        return self.collections.get("versions", {}).get(self.default or "")

    @property
    def meta_xid(self) -> str:
        return f"{self.xid}/meta"


def build_tree(document: dict[str, Any]) -> Node:
    """The entity tree of a registry document (`document.registry_document`)."""
    root = Node("registry", str(document.get("registryid", "")), "/", {})
    for gtype in GROUP_TYPES:
        members: dict[str, Node] = {}
        for gid, body in (document.get(gtype.plural) or {}).items():
            members[gid] = _group(gtype, gid, body)
        root.collections[gtype.plural] = members
    return root


def _group(gtype: GroupType, gid: str, body: dict[str, Any]) -> Node:
    skip = {f"{gtype.singular}id", *(r.plural for r in gtype.resources)}
    node = Node("group", gid, f"/{gtype.plural}/{gid}", {k: v for k, v in body.items() if k not in skip},
                group=gtype)
    for rtype in gtype.resources:
        node.collections[rtype.plural] = {rid: _resource(rtype, node.xid, rid, rbody)
                                          for rid, rbody in (body.get(rtype.plural) or {}).items()}
    return node


def _resource(rtype: ResourceType, parent: str, rid: str, body: dict[str, Any]) -> Node:
    xid = f"{parent}/{rtype.plural}/{rid}"
    node = Node("resource", rid, xid, {}, resource=rtype)
    if rtype.maxversions == 1 and "versions" not in body:
        attrs = {k: v for k, v in body.items() if k != f"{rtype.singular}id"}
        versions = {MESSAGE_VERSION: attrs}
        node.default = MESSAGE_VERSION
    else:
        versions = {vid: {k: v for k, v in vbody.items() if k not in (f"{rtype.singular}id", "versionid", "isdefault")}
                    for vid, vbody in (body.get("versions") or {}).items()}
        meta = body.get("meta") or {}
        node.default = meta.get("defaultversionid")
        node.sticky = bool(meta.get("defaultversionsticky"))
        if node.default not in versions:
            node.default = order_version_ids(list(versions))[-1] if versions else None
    ordered = order_version_ids(list(versions))
    node.collections["versions"] = {
        vid: Node("version", vid, f"{xid}/versions/{vid}", attrs, resource=rtype,
                  ancestor=ordered[ordered.index(vid) - 1] if ordered.index(vid) else vid, owner=rid,
                  isdefault=vid == node.default)
        for vid, attrs in versions.items()}
    return node


# -- epochs ------------------------------------------------------------------------------------------------------

def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _members(node: Node) -> dict[str, list[str]]:
    return {plural: sorted(members) for plural, members in node.collections.items()}


def _contents(node: Node) -> dict[str, str]:
    """xid -> digest of every stamped entity under `node` (Resources are stamped through `meta`)."""
    out: dict[str, str] = {}
    if node.kind == "resource":
        out[node.meta_xid] = _digest({"default": node.default, "sticky": node.sticky,
                                      "versions": sorted(node.collections.get("versions", {}))})
    elif node.kind == "version":
        out[node.xid] = _digest({"attrs": node.attrs, "ancestor": node.ancestor})
    else:
        out[node.xid] = _digest({"attrs": node.attrs, "members": _members(node)})
    for members in node.collections.values():
        for child in members.values():
            out.update(_contents(child))
    return out


def now_text() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class EpochBook:
    """Epochs and timestamps by xid, across reloads (forgotten entities are remembered, so a returning one
    gets a higher epoch than it ever had)."""

    def __init__(self, known: dict[str, Stamp] | None = None, present: set[str] | None = None) -> None:
        self._known: dict[str, Stamp] = dict(known or {})
        self._present: set[str] = set(present or ())

    @property
    def known(self) -> dict[str, Stamp]:
        return self._known

    @property
    def present(self) -> set[str]:
        return self._present

    def stamp(self, root: Node, when: str | None = None) -> dict[str, Stamp]:
        """Stamps for every entity of `root`; call once per loaded snapshot."""
        when = when or now_text()
        stamps: dict[str, Stamp] = {}
        for xid, digest in _contents(root).items():
            known = self._known.get(xid)
            if known is None:
                stamp = Stamp(digest, 1, when, when)
            elif xid not in self._present:
                stamp = Stamp(digest, known.epoch + 1, when, when)  # deleted, now created again
            elif known.digest != digest:
                stamp = Stamp(digest, known.epoch + 1, known.createdat, when)
            else:
                stamp = known
            stamps[xid] = stamp
        self._known.update(stamps)
        self._present = set(stamps)
        return stamps
