"""The contract suite against the NATS adapter on a real nats-server (deploy/brokers/nats.sh), in both modes.

- JetStream (option `stream`): durable pull consumer with explicit ack, at-least-once: the whole suite runs.
- Core NATS (no `stream`): a plain subscription, at-most-once by design, so the redelivery tests are skipped.

Beyond the suite: repeated headers and binary bodies survive, many concurrent sends are confirmed, and a
JetStream source and sink ride out a restart of a private nats-server (its own port and store) mid-stream
without losing a message.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import pytest

from gateway.envelope import Envelope
from gateway.errors import AdapterError
from protocol_adapters import nats as nats_adapter
from protocol_adapters.base import EndpointConfig
from tests.conftest import free_port
from tests.contract.suite import ContractSuite, publish, run, take

pytestmark = pytest.mark.integration  # a real broker on 127.0.0.1

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "deploy" / "brokers" / "nats.sh"
PORT = int(os.environ.get("XGATE_NATS_PORT", "4222"))
SERVER = f"nats://127.0.0.1:{PORT}"
STREAM_PREFIX = f"XGATE_CONTRACT_{uuid.uuid4().hex[:8]}"


async def _jetstream_status(server: str) -> str | None:
    """None when JetStream answers on `server`, else why not."""
    client = await nats.connect(server, connect_timeout=2, max_reconnect_attempts=1, reconnect_time_wait=0)
    try:
        await client.jetstream().account_info()
        return None
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        await client.close()


async def _delete_streams(server: str, prefix: str) -> None:
    client = await nats.connect(server, connect_timeout=2, max_reconnect_attempts=1, reconnect_time_wait=0)
    try:
        js = client.jetstream()
        for info in await js.streams_info():
            if info.config.name and info.config.name.startswith(prefix):
                await js.delete_stream(info.config.name)
    finally:
        await client.close()


@pytest.fixture(scope="module")
def nats_server() -> Iterator[str]:
    subprocess.run(["bash", str(SCRIPT), "start"], check=True, cwd=REPO)
    yield SERVER
    with contextlib.suppress(Exception):
        run(lambda: _delete_streams(SERVER, STREAM_PREFIX), timeout=20)


@pytest.fixture(scope="module")
def jetstream_server(nats_server: str) -> str:
    reason = run(lambda: _jetstream_status(nats_server), timeout=20)
    if reason is not None:
        pytest.fail(f"JetStream is not enabled on the nats-server at {nats_server} ({reason}): restart it with -js "
                    f"(or stop it so deploy/brokers/nats.sh starts one with JetStream)")
    return nats_server


class NatsHarness:
    protocol = "NATS"

    def __init__(self, server: str, *, jetstream: bool) -> None:
        self.server = server
        self.jetstream = jetstream
        self.at_least_once = jetstream
        self.run_id = uuid.uuid4().hex[:8]

    def options(self, name: str) -> dict[str, Any]:
        options: dict[str, Any] = {"subject": f"xgate.contract.{self.run_id}.{name}"}
        if self.jetstream:
            options.update(stream=f"{STREAM_PREFIX}_{self.run_id}_{name}", fetchtimeout=0.5)
        return options

    def config(self, name: str) -> EndpointConfig:
        return EndpointConfig(f"contract-{name}", "NATS", (self.server,), self.options(name))

    def unreachable(self, name: str) -> EndpointConfig:
        return EndpointConfig(f"contract-{name}", "NATS", (f"nats://127.0.0.1:{free_port()}",), self.options(name))

    def sample(self, index: int) -> Envelope:
        headers = [("Content-Type", "application/json"), ("ce-id", f"id-{index}"), ("X-Tag", "a"),
                   ("x-tag", "b"), ("X-Tag", "c"), ("X-Text", "café €")]
        body = b'{"n": %d}' % index + bytes(range(256))
        fields = {"subject": "ignored.by.the.sink", "reply-to": f"reply.{index}", "headers": headers}
        return Envelope("NATS", fields, body)

    def comparable(self, envelope: Envelope) -> Any:
        # core NATS carries the reply subject; JetStream stores none (its reply subject is the ack subject)
        reply = None if self.jetstream else envelope.fields.get("reply-to")
        return envelope.body, envelope.fields["headers"], reply

    create_source = staticmethod(nats_adapter.create_source)
    create_sink = staticmethod(nats_adapter.create_sink)


class NatsChecks:
    """NATS-specific behaviour, run in both modes."""

    def test_subject_position_and_repeated_headers(self, harness: NatsHarness) -> None:
        config = harness.config("fields")

        async def scenario() -> Envelope:
            async with harness.create_source(config) as source:
                await publish(harness, config, [harness.sample(3)])
                [got] = await take(source, 1)
                await source.ack(got)
                return got
        got = run(scenario)
        subject = config.options["subject"]
        assert got.fields["subject"] == subject
        assert [v for n, v in got.fields["headers"] if n.lower() == "x-tag"] == ["a", "b", "c"]
        if harness.jetstream:
            assert got.position["subject"] == subject and got.position["stream"] == config.options["stream"]
            assert got.position["stream_seq"] == 1
        else:
            assert got.position == {"subject": subject} and got.fields["reply-to"] == "reply.3"

    def test_concurrent_sends_are_all_confirmed(self, harness: NatsHarness) -> None:
        config = harness.config("concurrent")
        count = 2000

        async def scenario() -> set[bytes]:
            seen: set[bytes] = set()
            async with harness.create_source(config) as source:
                async def consume() -> None:  # acking as it goes, as the runtime does (max_ack_pending)
                    async for envelope in source:
                        seen.add(envelope.body)
                        await source.ack(envelope)
                        if len(seen) == count:
                            await source.stop()
                consumer = asyncio.create_task(consume())
                async with harness.create_sink(config) as sink:
                    await asyncio.gather(*(sink.send(Envelope("NATS", {"headers": [("i", str(i))]}, b"%d" % i))
                                           for i in range(count)))
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(consumer, 20)
            return seen
        assert run(scenario) == {b"%d" % i for i in range(count)}


class TestNatsJetStream(ContractSuite, NatsChecks):
    @pytest.fixture
    def harness(self, jetstream_server: str) -> NatsHarness:
        return NatsHarness(jetstream_server, jetstream=True)


class TestNatsCore(ContractSuite, NatsChecks):
    @pytest.fixture
    def harness(self, nats_server: str) -> NatsHarness:
        return NatsHarness(nats_server, jetstream=False)


@pytest.fixture
def private_server(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """A nats-server of its own (port and store) that the test may restart."""
    env = {**os.environ, "XGATE_NATS_PORT": str(free_port()), "XGATE_BROKER_STATE": str(tmp_path / "brokers")}
    subprocess.run(["bash", str(SCRIPT), "start"], check=True, cwd=REPO, env=env)
    try:
        yield f"nats://127.0.0.1:{env['XGATE_NATS_PORT']}", env
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], check=False, cwd=REPO, env=env)


def test_jetstream_survives_a_broker_restart_mid_stream(private_server: tuple[str, dict[str, str]]) -> None:
    server, env = private_server
    harness = NatsHarness(server, jetstream=True)
    config = harness.config("restart")
    # a message delivered while the server went down is redelivered after ackwait: keep that short here
    config = EndpointConfig(config.endpoint_id, "NATS", config.uris, {**config.options, "ackwait": 3})
    total = 300

    async def send_retrying(sink: Any, envelope: Envelope) -> None:
        while True:  # what the runtime does with a retriable error
            try:
                await sink.send(envelope)
                return
            except AdapterError as exc:
                assert exc.retriable, exc
                await asyncio.sleep(0.2)

    async def scenario() -> tuple[set[bytes], int]:
        seen: set[bytes] = set()
        async with harness.create_source(config) as source, harness.create_sink(config) as sink:
            async def consume() -> None:
                async for envelope in source:
                    await asyncio.sleep(0.005)  # slow enough to be mid-stream when the server goes
                    seen.add(envelope.body)
                    await source.ack(envelope)
                    if len(seen) == total:
                        await source.stop()
            consumer = asyncio.create_task(consume())
            for i in range(total // 2):
                await send_retrying(sink, Envelope("NATS", {}, b"%d" % i))
            while len(seen) < 20:
                await asyncio.sleep(0.01)
            await asyncio.to_thread(subprocess.run, ["bash", str(SCRIPT), "restart"], check=True, cwd=REPO, env=env)
            for i in range(total // 2, total):
                await send_retrying(sink, Envelope("NATS", {}, b"%d" % i))
            await asyncio.wait_for(consumer, 45)
            reconnects = min(client.stats["reconnects"] for client in (source._client, sink._client) if client)
        return seen, reconnects
    seen, reconnects = run(scenario, timeout=90)
    assert reconnects >= 1  # both really lost their connection and came back
    assert seen == {b"%d" % i for i in range(total)}
