"""`epoch`, `createdat` and `modifiedat` across reloads (core spec, `epoch` and `modifiedat` attributes).

An entity's epoch increases when a reload changes it and only then; a parent's when a member is added to or
removed from its collections, not when a member changes; an entity that comes back after being removed
gets an epoch above any it had.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

import pytest

from gateway.compiler import compile_registry
from gateway.loader import load_snapshot
from gateway.registry_api import RegistryView
from gateway.runtime.engine import Engine
from gateway.runtime.reload import Reloader
from gateway.settings import load_settings
from gateway.testing import memory
from tests.unit.builders import write_doc
from tests.unit.registry_api.registry import endpoints_document, orders_document, write_registry
from tests.unit.registry_api.support import ok

PLACED = "/messagegroups/orders/messages/placed"


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """A clock that moves on every reading: timestamps of successive loads differ however fast they come."""
    ticks = itertools.count()

    def now() -> str:
        tick = next(ticks)
        return f"2026-01-01T{tick // 3600:02d}:{tick // 60 % 60:02d}:{tick % 60:02d}.000Z"
    monkeypatch.setattr("gateway.registry_api.tree.now_text", now)


def epochs(view: RegistryView) -> dict[str, int]:
    every = ok(view, "", inline="*")
    out = {"/": every["epoch"]}
    for plural in ("endpoints", "messagegroups", "schemagroups"):
        for group in every[plural].values():
            out[group["xid"]] = group["epoch"]
            for resources in ("messages", "schemas"):
                for resource in group.get(resources, {}).values():
                    out[resource["xid"]] = resource["epoch"]
                    out[resource["meta"]["xid"]] = resource["meta"]["epoch"]
                    for version in resource["versions"].values():
                        out[version["xid"]] = version["epoch"]
    return out


def reload_into(view: RegistryView, directory: Path) -> None:
    view.update(load_snapshot([directory]))


def test_a_changed_message_gets_the_next_epoch_and_nothing_else_does(tmp_path: Path) -> None:
    write_registry(tmp_path)
    view = RegistryView(load_snapshot([tmp_path]))
    before = epochs(view)
    assert set(before.values()) == {1}
    placed = ok(view, PLACED)
    write_doc(tmp_path, "orders.xreg.json", orders_document(placed_source="/stores/{store}"))
    reload_into(view, tmp_path)
    after = epochs(view)
    changed = {xid for xid in after if after[xid] != before[xid]}
    # `cancelled` is based on `placed`: served materialized, it changed as well
    assert changed == {PLACED, f"{PLACED}/versions/1", "/messagegroups/orders/messages/cancelled",
                       "/messagegroups/orders/messages/cancelled/versions/1"}
    assert after[PLACED] == 2 and after["/messagegroups/orders"] == 1 and after[f"{PLACED}/meta"] == 1
    now = ok(view, PLACED)
    assert now["createdat"] == placed["createdat"] and now["modifiedat"] > placed["modifiedat"]
    assert ok(view, "/endpoints/orders.in")["modifiedat"] == ok(view, "/endpoints/orders.in")["createdat"]
    reload_into(view, tmp_path)  # the same documents again: nothing changes
    assert epochs(view) == after


def test_adding_or_removing_a_member_changes_the_parent(tmp_path: Path) -> None:
    write_registry(tmp_path)
    view = RegistryView(load_snapshot([tmp_path]))
    document = orders_document()
    document["messagegroups"]["orders"]["messages"]["refunded"] = {
        "envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "com.example.order.refunded"}}}
    write_doc(tmp_path, "orders.xreg.json", document)
    reload_into(view, tmp_path)
    assert ok(view, "/messagegroups/orders")["epoch"] == 2 and ok(view)["epoch"] == 1
    assert ok(view, "/messagegroups/orders/messages/refunded")["epoch"] == 1
    write_doc(tmp_path, "orders.xreg.json", orders_document())
    reload_into(view, tmp_path)
    assert ok(view, "/messagegroups/orders")["epoch"] == 3


def test_a_removed_entity_that_comes_back_gets_a_higher_epoch(tmp_path: Path) -> None:
    write_registry(tmp_path)
    view = RegistryView(load_snapshot([tmp_path]))
    first = ok(view, "/endpoints/orders.dlq")
    without = endpoints_document()
    del without["endpoints"]["orders.dlq"]
    write_doc(tmp_path, "endpoints.xreg.json", without)
    reload_into(view, tmp_path)
    assert ok(view)["epoch"] == 2 and ok(view)["endpointscount"] == 1
    write_doc(tmp_path, "endpoints.xreg.json", endpoints_document())
    reload_into(view, tmp_path)
    back = ok(view, "/endpoints/orders.dlq")
    assert back["epoch"] == 2 and back["createdat"] > first["createdat"] and ok(view)["epoch"] == 3


def test_the_reloader_hands_every_new_snapshot_to_the_view(tmp_path: Path) -> None:
    write_registry(tmp_path)
    snapshot = load_snapshot([tmp_path])
    settings, _ = load_settings(tmp_path)
    engine = Engine([], compile_registry(snapshot.registry, snapshot.digest), create_source=memory.create_source,
                    create_sink=memory.create_sink)
    view = RegistryView(snapshot)
    reloader = Reloader(tmp_path, engine, snapshot, settings, on_snapshot=view.update)

    async def main() -> list[str]:
        outcomes = [await reloader.reload("test")]  # unchanged: the view is not touched
        write_doc(tmp_path, "orders.xreg.json", orders_document(placed_source="/stores/{store}"))
        outcomes.append(await reloader.reload("test"))
        (tmp_path / "orders.xreg.json").write_text("{ not json")  # broken: its last good content is kept
        outcomes.append(await reloader.reload("test"))
        return outcomes
    assert asyncio.run(main()) == ["unchanged", "applied", "failed"]
    placed = ok(view, PLACED)
    assert placed["epoch"] == 2 and placed["envelopemetadata"]["source"]["value"] == "/stores/{store}"
    assert json.loads(json.dumps(ok(view, "/endpoints/orders.in")))["epoch"] == 1


def test_a_failing_view_does_not_stop_a_reload(tmp_path: Path) -> None:
    write_registry(tmp_path)
    snapshot = load_snapshot([tmp_path])
    settings, _ = load_settings(tmp_path)
    engine = Engine([], compile_registry(snapshot.registry, snapshot.digest), create_source=memory.create_source,
                    create_sink=memory.create_sink)

    def broken(_: object) -> None:
        raise RuntimeError("view bug")
    reloader = Reloader(tmp_path, engine, snapshot, settings, on_snapshot=broken)
    write_doc(tmp_path, "orders.xreg.json", orders_document(placed_source="/stores/{store}"))
    assert asyncio.run(reloader.reload("test")) == "applied"
    assert reloader.snapshot.digest != snapshot.digest
