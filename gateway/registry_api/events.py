"""The change events of the served registry as CloudEvents (core/events.md), in the JSON event format.

    type     io.xregistry.<registry|group|resource|version>.<created|updated|deleted>
    source   the registry's URL (its root, as `self` of the registry entity says without the final `/`)
    subject  the entity's xid (source + subject is the entity's URL)
    time     when the reload that made the change swapped in; the same for every event of one change
    xregcorrelationid   one id per change: a write's (its answer carries it in `xRegistry-xregcorrelationid`),
                        else one per reload of a dropped or removed file or a registry source's update
    data     {"epoch": the new epoch (a deleted entity's last), "self": its URL, "entity": the entity as the
              API serves it, or nothing when larger than `max_entity_bytes` (then read it at `self`),
              "changed": the top-level attributes that changed (updated events only, events.md), with a
              collection's name where its members came or went (`versions`, `messages`, ...) and a
              Resource's `meta.*` attributes that changed}

Their definitions, as an xRegistry message group (`io.xregistry.events`), are in
config/registry-events/xregistry-events.xreg.json, so that consumers, and xgate itself, can validate them.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from gateway.registry_api.changes import Action, Change, changes
from gateway.registry_api.query import NO_INLINE
from gateway.registry_api.render import Renderer
from gateway.registry_api.served import ApiState
from gateway.registry_api.tree import Node, now_text

TYPE_PREFIX = "io.xregistry."
CONTENT_TYPE = "application/cloudevents+json"


def _changed(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> set[str]:
    return {prefix + k for k in set(old) | set(new) if old.get(k) != new.get(k)}


def _changed_entity(before: Renderer, after: Renderer, previous: Node, node: Node,
                    entity: dict[str, Any]) -> list[str]:
    """events.md `changed`: the entity's own attributes; a collection whose members came or went (its count may
    stay, as when one member replaces another); for a Resource, its `meta` attributes as `meta.<NAME>`, and
    when its default Version is another one, every non-null attribute of the old and the new default."""
    old = before.entity(previous, ())
    found = _changed(old, entity)
    if node.kind == "resource" and previous.default != node.default:
        found |= {k for k, v in old.items() if v is not None} | {k for k, v in entity.items() if v is not None}
    for plural in set(previous.collections) | set(node.collections):
        if set(previous.collections.get(plural, {})) != set(node.collections.get(plural, {})):
            found.add(plural)
    if node.kind == "resource":
        found |= _changed(before.meta(previous), after.meta(node), "meta.")
    return sorted(found)


def change_events(old: ApiState, new: ApiState, base: str, correlation: str | None,
                  max_entity_bytes: int) -> list[dict[str, Any]]:
    """One CloudEvent per change from `old` to `new`, for the registry whose root URL is `base`."""
    found = changes(old, new)
    if not found:
        return []
    base = base.rstrip("/")
    now, correlation = now_text(), correlation or uuid.uuid4().hex
    before, after = Renderer(base, old.stamps, NO_INLINE), Renderer(base, new.stamps, NO_INLINE)
    out = []
    for change in found:
        renderer = before if change.action is Action.DELETED else after
        data: dict[str, Any] = {"epoch": change.epoch, "self": renderer.self_url(change.node)}
        if change.action is not Action.DELETED:
            entity = renderer.entity(change.node, ())
            if len(json.dumps(entity, default=str)) <= max_entity_bytes:
                data["entity"] = entity
            if change.action is Action.UPDATED:
                previous = _previous(old, change)
                if previous is not None:
                    data["changed"] = _changed_entity(before, after, previous, change.node, entity)
        out.append({"specversion": "1.0", "id": uuid.uuid4().hex, "source": base,
                    "type": f"{TYPE_PREFIX}{change.entity}.{change.action.value}", "subject": change.xid,
                    "time": now, "xregcorrelationid": correlation, "datacontenttype": "application/json",
                    "data": data})
    return out


def _previous(old: ApiState, change: Change) -> Node | None:
    node: Node | None = old.root
    parts = change.xid.strip("/").split("/") if change.xid != "/" else []
    for plural, eid in zip(parts[::2], parts[1::2]):
        node = node.collections.get(plural, {}).get(eid) if node is not None else None
    return node


def encode(event: dict[str, Any]) -> bytes:
    """The event in the CloudEvents JSON format (structured mode on every protocol)."""
    return json.dumps(event, ensure_ascii=False, default=str, separators=(",", ":")).encode("utf-8")
