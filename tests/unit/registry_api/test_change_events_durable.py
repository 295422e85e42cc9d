"""Change events exactly as durable as the change (issue 34, item 2): a process killed at any point of a
change (after the document was put in place and before its events were queued; after they were queued and
before the stamps were saved) leaves every served (xid, epoch) announced exactly once once it starts again.
A process stops at each point here by simply not running the rest: the next one starts from what is on disk
(the documents, the state file, the outbox), as a new `xgate run` does (gateway/commands/run.py: the view
takes the registry only once the publisher listens)."""

from __future__ import annotations

import random
import shutil
from collections import Counter
from pathlib import Path

from gateway.loader import load_snapshot
from gateway.registry_api import RegistryView
from gateway.registry_api.state import StateFile
from gateway.runtime.change_events import OUTBOX_FILE, ChangePublisher, Outbox
from gateway.testing import memory
from protocol_adapters.base import EndpointConfig
from tests.unit.builders import write_doc

BASE = "http://registry.test/registry"


def _process(tmp_path: Path) -> tuple[RegistryView, ChangePublisher]:
    """A new process: its view from the state directory, its publisher listening before the first load."""
    config = EndpointConfig("registry.changes", "MEMORY", ("memory://durable",), {"queue": "changes"})
    view = RegistryView(None, StateFile(tmp_path / "state"))
    publisher = ChangePublisher(config, memory.create_sink, tmp_path / "state", 65536, BASE)
    view.listener = publisher.listen
    view.update(load_snapshot([tmp_path / "docs"]))
    return view, publisher


def _announced(tmp_path: Path) -> Counter[tuple[str, str, int]]:
    """(event type, xid, epoch): a deleted entity's event carries its last epoch, beside that epoch's own."""
    return Counter((e["type"], e["subject"], e["data"]["epoch"]) for e in Outbox(tmp_path / "state").events)


def _served(view: RegistryView) -> dict[str, int]:
    return {xid: stamp.epoch for xid, stamp in view.state.stamps.items()}


def test_a_change_put_in_place_before_a_kill_is_announced_at_the_next_start(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    write_doc(tmp_path / "docs", "a.xreg.json", {"messagegroups": {"g": {"description": "one"}}})
    _process(tmp_path)  # the first start: nothing to announce
    assert _announced(tmp_path) == Counter()
    # a write put its file in place; the process died before its reload queued the events
    write_doc(tmp_path / "docs", "a.xreg.json", {"messagegroups": {"g": {"description": "two"}}})
    view, _ = _process(tmp_path)
    assert _announced(tmp_path)[("io.xregistry.group.updated", "/messagegroups/g", 2)] == 1
    assert _served(view)["/messagegroups/g"] == 2


def test_a_kill_between_the_outbox_and_the_stamps_announces_once(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    write_doc(tmp_path / "docs", "a.xreg.json", {"messagegroups": {"g": {"description": "one"}}})
    view, _ = _process(tmp_path)
    saved = (tmp_path / "state" / "registry-state.json").read_bytes()
    write_doc(tmp_path / "docs", "a.xreg.json", {"messagegroups": {"g": {"description": "two"}}})
    view.update(load_snapshot([tmp_path / "docs"]))  # events queued, stamps saved ...
    (tmp_path / "state" / "registry-state.json").write_bytes(saved)  # ... but the kill came before the stamps
    _process(tmp_path)
    assert _announced(tmp_path)[("io.xregistry.group.updated", "/messagegroups/g", 2)] == 1


def test_random_kills_over_many_writes_leave_every_served_epoch_announced_exactly_once(tmp_path: Path) -> None:
    """Forty changes; before each, a kill at a random point: none, after the document was put in place, or
    between the outbox and the stamps. Every (xid, epoch) the last process serves beyond the first start is in
    the outbox exactly once (nothing was sent: the broker confirmed nothing)."""
    rng = random.Random(34)
    (tmp_path / "state").mkdir()
    groups = {"g0": {"description": "0"}}
    write_doc(tmp_path / "docs", "a.xreg.json", {"messagegroups": groups})
    view, _ = _process(tmp_path)
    history: dict[str, set[int]] = {xid: {epoch} for xid, epoch in _served(view).items()}
    for step in range(1, 41):
        groups = dict(groups)
        name = f"g{rng.randrange(4)}"
        if name in groups and rng.random() < 0.2:
            del groups[name]
        else:
            groups[name] = {"description": str(step)}
        saved = (tmp_path / "state" / "registry-state.json").read_bytes()
        write_doc(tmp_path / "docs", "a.xreg.json", {"messagegroups": groups})
        point = rng.choice(("none", "after-document", "before-stamps"))
        if point == "after-document":
            view, _ = _process(tmp_path)  # died before the reload; the next process starts
        else:
            view.update(load_snapshot([tmp_path / "docs"]))
            if point == "before-stamps":
                (tmp_path / "state" / "registry-state.json").write_bytes(saved)
                view, _ = _process(tmp_path)
        for xid, epoch in _served(view).items():
            history.setdefault(xid, set()).add(epoch)
    announced = _announced(tmp_path)
    assert all(count == 1 for count in announced.values()), [k for k, n in announced.items() if n > 1]
    said = {(xid, epoch) for _, xid, epoch in announced if _ != "io.xregistry.group.deleted"}
    for xid, epochs in history.items():
        for epoch in epochs - {1}:  # every epoch served after the first: announced
            assert (xid, epoch) in said, (xid, epoch)


def test_what_a_killed_process_was_writing_is_cleared_at_the_next_start(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    write_doc(tmp_path / "docs", "a.xreg.json", {"messagegroups": {"g": {}}})
    for name in (OUTBOX_FILE, "registry-state.json"):
        (tmp_path / "state" / f".{name}.99999.tmp").write_bytes(b"half")
    _process(tmp_path)
    assert not list((tmp_path / "state").glob("*.tmp")) and not list((tmp_path / "state").glob(".*.tmp"))
    shutil.rmtree(tmp_path / "state")
