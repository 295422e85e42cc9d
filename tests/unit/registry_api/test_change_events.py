"""Change events (core/events.md): exactly the changes that happened, in the spec's order, valid against the
message group xgate ships for them (config/registry-events), and published at least once (the outbox)."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path
from typing import Any

from gateway.compiler import compile_registry
from gateway.envelope import Envelope
from gateway.loader import load_snapshot
from gateway.registry_api import RegistryView
from gateway.registry_api.events import change_events
from gateway.runtime.change_events import ChangePublisher, Outbox
from gateway.runtime.remap import envelope_for
from gateway.testing import memory
from gateway.verdict import Outcome
from protocol_adapters.base import EndpointConfig
from tests.unit.builders import write_doc
from tests.unit.registry_api.support import run
from tests.unit.registry_api.writing import Gateway, gateway, message, operator_files

REPO = Path(__file__).resolve().parents[3]
SHIPPED = REPO / "config" / "registry-events"
BASE = "http://registry.test/registry"


def heard(view: RegistryView) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    view.listener = lambda old, new, correlation: events.extend(change_events(old, new, BASE, correlation, 65536))
    return events


def kinds(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["subject"]) for e in events]


def test_dropped_changed_and_removed_files_give_exactly_their_events(tmp_path: Path) -> None:
    write_doc(tmp_path, "a.xreg.json", {"messagegroups": {"g": {"messages": {"m": message("com.example.m")}}}})
    view = RegistryView(load_snapshot([tmp_path]))
    events = heard(view)
    write_doc(tmp_path, "b.xreg.json", {"schemagroups": {"sg": {"schemas": {"s": {
        "format": "JsonSchema/draft-07", "versions": {"1": {"schema": {"type": "object"}}}}}}}})
    view.update(load_snapshot([tmp_path]))
    assert kinds(events) == [("io.xregistry.registry.updated", "/"), ("io.xregistry.group.created", "/schemagroups/sg"),
                             ("io.xregistry.resource.created", "/schemagroups/sg/schemas/s"),
                             ("io.xregistry.version.created", "/schemagroups/sg/schemas/s/versions/1")]
    assert len({e["xregcorrelationid"] for e in events}) == 1 and len({e["id"] for e in events}) == 4
    created = events[1]
    assert created["source"] == BASE and created["data"]["self"] == f"{BASE}/schemagroups/sg"
    assert created["data"]["epoch"] == 1 and created["data"]["entity"]["xid"] == "/schemagroups/sg"
    assert "changed" not in created["data"]  # never on created or deleted (events.md)
    events.clear()
    write_doc(tmp_path, "a.xreg.json", {"messagegroups": {"g": {"messages": {"m": message("com.example.m", "w")}}}})
    view.update(load_snapshot([tmp_path]))
    assert kinds(events) == [("io.xregistry.resource.updated", "/messagegroups/g/messages/m"),
                             ("io.xregistry.version.updated", "/messagegroups/g/messages/m/versions/1")]
    assert events[1]["data"]["epoch"] == 2 and "dataschema" in events[1]["data"]["changed"]
    events.clear()
    (tmp_path / "b.xreg.json").unlink()
    view.update(load_snapshot([tmp_path]))
    assert kinds(events) == [("io.xregistry.registry.updated", "/"), ("io.xregistry.group.deleted", "/schemagroups/sg"),
                             ("io.xregistry.resource.deleted", "/schemagroups/sg/schemas/s"),
                             ("io.xregistry.version.deleted", "/schemagroups/sg/schemas/s/versions/1")]
    assert events[1]["data"] == {"epoch": 1, "self": f"{BASE}/schemagroups/sg"}
    events.clear()
    view.update(load_snapshot([tmp_path]))  # nothing changed: nothing said
    assert events == []


def test_changed_names_collections_whose_members_moved_and_meta_attributes(tmp_path: Path) -> None:
    """events.md `resource` events: a Version created or deleted gives `versions`, `versionscount` and the
    `meta.` attributes that moved; a default pointer moved gives the non-null attributes of both defaults; a
    group's `updated` for a new Resource names the collection (`<RESOURCES>`) and its count."""
    def schema(versions: dict[str, Any], meta: dict[str, Any] | None = None) -> None:
        write_doc(tmp_path, "b.xreg.json", {"schemagroups": {"sg": {"schemas": {"s": {
            "format": "JsonSchema/draft-07", **({"meta": meta} if meta else {}),
            "versions": {v: {"schema": {"type": "object", "title": title}} for v, title in versions.items()}}}}}})
    schema({"1": "a"})
    view = RegistryView(load_snapshot([tmp_path]))
    events = heard(view)
    time.sleep(0.002)  # timestamps have milliseconds: the update's `modifiedat` must be a later one
    schema({"1": "a", "2": "b"})
    view.update(load_snapshot([tmp_path]))
    resource = {e["subject"]: e for e in events}["/schemagroups/sg/schemas/s"]
    assert resource["type"] == "io.xregistry.resource.updated"
    changed = set(resource["data"]["changed"])
    assert {"versions", "versionscount", "meta.epoch", "meta.modifiedat", "meta.defaultversionid"} <= changed
    # the default moved from 1 to 2: every non-null attribute of both, `versionid` among them
    assert "versionid" in changed and "meta.defaultversionurl" in changed
    events.clear()
    write_doc(tmp_path, "a.xreg.json", {"messagegroups": {"g": {"messages": {"m": message("com.example.m")}}}})
    view.update(load_snapshot([tmp_path]))
    events.clear()
    write_doc(tmp_path, "a.xreg.json", {"messagegroups": {"g": {"messages": {
        "m": message("com.example.m"), "n": message("com.example.n")}}}})
    view.update(load_snapshot([tmp_path]))
    group = {e["subject"]: e for e in events}["/messagegroups/g"]
    assert group["type"] == "io.xregistry.group.updated"
    assert {"messages", "messagescount"} <= set(group["data"]["changed"])
    assert not any(name.startswith("meta.") for name in group["data"]["changed"])


def test_a_write_carries_its_correlation_id_into_its_events(tmp_path: Path) -> None:
    async def steps(gw: Gateway) -> tuple[str, list[dict[str, Any]]]:
        events = heard(gw.view)
        _, headers, _ = await gw.call("PUT", "/messagegroups/shop/messages/m", message("com.example.m"))
        return headers["xRegistry-xregcorrelationid"], events
    correlation, events = run(lambda: _with_gateway(tmp_path, steps))
    assert kinds(events) == [("io.xregistry.registry.updated", "/"), ("io.xregistry.group.created", "/messagegroups/shop"),
                             ("io.xregistry.resource.created", "/messagegroups/shop/messages/m"),
                             ("io.xregistry.version.created", "/messagegroups/shop/messages/m/versions/1")]
    assert {e["xregcorrelationid"] for e in events} == {correlation}


async def _with_gateway(tmp_path: Path, steps: Any) -> Any:
    async with gateway(operator_files(tmp_path / "config")) as gw:
        return await steps(gw)


def test_xgate_validates_its_own_events_against_the_shipped_message_group(tmp_path: Path) -> None:
    ruleset = compile_registry(load_snapshot([SHIPPED]).registry)
    write_doc(tmp_path, "a.xreg.json", {"messagegroups": {"g": {"messages": {"m": message("com.example.m")}}}})
    view = RegistryView(load_snapshot([tmp_path]))
    events = heard(view)
    write_doc(tmp_path, "a.xreg.json", {"messagegroups": {"g": {"description": "x", "messages": {
        "n": message("com.example.n")}}}})
    view.update(load_snapshot([tmp_path]))
    (tmp_path / "a.xreg.json").unlink()
    view.update(load_snapshot([tmp_path]))
    assert {e["type"].rsplit(".", 1)[1] for e in events} == {"created", "updated", "deleted"}
    for event in events:
        for protocol in ("HTTP", "KAFKA", "MQTT/3.1.1"):
            verdict = ruleset.judge_fully(_received(envelope_for(event, protocol)))
            assert verdict.outcome is Outcome.CONFORMANT, (event, verdict)
            assert verdict.messageid == event["type"]
    tampered = {**events[0], "subject": "not-an-xid"}
    assert ruleset.judge_fully(_received(envelope_for(tampered, "HTTP"))).outcome is Outcome.NONCONFORMANT


def _received(envelope: Envelope) -> Envelope:
    """What a source of that protocol would hand the pipeline (a Kafka consumer gets a topic and partition)."""
    if envelope.protocol == "KAFKA":
        envelope.fields.update(topic="registry", partition=0)
    return envelope


def test_the_demo_carries_the_shipped_definitions_unchanged() -> None:
    shipped = json.loads((SHIPPED / "xregistry-events.xreg.json").read_text())
    demo = json.loads((REPO / "config" / "demo" / "registry-events.xreg.json").read_text())
    for kind in ("messagegroups", "schemagroups"):
        assert demo[kind] == shipped[kind]


def test_events_wait_in_the_outbox_until_the_broker_confirms_and_survive_a_restart(tmp_path: Path) -> None:
    broker_name = f"events-{tmp_path.name}"
    broker = memory.memory_broker(broker_name)
    config = EndpointConfig("registry.changes", "MEMORY", (f"memory://{broker_name}",), {"queue": "changes"})
    write_doc(tmp_path / "docs", "a.xreg.json", {"messagegroups": {"g": {}}})
    view = RegistryView(load_snapshot([tmp_path / "docs"]))
    publisher = ChangePublisher(config, memory.create_sink, tmp_path / "state", 65536, BASE)
    (tmp_path / "state").mkdir()
    view.listener = publisher.listen
    broker.down = True
    write_doc(tmp_path / "docs", "b.xreg.json", {"messagegroups": {"h": {}}})
    view.update(load_snapshot([tmp_path / "docs"]))
    assert len(Outbox(tmp_path / "state").events) == 2  # registry.updated, group.created: on disk already

    async def publish_for(seconds: float, to: ChangePublisher) -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(to.run(stop))
        await asyncio.sleep(seconds)
        stop.set()
        await task
    run(lambda: publish_for(0.3, publisher))  # the broker is down: nothing confirmed, nothing lost
    assert broker.depth("changes") == 0 and len(Outbox(tmp_path / "state").events) == 2
    broker.down = False
    restarted = ChangePublisher(config, memory.create_sink, tmp_path / "state", 65536, BASE)  # a new process
    run(lambda: publish_for(0.5, restarted))
    assert broker.depth("changes") == 2 and Outbox(tmp_path / "state").events == []
    assert restarted.last is not None and restarted.last["type"] == "io.xregistry.group.created"
    shutil.rmtree(tmp_path / "state")
