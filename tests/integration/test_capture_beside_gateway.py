"""Issue 17, defect 5: `xgate capture` reads beside the gateway on real brokers and leaves the gateway's own
consumer (JetStream durable, Kafka group) exactly as it was: nothing acknowledged, nothing committed for it."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from gateway.envelope import Envelope
from protocol_adapters import registry
from protocol_adapters.base import EndpointConfig
from tests.integration.harness import broker_connections

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
RUN = uuid.uuid4().hex[:8]
COUNT = 5


def event(number: int) -> Envelope:
    headers = [("ce-specversion", "1.0"), ("ce-id", str(number)), ("ce-source", "/capture"),
               ("ce-type", "com.example.capture"), ("content-type", "application/json")]
    return Envelope("NATS", {"headers": headers}, json.dumps({"n": number}).encode())


def write_config(directory: Path, protocol: str, options: dict[str, object], uri: str) -> None:
    directory.mkdir()
    document = {"endpoints": {"cap.in": {"usage": ["consumer"], "protocol": protocol, "envelope": "CloudEvents/1.0",
                                         "protocoloptions": {"endpoints": [{"uri": uri}], **options}}}}
    (directory / "endpoints.xreg.json").write_text(json.dumps(document))


def capture(config_dir: Path, output: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway.cli", "capture", "--config", str(config_dir), "--endpoint",
                           "cap.in", "--count", str(COUNT), "--timeout", "90", "-o", str(output)],
                          capture_output=True, text=True, cwd=REPO, timeout=150, check=False)


async def _publish(config: EndpointConfig) -> None:
    async with registry.create_sink(config) as sink:
        for number in range(COUNT):
            await sink.send(event(number))


async def _durable_state(server: str, stream: str, durable: str) -> tuple[int, int, int]:
    import nats
    client = await nats.connect(server)
    try:
        info = await client.jetstream().consumer_info(stream, durable)
        return int(info.num_pending), int(info.num_ack_pending), int(info.ack_floor.stream_seq)
    finally:
        await client.close()


async def _drop_stream(server: str, stream: str) -> None:
    import nats
    client = await nats.connect(server)
    try:
        await client.jetstream().delete_stream(stream)
    finally:
        await client.close()


def test_capture_from_jetstream_leaves_the_gateways_durable_consumer_untouched(tmp_path: Path) -> None:
    subprocess.run(["bash", str(REPO / "deploy" / "brokers" / "nats.sh"), "start"], check=True)
    server, stream = "nats://127.0.0.1:4222", f"XGATE_CAPTURE_{RUN}"
    options = {"subject": f"xgate.capture.{RUN}", "stream": stream}
    config = EndpointConfig("cap.in", "NATS", (server,), options)

    async def gateway_consumer_exists() -> None:  # what `xgate run` creates: the durable consumer, bound once
        async with registry.create_source(config):
            pass
    try:
        asyncio.run(gateway_consumer_exists())
        asyncio.run(_publish(config))
        before = asyncio.run(_durable_state(server, stream, "xgate-cap_in"))
        assert before == (COUNT, 0, 0)
        write_config(tmp_path / "cfg", "NATS", options, server)
        result = capture(tmp_path / "cfg", tmp_path / "captured.jsonl")
        assert result.returncode == 0, result.stderr
        assert len((tmp_path / "captured.jsonl").read_text().splitlines()) == COUNT
        assert asyncio.run(_durable_state(server, stream, "xgate-cap_in")) == before
    finally:
        asyncio.run(_drop_stream(server, stream))


def kafka_server() -> str:
    for port in (9092, 19092):
        try:
            with socket.create_connection(("127.0.0.1", port), 1):
                return f"127.0.0.1:{port}"
        except OSError:
            continue
    pytest.skip("no Kafka API on 127.0.0.1:9092 or :19092 (make brokers)")


async def _committed(server: str, topic: str, group: str) -> object:
    from aiokafka import AIOKafkaConsumer, TopicPartition  # type: ignore[import-untyped]
    consumer = AIOKafkaConsumer(bootstrap_servers=server, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        return await consumer.committed(TopicPartition(topic, 0))
    finally:
        await consumer.stop()


def test_capture_from_kafka_never_commits_for_the_gateways_group(tmp_path: Path) -> None:
    server = kafka_server()
    topic, group = f"xgate-capture-{RUN}", f"xgate-gateway-{RUN}"
    options = {"topic": topic, "consumergroup": group}
    asyncio.run(_publish(EndpointConfig("cap.out", "KAFKA", (server,), {"topic": topic})))
    write_config(tmp_path / "cfg", "KAFKA", options, server)
    result = capture(tmp_path / "cfg", tmp_path / "captured.jsonl")
    assert result.returncode == 0, result.stderr
    assert len((tmp_path / "captured.jsonl").read_text().splitlines()) == COUNT
    assert asyncio.run(_committed(server, topic, group)) is None


def _await_connection(pid: int, port: int, timeout: float) -> None:
    """Until process `pid` holds an established connection to 127.0.0.1:`port` (polled)."""
    deadline = time.monotonic() + timeout
    while not broker_connections(pid, port):
        assert time.monotonic() < deadline, f"process {pid} did not connect to port {port} within {timeout} s"
        time.sleep(0.1)


def test_capture_from_mqtt_does_not_join_the_gateways_shared_subscription(tmp_path: Path) -> None:
    subprocess.run(["bash", str(REPO / "deploy" / "brokers" / "mosquitto.sh"), "start"], check=True)
    server = "mqtt://127.0.0.1:1883"
    topic = f"xgate/capture/{RUN}"
    options = {"topic_name": topic, "sharedsubscriptiongroup": f"gw{RUN}", "qos": 1}
    config = EndpointConfig("cap.in", "MQTT/5.0", (server,), options)
    write_config(tmp_path / "cfg", "MQTT/5.0", options, server)

    async def scenario() -> int:
        async with registry.create_source(config) as gateway:  # the gateway's member of the shared group
            reader = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "gateway.cli", "capture", "--config", str(tmp_path / "cfg"), "--endpoint",
                "cap.in", "--count", str(COUNT), "--timeout", "60", "-o", str(tmp_path / "captured.jsonl"),
                cwd=REPO, stderr=asyncio.subprocess.PIPE)
            # the capture's subscription in place (its interpreter starts first): its client subscribes as soon as
            # it is connected, so wait for its connection to the broker, then two seconds for the SUBSCRIBE to be
            # served; a capture not yet subscribed would miss messages and fail the line count below
            await asyncio.to_thread(_await_connection, reader.pid, 1883, 60)
            await asyncio.sleep(2)
            await _publish(EndpointConfig("cap.out", "MQTT/5.0", (server,), {"topic_name": topic, "qos": 1}))
            got = 0
            async with asyncio.timeout(30):
                async for envelope in gateway:
                    await gateway.ack(envelope)
                    got += 1
                    if got == COUNT:
                        break
            _, stderr = await asyncio.wait_for(reader.communicate(), 90)
            assert reader.returncode == 0, stderr.decode()
            return got
    assert asyncio.run(scenario()) == COUNT  # the gateway still gets every message, none taken by the capture
    assert len((tmp_path / "captured.jsonl").read_text().splitlines()) == COUNT
