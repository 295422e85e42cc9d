"""What the /registry API serves: the tree of the last loaded snapshot and the epochs kept across reloads."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

from gateway.loader.snapshot import Snapshot
from gateway.registry_api.document import REGISTRY_ID, registry_document
from gateway.registry_api.state import StateFile
from gateway.registry_api.tree import EpochBook, Node, Stamp, build_tree


@dataclass(frozen=True, slots=True)
class ApiState:
    root: Node
    stamps: dict[str, Stamp]
    # with writes on (write.py): whether the write API edits a group, by (plural, id); None: writes off
    editable: Editable | None = None


# (plural, group id) -> whether the write API edits that group (its own file, or one not made yet)
Editable = Callable[[str, str], bool]
# told (old state, new state, correlation id or None) after each swap, before the stamps are saved
ChangeListener = Callable[[ApiState, ApiState, "str | None"], None]


class RegistryView:
    """The registry the API serves; `update` swaps in a new snapshot (one assignment; safe from a thread).
    With a `state` file, epochs and `createdat` continue where the last process left them (state.py).

    `listener` (the change events, gateway/registry_api/events.py) hears every swap that changed a stamp;
    `correlation` and `moment` are set by a registry write for the reload it causes: its events carry that id, and
    what the reload stamps new (a Resource's `meta`, a parent's `modifiedat`) takes the request's timestamp, so
    one request shows one time (core spec `createdat`/`modifiedat`)."""

    def __init__(self, snapshot: Snapshot | None = None, state: StateFile | None = None) -> None:
        self._state = state
        known, present, document = state.load() if state is not None else ({}, set(), None)
        self._book = EpochBook(known, present)
        self._lock = threading.Lock()
        # what was served when the stamps were last saved: the first update is compared with it, so the listener
        # hears what changed since (a change the last process made on disk and died before announcing); with
        # nothing saved, the first update is the start and announces nothing
        if document is not None:
            self.state = ApiState(build_tree(document), {x: known[x] for x in present if x in known})
        else:
            self.state = ApiState(build_tree({"registryid": REGISTRY_ID}), {})
        self._started = document is not None
        self.listener: ChangeListener | None = None
        self.correlation: str | None = None
        self.moment: str | None = None
        self.editable: Editable | None = None  # set with the write API (registry_wiring.py)
        if snapshot is not None:
            self.update(snapshot)

    def allow_writes(self, editable: Editable) -> None:
        """Writes are on: the state served from now on says which groups the API edits."""
        self.editable = editable
        self.state = replace(self.state, editable=editable)

    def update(self, snapshot: Snapshot) -> None:
        document = registry_document(snapshot, resolved=True, schema_links=True)
        root = build_tree(document)
        with self._lock:
            before = dict(self._book.known), set(self._book.present)
            old = self.state
            stamps = self._book.stamp(root, self.moment)
            self.state = ApiState(root, stamps, self.editable)
            changed = before != (self._book.known, self._book.present)
            if changed and self.listener is not None and self._started:
                # before the stamps are saved: an event recorded (outbox) is never lost to a crash in between
                self.listener(old, self.state, self.correlation)
            if self._state is not None and (changed or not self._started):
                self._state.save(self._book.known, self._book.present, document)
            self._started = True
