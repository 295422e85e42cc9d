"""Change events on real brokers (issue 24): each kind of change of the served registry, published through the
events endpoint's own adapter and received with that protocol's own source adapter, exactly the events of the
changes that happened, each one conformant to the shipped `io.xregistry.events` message group.

    write (PUT, then DELETE)        Kafka
    write (PUT)                     MQTT 5
    a dropped file                  NATS (JetStream)
    a removed file                  AMQP 1.0 (RabbitMQ)
    a registry source's update      HTTP (xgate's own webhook source receives the POSTs)

The gateway is the one of the unit tests (tests/unit/registry_api/writing.py: view, reloader and write API as
`xgate run` wires them, on 127.0.0.1), with the publisher of `xgate run` attached.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.compiler import compile_registry
from gateway.envelope import Envelope
from gateway.loader import load_snapshot
from gateway.runtime.change_events import ChangePublisher
from gateway.verdict import Outcome
from protocol_adapters import registry as adapters
from protocol_adapters.base import EndpointConfig
from tests.conftest import free_port
from tests.integration.harness import start_broker
from tests.integration.profiles import MQTT_PORT
from tests.kafka_broker import shared_kafka
from tests.unit.local_http import serving
from tests.unit.registry_api.writing import Gateway, gateway, message, operator_files

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
SHIPPED = compile_registry(load_snapshot([REPO / "config" / "registry-events"]).registry)
CREATED_GROUP = [("registry.updated", "/"), ("group.created", "/messagegroups/shop"),
                 ("resource.created", "/messagegroups/shop/messages/placed"),
                 ("version.created", "/messagegroups/shop/messages/placed/versions/1")]
DELETED_GROUP = [("registry.updated", "/"), ("group.deleted", "/messagegroups/shop"),
                 ("resource.deleted", "/messagegroups/shop/messages/placed"),
                 ("version.deleted", "/messagegroups/shop/messages/placed/versions/1")]


def endpoints(protocol: str) -> tuple[EndpointConfig, EndpointConfig]:
    """(where the gateway publishes, where the test reads) for one protocol, unique to this run."""
    run = uuid.uuid4().hex[:8]
    if protocol == "KAFKA":
        options = {"topic": f"it-{run}-changes", "consumergroup": f"it-{run}", "autooffsetreset": "earliest"}
        uris: tuple[str, ...] = (f"tcp://{shared_kafka()}",)
        return EndpointConfig("changes", protocol, uris, options), EndpointConfig("changes", protocol, uris, options)
    if protocol == "MQTT/5.0":
        start_broker("mosquitto", {"XGATE_MQTT_PORT": MQTT_PORT})
        uris = (f"mqtt://127.0.0.1:{MQTT_PORT}",)
        options = {"topic_name": f"it/{run}/changes", "topicfilter": f"it/{run}/changes", "qos": 1}
        return (EndpointConfig("changes", protocol, uris, {**options, "clientid": f"it-{run}-pub"}),
                EndpointConfig("changes", protocol, uris, {**options, "clientid": f"it-{run}-sub"}))
    if protocol == "NATS":
        start_broker("nats")
        options = {"subject": f"it.{run}.changes", "stream": f"IT_{run}_CHANGES".upper()}
        config = EndpointConfig("changes", protocol, ("nats://127.0.0.1:4222",), options)
        return config, config
    if protocol == "AMQP/1.0":
        start_broker("rabbitmq")
        config = EndpointConfig("changes", protocol, ("amqp://127.0.0.1:5672",),
                                {"node": f"/queue/xgate-test-{run}-changes"}, username="guest", password="guest")
        return config, config
    config = EndpointConfig("changes", "HTTP", (f"http://127.0.0.1:{free_port()}/changes",), {})
    return config, config


class Receiver:
    """Reads the events endpoint with the protocol's own source adapter."""

    def __init__(self, config: EndpointConfig) -> None:
        self.config, self.events = config, []
        self.envelopes: list[Envelope] = []
        self.ready = asyncio.Event()

    async def run(self) -> None:
        async with adapters.create_source(self.config) as source:
            self.ready.set()
            async for envelope in source:
                self.envelopes.append(envelope)
                self.events.append(json.loads(bytes(envelope.body)))
                await source.ack(envelope)

    async def count(self, wanted: int, timeout: float = 30.0) -> None:
        async with asyncio.timeout(timeout):
            while len(self.events) < wanted:
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # anything more would arrive now: there must be nothing more


def kinds(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"].removeprefix("io.xregistry."), e["subject"]) for e in events]


async def with_events(protocol: str, config_dir: Path, change: Any) -> tuple[Receiver, Any]:
    publish_to, read_from = endpoints(protocol)
    receiver = Receiver(read_from)
    reading = asyncio.create_task(receiver.run())
    await asyncio.wait_for(receiver.ready.wait(), 30)
    if protocol == "MQTT/5.0":
        await asyncio.sleep(0.5)  # the subscription is made once connected
    async with gateway(config_dir) as gw:
        publisher = ChangePublisher(publish_to, adapters.create_sink, config_dir.parent / "state", 65536, gw.base)
        (config_dir.parent / "state").mkdir(exist_ok=True)
        gw.view.listener = publisher.listen
        stop = asyncio.Event()
        publishing = asyncio.create_task(publisher.run(stop))
        try:
            result = await change(gw, receiver)
        finally:
            stop.set()
            await publishing
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reading
    for envelope, event in zip(receiver.envelopes, receiver.events):
        envelope.endpoint = None  # judged by the shipped group alone, on no endpoint of its own
        verdict = SHIPPED.judge_fully(envelope)
        assert verdict.outcome is Outcome.CONFORMANT and verdict.messageid == event["type"], (event, verdict)
        assert event["source"] == gw.base
    return receiver, result


def test_writes_publish_their_events_on_kafka(tmp_path: Path) -> None:
    async def change(gw: Gateway, receiver: Receiver) -> list[str]:
        _, first, _ = await gw.call("PUT", "/messagegroups/shop", {"messages": {"placed": message("com.example.p")}})
        await receiver.count(4)
        _, second, _ = await gw.call("DELETE", "/messagegroups/shop")
        await receiver.count(8)
        return [first["xRegistry-xregcorrelationid"], second["xRegistry-xregcorrelationid"]]
    receiver, correlations = asyncio.run(with_events("KAFKA", operator_files(tmp_path / "config"), change))
    assert kinds(receiver.events) == CREATED_GROUP + DELETED_GROUP
    assert [e["xregcorrelationid"] for e in receiver.events] == [correlations[0]] * 4 + [correlations[1]] * 4
    assert [e["data"]["epoch"] for e in receiver.events[:2]] == [2, 1]
    assert receiver.events[1]["data"]["entity"]["messagescount"] == 1
    assert {bytes(e.fields["key"]).decode() for e in receiver.envelopes} == {s for _, s in CREATED_GROUP}


def test_a_write_publishes_its_events_on_mqtt(tmp_path: Path) -> None:
    async def change(gw: Gateway, receiver: Receiver) -> None:
        await gw.call("PUT", "/messagegroups/shop", {"messages": {"placed": message("com.example.p")}})
        await receiver.count(4)
    receiver, _ = asyncio.run(with_events("MQTT/5.0", operator_files(tmp_path / "config"), change))
    assert kinds(receiver.events) == CREATED_GROUP


def test_a_dropped_file_publishes_its_events_on_nats(tmp_path: Path) -> None:
    config = operator_files(tmp_path / "config")

    async def change(gw: Gateway, receiver: Receiver) -> None:
        (config / "shop.xreg.json").write_text(json.dumps({"messagegroups": {"shop": {"messages": {
            "placed": message("com.example.p")}}}}))
        await gw.reloader.reload("file change")  # what the watcher calls once the directory is quiet
        await receiver.count(4)
    receiver, _ = asyncio.run(with_events("NATS", config, change))
    assert kinds(receiver.events) == CREATED_GROUP


def test_a_removed_file_publishes_its_events_on_amqp(tmp_path: Path) -> None:
    config = operator_files(tmp_path / "config")

    async def change(gw: Gateway, receiver: Receiver) -> None:
        (config / "operator.xreg.json").unlink()
        await gw.reloader.reload("file change")
        await receiver.count(7)
    receiver, _ = asyncio.run(with_events("AMQP/1.0", config, change))
    assert kinds(receiver.events) == [
        ("registry.updated", "/"), ("group.deleted", "/messagegroups/ops"),
        ("resource.deleted", "/messagegroups/ops/messages/ping"),
        ("version.deleted", "/messagegroups/ops/messages/ping/versions/1"),
        ("group.deleted", "/schemagroups/ops.schemas"), ("resource.deleted", "/schemagroups/ops.schemas/schemas/s"),
        ("version.deleted", "/schemagroups/ops.schemas/schemas/s/versions/1")]
    assert len({e["xregcorrelationid"] for e in receiver.events}) == 1  # one reload, one interaction


def test_a_registry_source_update_publishes_its_events_over_http(tmp_path: Path) -> None:
    served = {"messagegroups": {"remote": {"messages": {"r": message("com.example.r")}}}}

    class Upstream(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps(served).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    config = operator_files(tmp_path / "config")
    with serving(Upstream) as url:
        (config / "gateway.yaml").write_text(yaml.safe_dump({
            "remote": {"allow": ["127.0.0.1"], "timeout": 2}, "sources": [{"url": url + "/registry", "interval": 1}]}))

        async def change(gw: Gateway, receiver: Receiver) -> None:
            assert "remote" in gw.view.state.root.collections["messagegroups"]  # fetched at start
            stop = asyncio.Event()
            following = asyncio.create_task(gw.reloader.follow(stop))
            served["messagegroups"]["remote"]["messages"]["s"] = message("com.example.s")
            try:
                await receiver.count(3)
            finally:
                stop.set()
                await following
        receiver, _ = asyncio.run(with_events("HTTP", config, change))
    assert kinds(receiver.events) == [("group.updated", "/messagegroups/remote"),
                                      ("resource.created", "/messagegroups/remote/messages/s"),
                                      ("version.created", "/messagegroups/remote/messages/s/versions/1")]
    # a group only a source declares is read-only through the write API
