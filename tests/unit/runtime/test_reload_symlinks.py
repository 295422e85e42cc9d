"""Hot reload of a Kubernetes ConfigMap volume: the kubelet's atomic writer layout and its `..data` swap.

A ConfigMap mounted as a directory looks like this (kubelet's AtomicWriter):

    ..2026_11_24_10_00_00.000000001/   the real files of one version
    ..data -> ..2026_11_24_10_00_00.000000001
    telemetry.xreg.json -> ..data/telemetry.xreg.json
    gateway.yaml -> ..data/gateway.yaml

An update writes a new timestamped directory, points a `..data_tmp` link at it, renames that over
`..data` (the one atomic step: every top-level link now reads the new content), adds or removes
top-level links for keys that appeared or went away, and deletes the old directory. These tests
build that layout for real, drive the watcher through it, and check that each document loads once,
under its top-level name.

The watcher tests wait for real file-system events (bounded by a timeout); nothing sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.compiler import compile_registry
from gateway.errors import Severity
from gateway.loader import load_snapshot
from gateway.loader.discover import find_documents
from gateway.metrics import names
from gateway.runtime.engine import Engine
from gateway.runtime.reload import Reloader
from gateway.settings import load_settings
from gateway.testing import memory

DEBOUNCE = 0.05
TIMEOUT = 15.0
SETTINGS = b"runtime:\n  reload_debounce: 0.05\n"
_stamps = itertools.count(1)


def _endpoint(endpoint_id: str, type_value: str) -> bytes:
    document = {"endpoints": {endpoint_id: {
        "usage": ["consumer"], "protocol": "KAFKA", "envelope": "CloudEvents/1.0",
        "messages": {"m": {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": type_value}}}}}}}
    return json.dumps(document).encode()


class ConfigMapVolume:
    """A directory laid out and updated the way the kubelet's atomic writer does it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(exist_ok=True)

    @property
    def data(self) -> Path:
        return self.root / "..data"

    def prepare(self, payload: dict[str, bytes]) -> Path:
        """Write one version into a new hidden, timestamped directory (not visible yet)."""
        version = self.root / f"..2026_11_24_10_00_{next(_stamps):02d}.{os.getpid():09d}"
        version.mkdir()
        for name, data in payload.items():
            (version / name).write_bytes(data)
        return version

    def publish(self, version: Path, *, remove_old: bool = True) -> None:
        """The swap: `..data_tmp` -> version, renamed over `..data`; then the top-level links; then cleanup."""
        old = Path(os.readlink(self.data)) if self.data.is_symlink() else None
        tmp = self.root / "..data_tmp"
        tmp.symlink_to(version.name, target_is_directory=True)
        os.replace(tmp, self.data)
        keys = {p.name for p in version.iterdir()}
        for entry in self.root.iterdir():
            if not entry.name.startswith("..") and entry.is_symlink() and entry.name not in keys:
                entry.unlink()
        for key in keys:
            if not (self.root / key).is_symlink():
                (self.root / key).symlink_to(f"..data/{key}")
        if remove_old and old is not None:
            shutil.rmtree(self.root / old)

    def write(self, payload: dict[str, bytes]) -> None:
        self.publish(self.prepare(payload))


def _types(engine: Engine, endpoint: str = "in") -> set[str]:
    rules = engine.ref.ruleset.endpoints.get(endpoint)
    return {d.discriminator.value for d in rules.definitions if d.discriminator} if rules else set()


def _reloader(root: Path) -> tuple[Reloader, Engine]:
    snapshot = load_snapshot([root])
    assert [d for d in snapshot.diagnostics if d.severity is Severity.ERROR] == []
    settings, problems = load_settings(root)
    assert problems == []
    engine = Engine([], compile_registry(snapshot.registry, snapshot.digest), create_source=memory.create_source,
                    create_sink=memory.create_sink)
    return Reloader(root, engine, snapshot, settings, debounce=DEBOUNCE), engine


@pytest.fixture
def volume(tmp_path: Path) -> ConfigMapVolume:
    cm = ConfigMapVolume(tmp_path / "xgate")
    cm.write({"telemetry.xreg.json": _endpoint("in", "t1"), "other.json": _endpoint("other", "o1"),
              "gateway.yaml": SETTINGS})
    return cm


# -- discovery: the hidden entries are not documents ------------------------------------------------------
def test_the_configmap_layout_is_what_the_kubelet_makes(volume: ConfigMapVolume) -> None:
    root = volume.root
    hidden = sorted(p.name for p in root.iterdir() if p.name.startswith(".."))
    assert len(hidden) == 2 and hidden[1] == "..data" and hidden[0].startswith("..2026_11_24_")
    assert (root / "..data").is_symlink() and (root / hidden[0]).is_dir() and not (root / hidden[0]).is_symlink()
    assert os.readlink(root / "telemetry.xreg.json") == "..data/telemetry.xreg.json"


def test_each_document_loads_once_under_its_top_level_name(volume: ConfigMapVolume) -> None:
    root = volume.root
    found = find_documents([root])
    assert found.files == [root / "other.json", root / "telemetry.xreg.json"]
    assert found.escaping == [] and found.missing == []
    snapshot = load_snapshot([root])
    assert [d for d in snapshot.diagnostics if d.severity is Severity.ERROR or d.severity is Severity.WARNING] == []
    assert sorted(s.file for s in snapshot.files) == [str(root / "other.json"), str(root / "telemetry.xreg.json")]
    assert sorted(snapshot.registry.endpoints) == ["in", "other"]
    # a second load through the version directory's own path would report the endpoints twice: it does not
    assert not any(".." in Path(f).relative_to(root).as_posix() for f in snapshot.contents)


def test_the_same_content_in_a_new_version_directory_is_the_same_configuration(volume: ConfigMapVolume) -> None:
    before = load_snapshot([volume.root])
    volume.write({"telemetry.xreg.json": _endpoint("in", "t1"), "other.json": _endpoint("other", "o1"),
                  "gateway.yaml": SETTINGS})
    assert load_snapshot([volume.root]).digest == before.digest


# -- reload decisions across swaps (no watcher) -----------------------------------------------------------
def test_a_swap_with_identical_content_is_unchanged(volume: ConfigMapVolume) -> None:
    reloader, _ = _reloader(volume.root)
    volume.write({"telemetry.xreg.json": _endpoint("in", "t1"), "other.json": _endpoint("other", "o1"),
                  "gateway.yaml": SETTINGS})
    assert asyncio.run(reloader.reload("test")) == "unchanged"


def test_a_broken_file_after_a_swap_keeps_its_last_good_content(volume: ConfigMapVolume) -> None:
    reloader, engine = _reloader(volume.root)
    volume.write({"telemetry.xreg.json": b'{"endpoints": ', "other.json": _endpoint("other", "o2"),
                  "gateway.yaml": SETTINGS})
    assert asyncio.run(reloader.reload("test")) == "failed"
    assert _types(engine) == {"t1"}  # the broken document still judges with the content of the old version
    assert _types(engine, "other") == {"o2"}  # while the other file's change applied
    assert engine.metrics[names.RELOADS].labels("failed")._value.get() == 1
    # fixed in the next version: applies, and the version directory of the broken one is gone
    volume.write({"telemetry.xreg.json": _endpoint("in", "t3"), "other.json": _endpoint("other", "o2"),
                  "gateway.yaml": SETTINGS})
    assert asyncio.run(reloader.reload("test")) == "applied"
    assert _types(engine) == {"t3"}


# -- the watcher ------------------------------------------------------------------------------------------
async def _watching(reloader: Reloader, body: Callable[[asyncio.Queue[str]], Awaitable[None]]) -> None:
    """Run the watcher while `body` acts; every reload's outcome is put on the queue."""
    outcomes: asyncio.Queue[str] = asyncio.Queue()
    original = reloader.reload

    async def recording(reason: str) -> str:
        outcome = await original(reason)
        outcomes.put_nowait(outcome)
        return outcome
    reloader.reload = recording  # type: ignore[method-assign]
    stop = asyncio.Event()
    watcher = asyncio.create_task(reloader.watch(stop))
    try:
        await asyncio.wait_for(body(outcomes), TIMEOUT)
    finally:
        stop.set()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(watcher, TIMEOUT)


async def _until_watching(volume: ConfigMapVolume, outcomes: asyncio.Queue[str]) -> None:
    """The watcher is installed once it sees an edit: rewrite gateway.yaml unchanged until a reload comes."""
    while True:
        (volume.data / "gateway.yaml").write_bytes(SETTINGS)
        with contextlib.suppress(asyncio.TimeoutError):
            assert await asyncio.wait_for(outcomes.get(), 0.5) == "unchanged"
            break
    while not outcomes.empty():  # several probes may have landed in one debounce window or two
        assert outcomes.get_nowait() == "unchanged"


async def _next_change(outcomes: asyncio.Queue[str]) -> str:
    """The next reload that is not a leftover "unchanged" (events of one swap may span two debounce windows)."""
    while (outcome := await outcomes.get()) == "unchanged":
        pass
    return outcome


def test_the_data_swap_alone_reloads(volume: ConfigMapVolume) -> None:
    # the new version is written before the watcher starts, so the only event it can see is the swap of
    # `..data` (a hidden link, not a document name) and the old directory is left in place
    reloader, engine = _reloader(volume.root)
    version = volume.prepare({"telemetry.xreg.json": _endpoint("in", "t2"), "other.json": _endpoint("other", "o1"),
                              "gateway.yaml": SETTINGS})

    async def body(outcomes: asyncio.Queue[str]) -> None:
        await _until_watching(volume, outcomes)
        volume.publish(version, remove_old=False)
        assert await _next_change(outcomes) == "applied"
    asyncio.run(_watching(reloader, body))
    assert _types(engine) == {"t2"}


def test_the_kubelet_update_sequence_reloads_the_new_content(volume: ConfigMapVolume) -> None:
    reloader, engine = _reloader(volume.root)
    steps: list[dict[str, Any]] = []

    async def body(outcomes: asyncio.Queue[str]) -> None:
        await _until_watching(volume, outcomes)
        # 1: a changed document
        volume.write({"telemetry.xreg.json": _endpoint("in", "t2"), "other.json": _endpoint("other", "o1"),
                      "gateway.yaml": SETTINGS})
        steps.append({"outcome": await _next_change(outcomes), "in": _types(engine)})
        # 2: a key removed and one added (top-level links go and come), in a version created after the start
        volume.write({"telemetry.xreg.json": _endpoint("in", "t2"), "door.json": _endpoint("door", "d1"),
                      "gateway.yaml": SETTINGS})
        steps.append({"outcome": await _next_change(outcomes), "endpoints": sorted(engine.ref.ruleset.endpoints)})
        # 3: a broken document keeps its last good content
        volume.write({"telemetry.xreg.json": b"{", "door.json": _endpoint("door", "d2"), "gateway.yaml": SETTINGS})
        steps.append({"outcome": await _next_change(outcomes), "in": _types(engine), "door": _types(engine, "door")})
    asyncio.run(_watching(reloader, body))
    assert steps == [{"outcome": "applied", "in": {"t2"}},
                     {"outcome": "applied", "endpoints": ["door", "in"]},
                     {"outcome": "failed", "in": {"t2"}, "door": {"d2"}}]
    assert len([p for p in volume.root.iterdir() if p.name.startswith("..2026")]) == 1


# -- the Spark runner ships the volume's documents under their top-level names ----------------------------
def test_a_configmap_volume_ships_to_spark_executors_under_its_own_names(volume: ConfigMapVolume) -> None:
    from gateway.spark.shipping import bundle_from_paths, materialize

    snapshot, bundle = bundle_from_paths([volume.root])
    names = {name for name, _ in bundle.files}
    assert {"telemetry.xreg.json", "other.json"} <= names and not any(n.startswith("..") for n in names), names
    copy = load_snapshot([materialize(bundle) / path for path in bundle.load])
    assert sorted(copy.registry.endpoints) == sorted(snapshot.registry.endpoints) == ["in", "other"]
