"""The contract suite against the MQTT adapter on a real Mosquitto (deploy/brokers/mosquitto.sh), for 3.1.1 and 5.0.

Beyond the suite: every MQTT 5 property survives (user properties repeated and in order, binary
correlation data), a rejected message is acknowledged with a reason code and not delivered again, QoS 2
and shared subscriptions work, the source stops reading while its buffer is full, many concurrent sends
are confirmed, and a source and sink ride out a restart of a private Mosquitto (its own port and store)
mid-stream without losing a message.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiomqtt
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from gateway.envelope import Envelope
from gateway.errors import AdapterError
from gateway.verdict import Outcome, Verdict
from protocol_adapters import mqtt as mqtt_adapter
from protocol_adapters.base import Delivery, EndpointConfig
from tests.conftest import free_port
from tests.contract.suite import ContractSuite, publish, run, take

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "deploy" / "brokers" / "mosquitto.sh"
PORT = int(os.environ.get("XGATE_MQTT_PORT", "1883"))
BROKER = f"mqtt://127.0.0.1:{PORT}"
PROTOCOLS = ("MQTT/3.1.1", "MQTT/5.0")

pytestmark = pytest.mark.integration


def broker_script(command: str, port: int = PORT) -> None:
    subprocess.run(["bash", str(SCRIPT), command], check=True, cwd=REPO,
                   env={**os.environ, "XGATE_MQTT_PORT": str(port)})


async def _forget_sessions(host: str, port: int, protocol: str, client_ids: list[str]) -> None:
    """Connect once with a clean session per client id: the broker drops the persistent session."""
    version = aiomqtt.ProtocolVersion.V5 if protocol == "MQTT/5.0" else aiomqtt.ProtocolVersion.V311
    for client_id in client_ids:
        clean: dict[str, Any] = {"clean_start": True} if protocol == "MQTT/5.0" else {"clean_session": True}
        with contextlib.suppress(aiomqtt.MqttError, OSError):
            async with aiomqtt.Client(host, port, identifier=client_id, protocol=version, timeout=5, **clean):
                pass


@pytest.fixture(scope="module")
def mosquitto() -> str:
    broker_script("start")
    return BROKER


@pytest.fixture(scope="module")
def private_broker() -> Iterator[int]:
    """A Mosquitto of our own (own port and store, xgate's configuration) that tests may restart or fill
    without disturbing anyone else (a reused broker may keep Mosquitto's default queue limit of 1000)."""
    port = free_port()
    broker_script("start", port)
    yield port
    broker_script("stop", port)
    state = Path(os.environ.get("XGATE_BROKER_STATE", "/tmp/xgate-brokers")) / f"mosquitto-{port}"
    shutil.rmtree(state, ignore_errors=True)


class MqttHarness:
    at_least_once = True

    def __init__(self, protocol: str, broker: str) -> None:
        self.protocol = protocol
        self.broker = broker
        self.run_id = uuid.uuid4().hex[:8]
        self.client_ids: list[str] = []

    def options(self, name: str) -> dict[str, Any]:
        return {"topic_name": f"xgate/contract/{self.run_id}/{name}", "sessionexpiryinterval": 300}

    def config(self, name: str, broker: str | None = None, **options: Any) -> EndpointConfig:
        endpoint_id = f"contract-{self.run_id}-{name}"
        self.client_ids.append(f"xgate-{endpoint_id}")
        return EndpointConfig(endpoint_id, self.protocol, (broker or self.broker,), {**self.options(name), **options})

    def unreachable(self, name: str) -> EndpointConfig:
        return EndpointConfig(f"contract-{name}", self.protocol, (f"mqtt://127.0.0.1:{free_port()}",),
                              {**self.options(name), "connecttimeout": 2})

    def sample(self, index: int) -> Envelope:
        fields: dict[str, Any] = {"topic_name": "ignored/by/the/sink", "qos": 1, "retain": False}
        if self.protocol == "MQTT/5.0":
            fields.update(content_type="application/json", payload_format=0, message_expiry_interval=3600,
                          response_topic=f"replies/{index}", correlation_data=bytes([0, 255, index % 256, 10]),
                          user_properties=[("ce-id", f"id-{index}"), ("tag", "a"), ("Tag", "b"), ("tag", "c"),
                                           ("text", "café €")])
        body = b'{"n": %d}' % index + bytes(range(256))
        return Envelope(self.protocol, fields, body)

    def comparable(self, envelope: Envelope) -> Any:
        fields = {k: v for k, v in envelope.fields.items() if k != "topic_name"}
        # the broker forwards the remaining lifetime, which may have lost a second on the way
        if fields.get("message_expiry_interval") is not None:
            fields["message_expiry_interval"] = 3590 <= fields["message_expiry_interval"] <= 3600
        return envelope.body, sorted(fields.items())

    create_source = staticmethod(mqtt_adapter.create_source)
    create_sink = staticmethod(mqtt_adapter.create_sink)


@pytest.fixture(params=PROTOCOLS)
def harness(request: pytest.FixtureRequest, mosquitto: str) -> Iterator[MqttHarness]:
    harness = MqttHarness(request.param, mosquitto)
    yield harness
    run(lambda: _forget_sessions("127.0.0.1", PORT, harness.protocol, harness.client_ids), timeout=30)


class TestMqttAdapter(ContractSuite):
    pass


def test_every_mqtt5_property_arrives_as_sent(mosquitto: str) -> None:
    harness = MqttHarness("MQTT/5.0", mosquitto)
    config = harness.config("props")
    sent = Envelope("MQTT/5.0", {
        "content_type": "text/plain; charset=utf-8", "payload_format": 1, "message_expiry_interval": 600,
        "response_topic": "a/reply", "correlation_data": b"\x00\x01\xfe\xff",
        "user_properties": [("k", "1"), ("k", "2"), ("other", ""), ("k", "3"), ("ünï", "cödé")],
    }, "héllo".encode())

    async def scenario() -> Envelope:
        async with harness.create_source(config) as source:
            await publish(harness, config, [sent])
            [got] = await take(source, 1)
            await source.ack(got)
            return got
    try:
        got = run(scenario)
    finally:
        run(lambda: _forget_sessions("127.0.0.1", PORT, "MQTT/5.0", harness.client_ids))
    assert got.body == "héllo".encode()
    assert got.fields["topic_name"] == config.options["topic_name"]
    assert got.position == {"topic_name": config.options["topic_name"], "mid": got.position["mid"]}
    assert got.fields["qos"] == 1 and got.fields["retain"] is False
    assert got.fields["user_properties"] == sent.fields["user_properties"]
    assert got.fields["correlation_data"] == b"\x00\x01\xfe\xff"
    assert got.fields["content_type"] == "text/plain; charset=utf-8"
    assert got.fields["payload_format"] == 1 and got.fields["response_topic"] == "a/reply"
    assert 590 <= got.fields["message_expiry_interval"] <= 600


def test_mqtt311_carries_topic_qos_and_retain_only(mosquitto: str) -> None:
    harness = MqttHarness("MQTT/3.1.1", mosquitto)
    config = harness.config("v3")

    async def scenario() -> Envelope:
        async with harness.create_source(config) as source:
            await publish(harness, config, [harness.sample(1)])
            [got] = await take(source, 1)
            await source.ack(got)
            return got
    try:
        got = run(scenario)
    finally:
        run(lambda: _forget_sessions("127.0.0.1", PORT, "MQTT/3.1.1", harness.client_ids))
    assert got.fields == {"topic_name": config.options["topic_name"], "qos": 1, "retain": False}


def test_a_foreign_publish_with_u_feff_does_not_wedge_the_source(mosquitto: str) -> None:
    """U+FEFF is legal in MQTT 5 strings and Mosquitto forwards it; paho alone would drop every connection."""
    harness = MqttHarness("MQTT/5.0", mosquitto)
    config = harness.config("bom")
    topic = str(config.options["topic_name"])

    async def scenario() -> list[Envelope]:
        async with harness.create_source(config) as source:
            properties = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
            properties.UserProperty = [("\ufeffk", "v\ufeff")]
            async with aiomqtt.Client("127.0.0.1", PORT, protocol=aiomqtt.ProtocolVersion.V5) as foreign:
                await foreign.publish(topic, b"bom", qos=1, properties=properties)
                await foreign.publish(topic, b"next", qos=1)
            got = await take(source, 2, timeout=5)
            for envelope in got:
                await source.ack(envelope)
            return got
    try:
        got = run(scenario)
    finally:
        run(lambda: _forget_sessions("127.0.0.1", PORT, "MQTT/5.0", harness.client_ids))
    assert [e.body for e in got] == [b"bom", b"next"]
    assert got[0].fields["user_properties"] == [("\ufeffk", "v\ufeff")]


# "nothing redelivered" as an event, not a quiet second: markers published after the acknowledgements
MARKER, AFTER_RECONNECT = 900, 901


async def settle_after_marker(harness: MqttHarness, config: EndpointConfig, source: Any) -> None:
    """Publish a marker after the acknowledgements and read it: the client has run past them."""
    await publish(harness, config, [harness.sample(MARKER)])
    [marker] = await take(source, 1, timeout=60)
    assert marker.body == harness.sample(MARKER).body
    await source.ack(marker)


async def next_after_reconnect(harness: MqttHarness, config: EndpointConfig) -> list[int]:
    """The first message of the resumed session, by number: a redelivery would come before the one sent now."""
    await publish(harness, config, [harness.sample(AFTER_RECONNECT)])
    async with harness.create_source(config) as source:
        got = await take(source, 1, timeout=60)
        numbers = [int(e.body.split(b"}")[0].split()[-1]) for e in got]
        for envelope in got:
            await source.ack(envelope)
    return numbers


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_rejected_ack_settles_the_message(protocol: str, mosquitto: str) -> None:
    """On MQTT 5 the PUBACK carries the reject reason code; either way the broker forgets the message."""
    harness = MqttHarness(protocol, mosquitto)
    config = harness.config("reject")
    rejected = Delivery(Verdict(Outcome.NONCONFORMANT), forwarded=True, rejected=True)

    async def scenario() -> tuple[list[Envelope], list[Envelope]]:
        async with harness.create_source(config) as source:
            await publish(harness, config, [harness.sample(i) for i in range(3)])
            first = await take(source, 3)
            for envelope in first:
                await source.ack(envelope, rejected)
            await settle_after_marker(harness, config, source)
        return first, await next_after_reconnect(harness, config)
    try:
        first, again = run(scenario)
    finally:
        run(lambda: _forget_sessions("127.0.0.1", PORT, protocol, harness.client_ids))
    assert len(first) == 3 and again == [AFTER_RECONNECT]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_qos2_roundtrip_and_no_redelivery_after_ack(protocol: str, mosquitto: str) -> None:
    harness = MqttHarness(protocol, mosquitto)
    config = harness.config("qos2", qos=2)

    async def scenario() -> tuple[list[Envelope], list[Envelope]]:
        async with harness.create_source(config) as source:
            await publish(harness, config, [harness.sample(i) for i in range(5)])
            got = await take(source, 5)
            for envelope in got:
                await source.ack(envelope)
            await settle_after_marker(harness, config, source)
        return got, await next_after_reconnect(harness, config)
    try:
        got, again = run(scenario)
    finally:
        run(lambda: _forget_sessions("127.0.0.1", PORT, protocol, harness.client_ids))
    assert [e.fields["qos"] for e in got] == [2] * 5 and again == [AFTER_RECONNECT]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_shared_subscription_splits_messages_between_replicas(protocol: str, mosquitto: str) -> None:
    harness = MqttHarness(protocol, mosquitto)
    base = harness.config("shared", sharedsubscriptiongroup="gw")
    replicas = [EndpointConfig(base.endpoint_id, protocol, base.uris,
                               {**base.options, "clientid": f"xgate-{base.endpoint_id}-{n}"}) for n in (1, 2)]
    harness.client_ids += [str(c.options["clientid"]) for c in replicas]

    async def scenario() -> tuple[list[Envelope], list[Envelope]]:
        async with harness.create_source(replicas[0]) as one, harness.create_source(replicas[1]) as two:
            await publish(harness, base, [harness.sample(i) for i in range(20)])
            got: dict[Any, list[Envelope]] = {one: [], two: []}

            async def drain(source: Any) -> None:
                async for envelope in source:
                    got[source].append(envelope)
                    await source.ack(envelope)
                    if len(got[one]) + len(got[two]) == 20:
                        await one.stop()
                        await two.stop()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.gather(drain(one), drain(two)), 10)
            return got[one], got[two]
    try:
        got_one, got_two = run(scenario)
    finally:
        run(lambda: _forget_sessions("127.0.0.1", PORT, protocol, harness.client_ids))
    assert len(got_one) + len(got_two) == 20 and got_one and got_two


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_buffer_is_bounded_when_the_runtime_stops_pulling(protocol: str, mosquitto: str) -> None:
    harness = MqttHarness(protocol, mosquitto)
    config = harness.config("bounded", receivemaximum=50)

    async def scenario() -> tuple[int, int]:
        async with harness.create_source(config) as source:
            async with harness.create_sink(config) as sink:
                await asyncio.gather(*(sink.send(harness.sample(i)) for i in range(500)))
            await asyncio.sleep(0.5)
            buffered = len(source._ready)
            seen = 0
            async for envelope in source:
                await source.ack(envelope)
                seen += 1
                if seen == 500:
                    break
            return buffered, seen
    try:
        buffered, seen = run(scenario)
    finally:
        run(lambda: _forget_sessions("127.0.0.1", PORT, protocol, harness.client_ids))
    assert buffered <= 50 + 5 and seen == 500


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_many_concurrent_sends_are_all_confirmed_and_delivered(protocol: str, private_broker: int) -> None:
    harness = MqttHarness(protocol, f"mqtt://127.0.0.1:{private_broker}")
    config = harness.config("concurrent")
    count = 2000

    async def scenario() -> set[bytes]:
        async with harness.create_source(config) as source:
            async with harness.create_sink(config) as sink:
                await asyncio.gather(*(sink.send(Envelope(protocol, {}, b"%d" % i)) for i in range(count)))
            seen: set[bytes] = set()
            async for envelope in source:
                seen.add(envelope.body)
                await source.ack(envelope)
                if len(seen) == count:
                    break
            return seen
    try:
        seen = run(scenario)
    finally:
        run(lambda: _forget_sessions("127.0.0.1", private_broker, protocol, harness.client_ids))
    assert seen == {b"%d" % i for i in range(count)}


def test_bad_options_are_not_retriable() -> None:
    with pytest.raises(AdapterError) as caught:
        mqtt_adapter.create_sink(EndpointConfig("x", "MQTT/5.0", (BROKER,), {"topic": "a/+/b"}))
    assert not caught.value.retriable
    with pytest.raises(AdapterError):
        mqtt_adapter.create_source(EndpointConfig("x", "MQTT/5.0", (BROKER,), {}))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_source_and_sink_survive_a_broker_restart(protocol: str, private_broker: int) -> None:
    harness = MqttHarness(protocol, f"mqtt://127.0.0.1:{private_broker}")
    config = harness.config("restart", reconnectwaitmax=0.5)
    count = 3000

    async def send_all(sink: Any) -> int:
        retries = 0

        async def one(index: int) -> None:
            nonlocal retries
            while True:
                try:
                    await sink.send(Envelope(protocol, {}, b"%d" % index))
                    return
                except AdapterError as exc:
                    assert exc.retriable, exc
                    retries += 1
                    await asyncio.sleep(0.1)
        window = asyncio.Semaphore(300)

        async def bounded(index: int) -> None:
            async with window:
                await one(index)
        await asyncio.gather(*(bounded(i) for i in range(count)))
        return retries

    async def scenario() -> tuple[set[bytes], int]:
        seen: set[bytes] = set()
        async with harness.create_source(config) as source, harness.create_sink(config) as sink:
            async def consume() -> None:
                async for envelope in source:
                    seen.add(envelope.body)
                    await source.ack(envelope)
                    if len(seen) == count:
                        return
            consumer = asyncio.create_task(consume())
            producer = asyncio.create_task(send_all(sink))
            while len(seen) < count // 10:
                await asyncio.sleep(0.01)
            await asyncio.to_thread(broker_script, "restart", private_broker)
            retries = await producer
            await asyncio.wait_for(consumer, 30)
        return seen, retries
    seen, _ = run(scenario, timeout=90)
    assert seen == {b"%d" % i for i in range(count)}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_backlog_of_an_offline_session_survives_a_restart(protocol: str, private_broker: int) -> None:
    """More than Mosquitto's default queue limit (1000) waits while the gateway is away, across a broker restart;
    the resumed session's backlog arrives before the SUBACK, beyond the source's buffer limit."""
    harness = MqttHarness(protocol, f"mqtt://127.0.0.1:{private_broker}")
    config = harness.config("backlog", receivemaximum=100)
    count = 3000

    async def scenario() -> set[bytes]:
        async with harness.create_source(config):
            pass  # the session and its subscription now exist
        async with harness.create_sink(config) as sink:
            await asyncio.gather(*(sink.send(Envelope(protocol, {}, b"%d" % i)) for i in range(count)))
        await asyncio.to_thread(broker_script, "restart", private_broker)
        seen: set[bytes] = set()
        async with harness.create_source(config) as source:
            async for envelope in source:
                seen.add(envelope.body)
                await source.ack(envelope)
                if len(seen) == count:
                    break
        return seen
    assert run(scenario) == {b"%d" % i for i in range(count)}
