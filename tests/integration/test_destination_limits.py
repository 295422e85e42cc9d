"""Issue 17, defect 1: a message that fits its source but overflows a real destination once the xgate-* headers
are added settles on its own (dead-lettered with `xgate-error`, or dropped and counted), and conformant traffic
keeps flowing to that destination over the same connection.

The source is the in-process broker (a real implementation of the source contract, with a size limit of its
own); every destination is a real broker or server on 127.0.0.1: the shared NATS (max_payload from its INFO),
Kafka with the producer's max_request_size, a private Mosquitto with `max_packet_size` (MQTT 5 CONNACK) and an
aiohttp server that answers 413.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from gateway.compiler import compile_registry
from gateway.envelope import Envelope
from gateway.loader import load_snapshot
from gateway.routes.resolve import Route
from gateway.runtime.engine import Engine
from gateway.testing import memory
from protocol_adapters import registry
from protocol_adapters.base import EndpointConfig
from tests.conftest import free_port
from tests.unit.runtime.test_pipeline import REGISTRY, message

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
RUN = uuid.uuid4().hex[:8]
FOLLOWING = 20  # conformant messages after the oversized one


def create_source(config: EndpointConfig) -> Any:
    return memory.create_source(config)


def create_sink(config: EndpointConfig) -> Any:
    return memory.create_sink(config) if config.protocol == "MEMORY" else registry.create_sink(config)


def padded(kind: str, number: int, size: int) -> Envelope:
    """A message whose body is `size` bytes (JSON: the schema's `v` plus padding)."""
    envelope = message(kind, number)
    body = json.loads(envelope.body)
    body["pad"] = ""
    bare = len(json.dumps(body).encode())
    body["pad"] = "x" * (size - bare)
    encoded = json.dumps(body).encode()
    assert len(encoded) == size
    return Envelope(envelope.protocol, envelope.fields, encoded)


def source_size(envelope: Envelope) -> int:
    return len(envelope.body) + sum(len(n) + len(v) for n, v in envelope.fields["headers"])


def run_route(tmp_path: Path, valid: EndpointConfig, dlq: EndpointConfig, first: Envelope,
              timeout: float = 60) -> Engine:
    """`first`, then FOLLOWING conformant messages, through one route; returns once the source is empty."""
    (tmp_path / "registry.json").write_text(json.dumps(REGISTRY))
    ruleset = compile_registry(load_snapshot([tmp_path]).registry)
    name = f"limits-{uuid.uuid4().hex[:8]}"
    broker = memory.memory_broker(name)
    broker.max_bytes["in"] = source_size(first) + 1  # the source takes it: one byte to spare
    for envelope in [first] + [message("ok", n) for n in range(1, FOLLOWING + 1)]:
        broker.publish("in", envelope)
    source = EndpointConfig("in", "MEMORY", (f"memory://{name}",), {"queue": "in"})
    route = Route(source, valid, dlq, dlq, "forward", 10)
    engine = Engine([route], ruleset, create_source=create_source, create_sink=create_sink)

    async def main() -> None:
        task = asyncio.create_task(engine.run())
        try:
            async with asyncio.timeout(timeout):
                while broker.depth("in"):
                    await asyncio.sleep(0.05)
        finally:
            engine.request_stop()
            await asyncio.wait_for(task, 30)
    try:
        asyncio.run(main())
    except TimeoutError:
        pytest.fail(f"the route wedged: {broker.depth('in')} messages still at the source after {timeout} s")
    return engine


def value(engine: Engine, name: str, **labels: str) -> float:
    return engine.metrics.registry.get_sample_value(name, labels) or 0.0


def assert_dropped_then_flowing(engine: Engine, valid: str, dlq: str) -> None:
    assert value(engine, "xgate_undeliverable_messages_total", endpoint="in", destination=dlq, cause="too-large") == 1
    assert value(engine, "xgate_routed_messages_total", endpoint="in", destination=valid,
                 action="forwarded") == FOLLOWING


# --- NATS: max_payload from the server's INFO -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def nats_server() -> str:
    subprocess.run(["bash", str(REPO / "deploy" / "brokers" / "nats.sh"), "start"], check=True)
    return "nats://127.0.0.1:4222"


async def _max_payload(server: str) -> int:
    import nats
    client = await nats.connect(server)
    try:
        return int(client.max_payload)
    finally:
        await client.close()


async def _jetstream_count(server: str, stream: str) -> int:
    import nats
    client = await nats.connect(server)
    try:
        info = await client.jetstream().stream_info(stream)
        await client.jetstream().delete_stream(stream)
        return int(info.state.messages)
    finally:
        await client.close()


def nats_config(server: str, name: str) -> EndpointConfig:
    return EndpointConfig(f"nats-{name}", "NATS", (server,),
                          {"subject": f"xgate.limits.{RUN}.{name}", "stream": f"XGATE_LIMITS_{RUN}_{name}"})


def test_nats_dead_letter_overflowed_by_xgate_headers_is_dropped_and_counted(nats_server: str, tmp_path: Path) -> None:
    limit = asyncio.run(_max_payload(nats_server))
    # under max_payload with its own headers (NATS counts them too), over it once xgate-* headers are added
    first = padded("invalid", 0, limit - 400)
    valid, dlq = nats_config(nats_server, "valid"), nats_config(nats_server, "dlq")
    engine = run_route(tmp_path, valid, dlq, first)
    assert_dropped_then_flowing(engine, "nats-valid", "nats-dlq")
    assert asyncio.run(_jetstream_count(nats_server, str(valid.options["stream"]))) == FOLLOWING
    assert asyncio.run(_jetstream_count(nats_server, str(dlq.options["stream"]))) == 0


def test_nats_too_large_for_its_destination_goes_to_the_dead_letter_with_the_cause(
        nats_server: str, tmp_path: Path) -> None:
    limit = asyncio.run(_max_payload(nats_server))
    first = padded("ok", 0, limit - 20)  # within the gateway's own body limit; with its headers over max_payload
    valid = EndpointConfig("nats-valid", "NATS", (nats_server,), {"subject": f"xgate.limits.{RUN}.core"})
    name = f"limits-dlq-{uuid.uuid4().hex[:8]}"
    dlq = EndpointConfig("dlq", "MEMORY", (f"memory://{name}",), {"queue": "dlq"})
    engine = run_route(tmp_path, valid, dlq, first)
    [letter] = [e for _, e in memory.memory_broker(name).queue("dlq").ready]
    assert letter.body == first.body
    assert b"max_payload" in dict(letter.fields["headers"])["xgate-error"]
    assert value(engine, "xgate_routed_messages_total", endpoint="in", destination="nats-valid",
                 action="forwarded") == FOLLOWING


# --- Kafka: the producer's max_request_size -------------------------------------------------------------------------

def kafka_server() -> str:
    for port in (9092, 19092):
        with contextlib.suppress(OSError), __import__("socket").create_connection(("127.0.0.1", port), 1):
            return f"127.0.0.1:{port}"
    pytest.skip("no Kafka API on 127.0.0.1:9092 or :19092 (make brokers)")


def test_kafka_record_over_max_request_size_is_dropped_and_counted(tmp_path: Path) -> None:
    server = kafka_server()
    options = {"max_request_size": 20000, "linger_ms": 0}
    valid = EndpointConfig("kafka-valid", "KAFKA", (server,), {"topic": f"xgate-limits-{RUN}-valid", **options})
    dlq = EndpointConfig("kafka-dlq", "KAFKA", (server,), {"topic": f"xgate-limits-{RUN}-dlq", **options})
    first = padded("invalid", 0, 19600)
    engine = run_route(tmp_path, valid, dlq, first, timeout=120)
    assert_dropped_then_flowing(engine, "kafka-valid", "kafka-dlq")


# --- MQTT 5: a private Mosquitto with max_packet_size -----------------------------------------------------------------

@pytest.fixture
def small_mosquitto(tmp_path: Path) -> Iterator[str]:
    if shutil.which("mosquitto") is None:
        pytest.skip("mosquitto not installed (make brokers)")
    port = free_port()
    conf = tmp_path / "mosquitto.conf"
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\nmax_packet_size 20000\npersistence false\n")
    process = subprocess.Popen(["mosquitto", "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            with contextlib.suppress(OSError), __import__("socket").create_connection(("127.0.0.1", port), 0.2):
                break
            asyncio.run(asyncio.sleep(0.05))
        yield f"mqtt://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


def test_mqtt5_publish_over_the_brokers_maximum_packet_size_is_dropped_and_counted(
        small_mosquitto: str, tmp_path: Path) -> None:
    valid = EndpointConfig("mqtt-valid", "MQTT/5.0", (small_mosquitto,), {"topic_name": f"xgate/limits/{RUN}/valid"})
    dlq = EndpointConfig("mqtt-dlq", "MQTT/5.0", (small_mosquitto,), {"topic_name": f"xgate/limits/{RUN}/dlq"})
    first = padded("invalid", 0, 19900)
    engine = run_route(tmp_path, valid, dlq, first)
    assert_dropped_then_flowing(engine, "mqtt-valid", "mqtt-dlq")


# --- HTTP: 413 from the destination ---------------------------------------------------------------------------------

@pytest.fixture
def small_webhook() -> Iterator[str]:
    port = free_port()
    received: list[int] = []

    async def accept(request: web.Request) -> web.Response:
        received.append(len(await request.read()))
        return web.Response(status=202)

    ready = __import__("threading").Event()
    stop: list[Any] = []

    def serve() -> None:
        async def main() -> None:
            app = web.Application(client_max_size=20000)
            app.router.add_post("/{name}", accept)
            runner = web.AppRunner(app)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", port).start()
            done = asyncio.Event()
            stop.append((asyncio.get_running_loop(), done))
            ready.set()
            await done.wait()
            await runner.cleanup()
        asyncio.run(main())

    thread = __import__("threading").Thread(target=serve, daemon=True)
    thread.start()
    ready.wait(10)
    yield f"http://127.0.0.1:{port}"
    loop, done = stop[0]
    loop.call_soon_threadsafe(done.set)
    thread.join(10)


def test_http_413_is_dropped_and_counted(small_webhook: str, tmp_path: Path) -> None:
    valid = EndpointConfig("http-valid", "HTTP", (f"{small_webhook}/valid",), {})
    dlq = EndpointConfig("http-dlq", "HTTP", (f"{small_webhook}/dlq",), {})
    # HTTP carries headers apart from the body: a body over the server's limit, refused at both destinations
    first = padded("ok", 0, 20100)
    engine = run_route(tmp_path, valid, dlq, first)
    assert_dropped_then_flowing(engine, "http-valid", "http-dlq")
    assert value(engine, "xgate_routed_messages_total", endpoint="in", destination="http-valid", action="dropped") == 1


def test_nats_sink_rebuilds_a_client_the_server_closed(nats_server: str) -> None:
    """nats-server ends a connection over a payload beyond max_payload and nats-py goes to CLOSED for good: the
    sink's next send opens a new client instead of failing forever."""
    config = EndpointConfig("nats-closed", "NATS", (nats_server,), {"subject": f"xgate.limits.{RUN}.closed"})

    async def scenario() -> bool:
        import nats
        async with registry.create_sink(config) as sink:
            client = sink._client  # the violation goes around the sink's own size check, as another bug might
            assert client is not None
            client._max_payload = 2 * client.max_payload  # nats-py would refuse it before the server can
            with contextlib.suppress(Exception):
                await client.publish(str(config.options["subject"]), b"x" * (client.max_payload // 2 + 1))
                await client.flush(timeout=5)
            for _ in range(100):
                if client.is_closed:
                    break
                await asyncio.sleep(0.1)
            closed = client.is_closed
            receiver = await nats.connect(nats_server)
            try:
                got = await receiver.subscribe(str(config.options["subject"]))
                await receiver.flush()
                await sink.send(message("ok", 1))
                await got.next_msg(timeout=5)
            finally:
                await receiver.close()
            return closed
    assert asyncio.run(scenario()), "the server did not close the client: the test proves nothing"
