"""Every file xgate keeps across restarts is replaced durably (gateway/durable.py): the new bytes synced before
the rename and the directory synced after it. The registry's epoch file was renamed without either, so a power
cut could bring epochs back."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from gateway import durable
from gateway.registry_api.state import StateFile
from gateway.registry_api.tree import Stamp
from gateway.runtime.change_events import Outbox


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What was fsynced, by what the descriptor names: a file's name or `<dir>` for a directory."""
    seen: list[str] = []
    real = os.fsync

    def fsync(descriptor: int) -> None:
        target = Path(os.readlink(f"/proc/self/fd/{descriptor}"))
        seen.append("<dir>" if target.is_dir() else target.name)
        real(descriptor)

    monkeypatch.setattr(os, "fsync", fsync)
    return seen


def test_a_replacement_is_synced_before_the_rename_and_the_directory_after(tmp_path: Path, synced: list[str]) -> None:
    target = tmp_path / "state.json"
    target.write_bytes(b"old")
    durable.write_atomically(target, b"new")
    assert target.read_bytes() == b"new"
    assert synced == [f".state.json.{os.getpid()}.tmp", "<dir>"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_a_failed_rename_leaves_the_old_file_and_nothing_staged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "state.json"
    target.write_bytes(b"old")

    def refuse(*_: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError):
        durable.write_atomically(target, b"new")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_the_registry_epochs_are_written_durably(tmp_path: Path, synced: list[str]) -> None:
    state = StateFile(tmp_path)
    stamps = {"/messagegroups/g": Stamp("digest", 3, "2026-11-28T00:00:00Z", "2026-11-28T00:00:01Z")}
    document = {"registryid": "xgate", "messagegroups": {"g": {}}}
    state.save(stamps, {"/messagegroups/g"}, document)
    assert synced == [f".{state.path.name}.{os.getpid()}.tmp", "<dir>"]
    assert state.load() == (stamps, {"/messagegroups/g"}, document)


def test_the_change_event_outbox_is_written_durably(tmp_path: Path, synced: list[str]) -> None:
    outbox = Outbox(tmp_path)
    outbox.events.append({"id": "1", "type": "io.xregistry.x"})
    outbox.save()
    assert outbox.path is not None
    assert synced == [f".{outbox.path.name}.{os.getpid()}.tmp", "<dir>"]
    assert Outbox(tmp_path).events == [{"id": "1", "type": "io.xregistry.x"}]
