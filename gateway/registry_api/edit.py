"""One write request applied to the groups the API stores (store.py): pure, no I/O, values in and out.

The request's semantics are the core spec's HTTP binding (core/http.md "Creating or Updating Entities" and
each entity's PUT/PATCH/POST/DELETE section; core/spec.md "Deleting Entities", "epoch Attribute",
"Updating Nested Registry Collections"). The outcome is the new body of every group the request touches
(None: its file goes), and the xids to answer with; `apply` raises ApiError for a refusal, before anything
is written. Whether a group may be written at all (its origin) is the caller's question (write.py).

Stored shapes (what a 1.0 document declares): a group `{"<SINGULAR>id", attributes, "<RESOURCES>": {...}}`;
a message (`maxversions` 1) its one Version's attributes; a schema `{"schemaid", "meta": {"defaultversionid",
"defaultversionsticky"}, "versions": {"<VID>": {attributes, "schema" | "schemabase64" | "schemaurl"}}}`.
Server attributes a client sends back from a GET (`self`, `xid`, `epoch`, `*url`, `*count`...) are ignored;
`createdat` and `modifiedat` follow the spec's attributes: a request's values are used (null: now), and
otherwise `createdat` is kept and `modifiedat` set to now on every update, so that an update always moves
the entity's epoch (the spec's "touch") even when no attribute changed; adding or removing a Resource
updates its group's `modifiedat`.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from gateway.registry_api.attribute_types import check_attributes
from gateway.registry_api.errors import ApiError
from gateway.registry_api.registry_model import DEFINED_BY, MODEL
from gateway.registry_api.tree import GROUPS, MESSAGE_VERSION, GroupType, Node, ResourceType, Stamp

ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.~:@-]{0,127}")
COLLECTIONS = ("endpoints", "messagegroups", "schemagroups", "messages", "schemas", "versions")
READ_ONLY = frozenset({"self", "shortself", "xid", "epoch", "createdat", "modifiedat", "metaurl", "isdefault",
                       "ancestorid", "readonly", "specversion", "registryid",
                       *(f"{c}{suffix}" for c in COLLECTIONS for suffix in ("url", "count"))})
# registry attributes a whole document may carry back from an export: never the client's to set here
REGISTRY_READ_ONLY = READ_ONLY | {"capabilities", "model", "$schema"}
# server attributes are ignored, not checked: a client may send back what a GET showed
UNCHECKED = READ_ONLY - {"createdat", "modifiedat"}
# `compatibility` is not kept (docs/operations.md: not supported), so its values are not judged either
META_UNCHECKED = UNCHECKED | {"compatibility"}
GroupKey = tuple[str, str]


@dataclass
class Plan:
    """What a request changes: the new body of each group it touches (None: deleted), and what to answer."""

    groups: dict[GroupKey, dict[str, Any] | None] = field(default_factory=dict)
    answer: list[tuple[str, str]] = field(default_factory=list)   # (map key or "", xid) of processed entities
    created: bool = False                                        # the single target entity is new (201)
    new_version: str | None = None                               # xid of a Version this request created
    now: str = ""                                                # the request's one timestamp (createdat...)


class Editor:
    """Applies requests against the served tree (for what exists and its epochs) and the stored bodies."""

    def __init__(self, root: Node, stamps: dict[str, Stamp], stored: Callable[[str, str], dict[str, Any] | None],
                 now: str) -> None:
        self.root, self.stamps, self._stored, self.now = root, stamps, stored, now
        self.plan = Plan(now=now)
        # per (parent xid, collection): the ids there, as written and folded (check_unique)
        self._ids: dict[tuple[str, str], tuple[set[str], dict[str, str]]] = {}

    # -- the groups a request touches ----------------------------------------------------------------------------
    def group_body(self, plural: str, gid: str) -> dict[str, Any] | None:
        key = (plural, gid)
        if key not in self.plan.groups:
            body = self._stored(plural, gid)
            self.plan.groups[key] = copy.deepcopy(body) if body is not None else None
        return self.plan.groups[key]

    def node(self, xid: str) -> Node | None:
        parts = xid.strip("/").split("/")
        node: Node | None = self.root
        for plural, eid in zip(parts[::2], parts[1::2]):
            node = node.collections.get(plural, {}).get(eid) if node is not None else None
        return node

    def epoch(self, xid: str) -> int | None:
        stamp = self.stamps.get(xid)
        return stamp.epoch if stamp is not None else None

    def check_epoch(self, body: dict[str, Any], xid: str, current: int | None) -> None:
        """spec.md "epoch Attribute": a non-null epoch on an update must equal the entity's (ignored on create)."""
        offered = body.get("epoch")
        if offered is None or current is None:
            return
        if not isinstance(offered, int) or isinstance(offered, bool) or offered != current:
            raise ApiError(400, "mismatched_epoch", f"The specified epoch value ({offered}) for \"{xid}\" does not "
                           f"match its current value ({current}).", xid,
                           {"bad_epoch": str(offered), "epoch": str(current)})

    # -- attributes ----------------------------------------------------------------------------------------------
    def _clean(self, body: dict[str, Any], skip: set[str]) -> dict[str, Any]:
        out = {}
        for key, value in body.items():
            if key in READ_ONLY or key in skip:
                continue
            out[key] = value
        return out

    def _merge(self, existing: dict[str, Any] | None, body: dict[str, Any], skip: set[str],
               patch: bool, model: dict[str, Any], xid: str) -> dict[str, Any]:
        """PUT: the body is the entity; PATCH: the body's attributes replace the existing ones, null deletes.
        Each value is checked against `model`, the entity's attributes (registry_model.py)."""
        check_attributes(body, model, xid, skip | UNCHECKED)
        incoming = self._clean(body, skip)
        if patch and existing is not None:
            out = {k: v for k, v in existing.items() if k not in skip}
            for key, value in incoming.items():
                if value is None:
                    out.pop(key, None)
                else:
                    out[key] = value
        else:
            out = {k: v for k, v in incoming.items() if v is not None}
        out["createdat"], out["modifiedat"] = self._times(existing or {}, body)
        return out

    def _times(self, existing: dict[str, Any], body: dict[str, Any]) -> tuple[str, str]:
        """core/spec.md `createdat` and `modifiedat` Attributes: a value in the request overrides (null: now);
        `createdat` absent keeps the existing one; `modifiedat` absent, null or unchanged is now. (Their values
        are timestamps: `_merge` checked them.)"""
        if "createdat" in body:
            created = body["createdat"] if body["createdat"] is not None else self.now
        else:
            created = existing.get("createdat") or self.now
        asked = body.get("modifiedat")
        modified = asked if asked is not None and asked != existing.get("modifiedat") else self.now
        return created, modified

    @staticmethod
    def _object(value: Any, xid: str, what: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise ApiError(400, "bad_request", f"{what} for {xid} must be a JSON object, found "
                           f"{type(value).__name__}.", xid, {"error_detail": f"{what} must be a JSON object"})
        return value

    @staticmethod
    def check_id(value: str, xid: str) -> None:
        if not ID.fullmatch(value):
            raise ApiError(400, "malformed_id", f'For "{xid}", the specified ID value ({value}) is malformed: an id is '
                           "1-128 characters of letters, digits, '-', '.', '_', '~', ':' or '@', starting with a "
                           "letter, digit or '_'.", xid, {"id": value, "error_detail": "see the core spec's id rules"})

    def check_unique(self, parent: str, plural: str, singular: str, new: str, xid: str,
                     stored: Iterable[str] = ()) -> None:
        """core/spec.md `<SINGULAR>id`: "unique (case-insensitively) within the scope of the entity's parent".
        A new id that differs from a sibling's (served, `stored` in the parent's file, or written earlier in
        this request) only in case is refused as `mismatched_id`, naming the sibling's spelling. The siblings
        are indexed once per parent and request: a whole document of thousands of groups is checked in one
        pass, not each group against all the others."""
        known = self._ids.get((parent, plural))
        if known is None:
            node = self.node(parent) if parent else self.root
            served = node.collections.get(plural, {}) if node is not None else {}
            exact = {*served, *stored}
            known = self._ids[(parent, plural)] = (exact, {eid.lower(): eid for eid in exact})
        exact, folded = known
        if new in exact:
            return
        other = folded.setdefault(new.lower(), new)  # ids are ASCII (check_id)
        if other != new:
            raise ApiError(400, "mismatched_id", f'The specified "{singular}id" value ({new}) for "{xid}" needs '
                           f'to be "{other}": ids are unique regardless of case.', xid,
                           {"singular": singular, "invalid_id": new, "expected_id": other})
        exact.add(new)

    @staticmethod
    def check_same_id(body: dict[str, Any], name: str, expected: str, xid: str) -> None:
        offered = body.get(name)
        if offered is not None and offered != expected:
            raise ApiError(400, "mismatched_id", f'The specified "{name}" value ({offered}) for "{xid}" needs to be '
                           f'"{expected}".', xid, {"singular": name[:-2], "invalid_id": str(offered),
                                                   "expected_id": expected})

    # -- groups --------------------------------------------------------------------------------------------------
    def put_group(self, gtype: GroupType, gid: str, body: Any, patch: bool, key: str = "") -> None:
        xid = f"/{gtype.plural}/{gid}"
        self.check_id(gid, xid)
        self.check_unique("", gtype.plural, gtype.singular, gid, xid)
        body = self._object(body, xid, "the group")
        self.check_same_id(body, f"{gtype.singular}id", gid, xid)
        existing = self.group_body(gtype.plural, gid)
        self.check_epoch(body, xid, self.epoch(xid) if existing is not None else None)
        skip = {f"{gtype.singular}id", *(r.plural for r in gtype.resources)}
        new = {f"{gtype.singular}id": gid,
               **self._merge(existing, body, skip, patch, MODEL["groups"][gtype.plural]["attributes"], xid)}
        for rtype in gtype.resources:
            new[rtype.plural] = (existing or {}).get(rtype.plural) or {}
        self.plan.groups[(gtype.plural, gid)] = new
        for rtype in gtype.resources:  # nested collections: create or update, never delete (spec.md)
            members = body.get(rtype.plural)
            if members is not None:
                for rid, rbody in self._object(members, xid, rtype.plural).items():
                    self.put_resource(gtype, gid, rtype, rid, rbody, patch, record=False)
        self.plan.answer.append((key, xid))

    def delete_group(self, gtype: GroupType, gid: str, epoch: Any) -> None:
        xid = f"/{gtype.plural}/{gid}"
        self.check_epoch({"epoch": epoch}, xid, self.epoch(xid))
        self.plan.groups[(gtype.plural, gid)] = None

    def _group_for_resources(self, gtype: GroupType, gid: str) -> dict[str, Any]:
        """The group a Resource is written into, created (with no attributes) when absent (spec.md "Implicit
        Creation of Parent Entities")."""
        body = self.group_body(gtype.plural, gid)
        if body is None:
            self.check_id(gid, f"/{gtype.plural}/{gid}")
            self.check_unique("", gtype.plural, gtype.singular, gid, f"/{gtype.plural}/{gid}")
            body = {f"{gtype.singular}id": gid, "createdat": self.now, "modifiedat": self.now,
                    **{r.plural: {} for r in gtype.resources}}
            self.plan.groups[(gtype.plural, gid)] = body
        return body

    # -- resources -----------------------------------------------------------------------------------------------
    def put_resource(self, gtype: GroupType, gid: str, rtype: ResourceType, rid: str, body: Any, patch: bool,
                     key: str = "", record: bool = True) -> None:
        xid = f"/{gtype.plural}/{gid}/{rtype.plural}/{rid}"
        self.check_id(rid, xid)
        body = self._object(body, xid, "the resource")
        self.check_same_id(body, f"{rtype.singular}id", rid, xid)
        group = self._group_for_resources(gtype, gid)
        resources = group.setdefault(rtype.plural, {})
        self.check_unique(f"/{gtype.plural}/{gid}", rtype.plural, rtype.singular, rid, xid, resources)
        node = self.node(xid)
        if node is None and rid not in resources:
            # core/spec.md `modifiedat`: "adding or removing an entity from a nested xRegistry collection MUST
            # update the modifiedat value of the parent entity"
            group["modifiedat"] = self.now
        if rtype.maxversions == 1:  # a message: its one Version is the Resource
            self.check_same_id(body, "versionid", MESSAGE_VERSION, xid)
            self.check_epoch(body, xid, self.epoch(f"{xid}/versions/{MESSAGE_VERSION}") if node else None)
            skip = {f"{rtype.singular}id", "versionid", "meta", "versions"}
            model = _resource_model(rtype, "attributes")
            merged = self._merge(resources.get(rid), body, skip, patch, model, xid)
            resources[rid] = {f"{rtype.singular}id": rid, **merged}
        else:
            meta = body.get("meta")
            if isinstance(meta, dict):
                self.check_epoch(meta, f"{xid}/meta", self.epoch(f"{xid}/meta") if node else None)
                check_attributes(meta, _resource_model(rtype, "metaattributes"), f"{xid}/meta", META_UNCHECKED)
            stored = resources.setdefault(rid, {f"{rtype.singular}id": rid, "versions": {}})
            vid = body.get("versionid") or (node.default if node is not None else None) or \
                stored.get("meta", {}).get("defaultversionid") or "1"
            self._put_version(xid, rtype, stored, str(vid), body, patch, check_epoch=True)
            versions = body.get("versions")
            if versions is not None:
                for nested, vbody in self._object(versions, xid, "versions").items():
                    self._put_version(xid, rtype, stored, nested, vbody, patch, check_epoch=True)
            if isinstance(meta, dict):
                self._set_meta(xid, stored, meta, patch=True)
        if node is None and record:
            self.plan.created = True
        if record or key:
            self.plan.answer.append((key, xid))

    def delete_resource(self, gtype: GroupType, gid: str, rtype: ResourceType, rid: str, epoch: Any,
                        served: bool = False) -> None:
        """`served`: the epoch came with `?epoch=` on the Resource's URL, so either the `meta` epoch (the spec's)
        or the one a GET of that URL shows (its default Version's, what xrcg sends back) is the current one."""
        xid = f"/{gtype.plural}/{gid}/{rtype.plural}/{rid}"
        node = self.node(xid)
        default = node.default_version() if node is not None else None
        if not (served and default is not None and epoch == self.epoch(default.xid)):
            self.check_epoch({"epoch": epoch}, xid, self.epoch(f"{xid}/meta"))
        group = self.group_body(gtype.plural, gid)
        if group is not None:
            group.get(rtype.plural, {}).pop(rid, None)
            group["modifiedat"] = self.now

    # -- versions ------------------------------------------------------------------------------------------------
    def _put_version(self, rxid: str, rtype: ResourceType, stored: dict[str, Any], vid: str, body: Any,
                     patch: bool, check_epoch: bool) -> None:
        xid = f"{rxid}/versions/{vid}"
        self.check_id(vid, xid)
        body = self._object(body, xid, "the version")
        self.check_same_id(body, "versionid", vid, xid)
        versions = stored.setdefault("versions", {})
        self.check_unique(rxid, "versions", "version", vid, xid, versions)
        existing = versions.get(vid)
        if check_epoch:
            self.check_epoch(body, xid, self.epoch(xid) if existing is not None else None)
        skip = {f"{rtype.singular}id", "versionid", "meta", "versions"}
        model = _resource_model(rtype, "attributes")
        versions[vid] = {"versionid": vid, **self._merge(existing, body, skip, patch, model, xid)}
        if existing is None:
            self.plan.new_version = self.plan.new_version or xid
        # not sticky: the default is the newest Version, which the loader finds itself (validation rule 8)

    def put_version(self, gtype: GroupType, gid: str, rtype: ResourceType, rid: str, vid: str, body: Any,
                    patch: bool, key: str = "") -> None:
        rxid = f"/{gtype.plural}/{gid}/{rtype.plural}/{rid}"
        if rtype.maxversions == 1:
            if vid != MESSAGE_VERSION:
                raise ApiError(400, "bad_request", f"A {rtype.singular} has one Version, {MESSAGE_VERSION} "
                               f"(maxversions 1): {rxid}/versions/{vid} cannot be written.", f"{rxid}/versions/{vid}",
                               {"error_detail": f"a {rtype.singular} has one Version, {MESSAGE_VERSION}"})
            self.put_resource(gtype, gid, rtype, rid, body, patch, record=False)
            self.plan.answer.append((key, f"{rxid}/versions/{vid}"))
            return
        self.check_id(rid, rxid)
        group = self._group_for_resources(gtype, gid)
        stored = group.setdefault(rtype.plural, {}).setdefault(rid, {f"{rtype.singular}id": rid, "versions": {}})
        created = vid not in stored.get("versions", {})
        self._put_version(rxid, rtype, stored, vid, body, patch, check_epoch=True)
        self.plan.created = self.plan.created or (created and not key)
        self.plan.answer.append((key, f"{rxid}/versions/{vid}"))

    def post_version(self, gtype: GroupType, gid: str, rtype: ResourceType, rid: str, body: Any) -> None:
        """POST to a Resource: a new Version (its id the body's `versionid`, else the next integer)."""
        if rtype.maxversions == 1:
            self.put_resource(gtype, gid, rtype, rid, body, patch=False)
            return
        rxid = f"/{gtype.plural}/{gid}/{rtype.plural}/{rid}"
        body = self._object(body, rxid, "the version")
        vid = body.get("versionid")
        if vid is None:
            group = self.group_body(gtype.plural, gid) or {}
            known = list((group.get(rtype.plural, {}).get(rid) or {}).get("versions", {}))
            node = self.node(rxid)
            known += list(node.collections.get("versions", {})) if node is not None else []
            numbers = [int(v) for v in known if v.isdigit()]
            vid = str(max(numbers) + 1 if numbers else len(known) + 1)
        self.put_version(gtype, gid, rtype, rid, str(vid), {k: v for k, v in body.items() if k != "versionid"},
                         patch=False)

    def delete_version(self, gtype: GroupType, gid: str, rtype: ResourceType, rid: str, vid: str,
                       epoch: Any) -> None:
        rxid = f"/{gtype.plural}/{gid}/{rtype.plural}/{rid}"
        xid = f"{rxid}/versions/{vid}"
        self.check_epoch({"epoch": epoch}, xid, self.epoch(xid))
        group = self.group_body(gtype.plural, gid) or {}
        stored = group.get(rtype.plural, {}).get(rid)
        versions: dict[str, Any] = stored.get("versions", {}) if stored is not None else {}
        if rtype.maxversions == 1 or set(versions) <= {vid}:
            raise ApiError(400, "bad_request", f"A Resource has at least one Version: delete {rxid} instead of its "
                           f"last Version.", xid, {"error_detail": "a Resource has at least one Version"})
        versions.pop(vid, None)
        meta = stored.setdefault("meta", {}) if stored is not None else {}
        if meta.get("defaultversionid") == vid:  # the default goes: the newest remaining one takes its place
            stored.pop("meta", None)

    # -- meta ----------------------------------------------------------------------------------------------------
    def _set_meta(self, rxid: str, stored: dict[str, Any], body: dict[str, Any], patch: bool) -> None:
        """A chosen `defaultversionid` makes the default sticky (as a document declaring one does); without
        one, or with `defaultversionsticky` false, the default is the newest Version again."""
        versions = stored.get("versions", {})
        chosen = body.get("defaultversionid")
        if chosen is not None and chosen not in versions:
            raise ApiError(400, "bad_defaultversionid", f'For "{rxid}/meta", an error was found in the '
                           f'"defaultversionid" value specified ({chosen}): no such Version.', f"{rxid}/meta",
                           {"value": str(chosen), "error_detail": "no such Version"})
        sticky = body.get("defaultversionsticky")
        if chosen is not None and sticky is not False:
            stored["meta"] = {"defaultversionid": chosen, "defaultversionsticky": True}
        elif sticky is False or not patch:
            stored.pop("meta", None)

    def put_meta(self, gtype: GroupType, gid: str, rtype: ResourceType, rid: str, body: Any, patch: bool) -> None:
        rxid = f"/{gtype.plural}/{gid}/{rtype.plural}/{rid}"
        body = self._object(body, f"{rxid}/meta", "meta")
        self.check_epoch(body, f"{rxid}/meta", self.epoch(f"{rxid}/meta"))
        check_attributes(body, _resource_model(rtype, "metaattributes"), f"{rxid}/meta", META_UNCHECKED)
        if rtype.maxversions == 1:
            if body.get("defaultversionsticky"):
                raise ApiError(400, "setdefaultversionsticky_false", f'For "{rxid}", setting "defaultversionsticky" '
                               'to "true" is not allowed since "maxversions" is "1".', rxid)
        else:
            stored = (self.group_body(gtype.plural, gid) or {}).get(rtype.plural, {}).get(rid)
            if stored is None:
                raise ApiError(404, "not_found", f"The targeted entity ({rxid}) cannot be found.", rxid)
            self._set_meta(rxid, stored, body, patch)
        self.plan.answer.append(("", f"{rxid}/meta"))


def _resource_model(rtype: ResourceType, level: str) -> dict[str, Any]:
    """A Resource type's attributes at `level` (`attributes`: a Version's, a message's too, its one Version
    being the Resource; `metaattributes`: its meta's), from the Group type that defines it (an endpoint's
    messages are the message groups')."""
    attributes: dict[str, Any] = MODEL["groups"][DEFINED_BY[rtype.plural]]["resources"][rtype.plural][level]
    return attributes


def rewrite_local_refs(value: Any) -> Any:
    """A whole document split into one file per group: its `#/<GROUPS>/...` references become xids, which
    resolve across the registry (validation rule 2) where a pointer into another file would not."""
    if isinstance(value, str) and value.startswith("#/") and value[2:].split("/", 1)[0] in GROUPS:
        return value[1:]
    if isinstance(value, dict):
        return {k: rewrite_local_refs(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rewrite_local_refs(v) for v in value]
    return value
