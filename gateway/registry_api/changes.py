"""What changed between two states of the served registry: created, updated and deleted entities (pure).

The entities and actions are those of the core spec's events (core/events.md "Entity Events"): the registry
(`updated` when a group comes or goes), groups, Resources and Versions. A change is read off the epochs,
which move exactly when an entity changed (tree.py): a Resource is updated when its `meta` epoch moved (its
default Version or its Version set changed) or when its default Version was updated, since a Resource's
attributes are its default Version's. Order: the registry, then each group followed by its Resources and
their Versions, parents before children, as the spec's samples list them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from gateway.registry_api.served import ApiState
from gateway.registry_api.tree import Node, Stamp


class Action(Enum):
    CREATED = "created"
    UPDATED = "updated"
    DELETED = "deleted"


@dataclass(frozen=True, slots=True)
class Change:
    action: Action
    entity: str        # registry | group | resource | version
    xid: str
    epoch: int         # the new epoch; for a deleted entity its last one
    node: Node         # the entity as it is now (as it was, when deleted)


def _walk(root: Node) -> dict[str, Node]:
    """Every entity by xid, in spec order (parents first)."""
    out = {"/": root}

    def visit(node: Node) -> None:
        for members in node.collections.values():
            for child in members.values():
                out[child.xid] = child
                visit(child)
    visit(root)
    return out


def _epoch(stamps: dict[str, Stamp], node: Node) -> int | None:
    stamp = stamps.get(node.meta_xid if node.kind == "resource" else node.xid)
    return stamp.epoch if stamp is not None else None


def _updated(old: ApiState, new: ApiState, before: Node, after: Node) -> bool:
    if _epoch(old.stamps, before) != _epoch(new.stamps, after):
        return True
    if after.kind == "resource":
        was, now = before.default_version(), after.default_version()
        return was is not None and now is not None and _epoch(old.stamps, was) != _epoch(new.stamps, now)
    return False


def changes(old: ApiState, new: ApiState) -> list[Change]:
    before, after = _walk(old.root), _walk(new.root)
    out: list[Change] = []
    for xid, node in after.items():
        epoch = _epoch(new.stamps, node) or 1
        if xid not in before:
            out.append(Change(Action.CREATED, node.kind, xid, epoch, node))
        elif _updated(old, new, before[xid], node):
            out.append(Change(Action.UPDATED, node.kind, xid, epoch, node))
    for xid, node in before.items():
        if xid not in after:
            out.append(Change(Action.DELETED, node.kind, xid, _epoch(old.stamps, node) or 1, node))
    return out
