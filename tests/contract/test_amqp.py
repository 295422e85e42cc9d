"""The contract suite and AMQP-specific behaviours against RabbitMQ 3.10 with its AMQP 1.0 plugin on 127.0.0.1:5672.

The broker is started (or reused) by deploy/brokers/rabbitmq.sh; the restart test restarts a node of its own
(tests/rabbitmq_node.py), never the shared one. Every run uses fresh queue names; test queues
are named `xgate-test-*` and a best-effort policy lets RabbitMQ delete them after ten unused minutes.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from gateway.envelope import Envelope
from gateway.errors import AdapterError
from protocol_adapters.amqp import create_sink, create_source
from protocol_adapters.base import EndpointConfig
from tests.conftest import free_port
from tests.contract.suite import ContractSuite, publish, run, take

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "deploy" / "brokers" / "rabbitmq.sh"
URI = "amqp://127.0.0.1:5672"
TEST_QUEUE_PREFIX = "xgate-test-"


@pytest.fixture(scope="module", autouse=True)
def rabbitmq() -> None:
    subprocess.run(["bash", str(SCRIPT), "start"], check=True, timeout=300)
    # best effort: test queues expire after 10 unused minutes (rabbitmqctl needs root or the rabbitmq user)
    subprocess.run(["rabbitmqctl", "set_policy", "--apply-to", "queues", "xgate-test-expiry",
                    f"^{TEST_QUEUE_PREFIX}", '{"expires": 600000}'], capture_output=True, timeout=60, check=False)


class AmqpHarness:
    protocol = "AMQP/1.0"
    at_least_once = True

    def __init__(self, uri: str = URI) -> None:
        self.run_id = uuid.uuid4().hex[:10]
        self.uri = uri

    def node(self, name: str) -> str:
        return f"/queue/{TEST_QUEUE_PREFIX}{name}-{self.run_id}"

    def config(self, name: str, **options: Any) -> EndpointConfig:
        return EndpointConfig(f"amqp-{name}", self.protocol, (self.uri,),
                              {"node": self.node(name), "reconnectdelay": 0.05, "reconnectmaxdelay": 1.0, **options},
                              username="guest", password="guest")

    def unreachable(self, name: str) -> EndpointConfig:
        return EndpointConfig(f"amqp-{name}", self.protocol, (f"amqp://127.0.0.1:{free_port()}",),
                              {"node": self.node(name)}, username="guest", password="guest")

    def sample(self, index: int) -> Envelope:
        # RabbitMQ fills in properties.subject (the queue name) on a message without a properties section,
        # so every sample carries one
        fields = {
            "properties": {"message-id": f"m-{index}", "subject": "com.example.sample", "user-id": b"guest",
                           "content-type": "application/json", "correlation-id": index,
                           "creation-time": dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=dt.UTC)},
            "application-properties": {"cloudEvents_id": f"id-{index}", "count": index, "flag": index % 2 == 0,
                                       "raw": bytes([0, 255, index % 256]), "ratio": index / 4},
            "message-annotations": {"x-opt-origin": "contract"},
            "header": {"priority": 5, "durable": True},
            "footer": {"x-opt-checksum": b"\x01\x02"},
        }
        return Envelope(self.protocol, fields, f'{{"n": {index}}}'.encode())

    def comparable(self, envelope: Envelope) -> Any:
        fields = dict(envelope.fields)
        # set by the broker on delivery, not by the sender
        fields["header"] = {k: v for k, v in (fields.get("header") or {}).items()
                            if k not in ("first-acquirer", "delivery-count")}
        # sections as sorted pairs: the suite compares reprs, and the wire order of fields is the spec's
        return envelope.body, sorted((name, sorted(section.items(), key=repr)) for name, section in fields.items())

    create_source = staticmethod(create_source)
    create_sink = staticmethod(create_sink)


@pytest.fixture
def harness() -> AmqpHarness:
    return AmqpHarness()


class TestAmqpAdapter(ContractSuite):
    pass


def test_credit_is_the_backpressure(harness: AmqpHarness) -> None:
    config = harness.config("credit", prefetch=5)

    async def scenario() -> tuple[int, int]:
        await publish(harness, config, [harness.sample(i) for i in range(12)])
        async with create_source(config) as source:
            first = await take(source, 12, timeout=1.5)  # nothing acked: the broker stops at 5
            for envelope in first:
                await source.ack(envelope)
            rest: list[Envelope] = []
            async for envelope in source:  # each ack gives one credit back
                rest.append(envelope)
                await source.ack(envelope)
                if len(rest) == 7:
                    break
            return len(first), len(rest)
    assert run(scenario, timeout=30) == (5, 7)


def test_concurrent_sends_are_pipelined_and_all_confirmed(harness: AmqpHarness) -> None:
    config = harness.config("burst", prefetch=100)
    count = 1000

    async def scenario() -> set[bytes]:
        async with create_sink(config) as sink:
            await asyncio.gather(*(sink.send(Envelope(harness.protocol, {"properties": {"subject": "b"}},
                                                      str(i).encode())) for i in range(count)))
        got: set[bytes] = set()
        async with create_source(config) as source:
            async for envelope in source:
                got.add(envelope.body)
                await source.ack(envelope)
                if len(got) == count:
                    break
        return got
    assert run(scenario) == {str(i).encode() for i in range(count)}


def test_a_message_the_broker_refuses_is_not_retriable_and_the_sink_goes_on(harness: AmqpHarness) -> None:
    config = harness.config("refused")

    async def scenario() -> tuple[AdapterError, list[Envelope]]:
        async with create_sink(config) as sink:
            # RabbitMQ ends the session when user-id is not the authenticated user
            with pytest.raises(AdapterError) as caught:
                await sink.send(Envelope(harness.protocol, {"properties": {"user-id": b"mallory"}}, b"bad"))
            for _ in range(100):  # the sink reconnects by itself; meanwhile sends fail retriably
                try:
                    await sink.send(harness.sample(1))
                    break
                except AdapterError as exc:
                    assert exc.retriable
                    await asyncio.sleep(0.05)
        async with create_source(config) as source:
            got = await take(source, 1)
            for envelope in got:
                await source.ack(envelope)
        return caught.value, got
    error, got = run(scenario)
    assert not error.retriable and "user_id" in str(error)
    assert [harness.comparable(e) for e in got] == [harness.comparable(harness.sample(1))]


def test_bad_credentials_are_not_retriable(harness: AmqpHarness) -> None:
    config = EndpointConfig("amqp-badauth", harness.protocol, (URI,), {"node": harness.node("badauth")},
                            username="guest", password="not-the-password")

    async def scenario() -> None:
        async with create_sink(config) as sink:
            await sink.send(harness.sample(0))
    with pytest.raises(AdapterError) as caught:
        run(scenario)
    assert not caught.value.retriable and "unauthorized" in str(caught.value)


@pytest.mark.skipif(os.environ.get("XGATE_SKIP_BROKER_RESTART") == "1", reason="broker restarts disabled")
def test_survives_a_broker_restart_mid_stream(private_rabbitmq_node: dict[str, str]) -> None:
    """Messages published before, during and after a restart all arrive (duplicates allowed, no loss)."""
    harness = AmqpHarness(f"amqp://127.0.0.1:{private_rabbitmq_node['XGATE_RABBITMQ_PORT']}")
    config = harness.config("restart", prefetch=20, sendtimeout=5.0)
    total = 300

    async def send_all(sink: Any) -> None:
        for i in range(total):
            while True:
                try:
                    await sink.send(Envelope(harness.protocol, {"properties": {"subject": "r"}}, str(i).encode()))
                    break
                except AdapterError as exc:
                    assert exc.retriable, exc
                    await asyncio.sleep(0.1)
            if i == total // 3:
                restart = asyncio.create_subprocess_exec("bash", str(SCRIPT), "restart",
                                                         env={**os.environ, **private_rabbitmq_node})
                process = await restart
                pending.append(process)

    async def scenario() -> set[bytes]:
        seen: set[bytes] = set()
        async with create_sink(config) as sink, create_source(config) as source:
            producer = asyncio.create_task(send_all(sink))
            deadline = time.monotonic() + 90
            async for envelope in source:
                seen.add(envelope.body)
                await source.ack(envelope)
                if len(seen) == total or time.monotonic() > deadline:
                    break
            await producer
            for process in pending:
                assert await process.wait() == 0
        return seen

    pending: list[Any] = []
    seen = run(scenario, timeout=150)
    assert seen == {str(i).encode() for i in range(total)}
