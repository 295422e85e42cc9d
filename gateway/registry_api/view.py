"""What the /registry API serves: the tree of the last loaded snapshot and the epochs kept across reloads."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from gateway.loader.snapshot import Snapshot
from gateway.registry_api.document import REGISTRY_ID, registry_document
from gateway.registry_api.tree import EpochBook, Node, Stamp, build_tree


@dataclass(frozen=True, slots=True)
class ApiState:
    root: Node
    stamps: dict[str, Stamp]


class RegistryView:
    """The registry the API serves; `update` swaps in a new snapshot (one assignment; safe from a thread)."""

    def __init__(self, snapshot: Snapshot | None = None) -> None:
        self._book = EpochBook()
        self._lock = threading.Lock()
        self.state = ApiState(build_tree({"registryid": REGISTRY_ID}), {})
        if snapshot is not None:
            self.update(snapshot)

    def update(self, snapshot: Snapshot) -> None:
        root = build_tree(registry_document(snapshot, resolved=True))
        with self._lock:
            stamps = self._book.stamp(root)
            self.state = ApiState(root, stamps)
