"""The adapter contract suite: one set of behaviours every protocol adapter must show.

A test module per protocol subclasses `ContractSuite` and provides a
`harness` fixture (an object with the `Harness` shape below) that points at a
real broker on 127.0.0.1 (or at the in-process MemoryBroker). The same tests
then run against every adapter.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Awaitable, Callable, Protocol, TypeVar

import pytest

from gateway.envelope import Envelope
from gateway.errors import AdapterError
from protocol_adapters.base import EndpointConfig

T = TypeVar("T")
WAIT = 20.0


class Harness(Protocol):
    protocol: str
    # the source redelivers what was not acknowledged (False for NATS core subscriptions and HTTP)
    at_least_once: bool

    def config(self, name: str) -> EndpointConfig:
        """An endpoint on a fresh address `name`: a sink with it publishes where a source with it reads."""

    def unreachable(self, name: str) -> EndpointConfig:
        """The same endpoint pointing at a port where nothing listens."""

    def sample(self, index: int) -> Envelope:
        """Message number `index` in this protocol's field shape, with headers/properties worth preserving."""

    def comparable(self, envelope: Envelope) -> Any:
        """What must survive sink -> broker -> source unchanged (body, headers, key, ...)."""

    def create_source(self, config: EndpointConfig) -> Any: ...

    def create_sink(self, config: EndpointConfig) -> Any: ...


def run(coro: Callable[[], Awaitable[T]], timeout: float = 60.0) -> T:
    async def bounded() -> T:
        async with asyncio.timeout(timeout):  # not wait_for: on 3.11 it can swallow a cancellation
            return await coro()
    return asyncio.run(bounded())


async def publish(harness: Harness, config: EndpointConfig, envelopes: list[Envelope]) -> None:
    async with harness.create_sink(config) as sink:
        for envelope in envelopes:
            await sink.send(envelope)


async def take(source: Any, count: int, timeout: float = WAIT) -> list[Envelope]:
    """Read `count` messages from an entered source (without acknowledging them)."""
    got: list[Envelope] = []
    iterator = source.__aiter__()

    async def reader() -> None:
        while len(got) < count:
            got.append(await iterator.__anext__())
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            await reader()
    return got


class ContractSuite:
    """Subclass in tests/contract/test_<protocol>.py and provide a `harness` fixture."""

    def test_roundtrip_preserves_what_the_protocol_carries(self, harness: Harness) -> None:
        config = harness.config("roundtrip")
        sent = [harness.sample(i) for i in range(20)]

        async def scenario() -> list[Envelope]:
            async with harness.create_source(config) as source:
                await publish(harness, config, sent)
                got = await take(source, len(sent))
                for envelope in got:
                    await source.ack(envelope)
                return got
        got = run(scenario)
        assert len(got) == len(sent)
        assert sorted(map(repr, map(harness.comparable, got))) == sorted(map(repr, map(harness.comparable, sent)))
        assert all(e.endpoint == config.endpoint_id for e in got)

    def test_unacknowledged_messages_are_delivered_again(self, harness: Harness) -> None:
        if not harness.at_least_once:
            pytest.skip(f"{harness.protocol} source is at-most-once by design (documented)")
        config = harness.config("redelivery")
        sent = [harness.sample(i) for i in range(10)]

        async def scenario() -> tuple[list[Envelope], list[Envelope]]:
            async with harness.create_source(config) as source:
                await publish(harness, config, sent)
                first = await take(source, 10)
                for envelope in first[:5]:
                    await source.ack(envelope)
            async with harness.create_source(config) as source:
                again = await take(source, 5)
                for envelope in again:
                    await source.ack(envelope)
            return first, again
        first, again = run(scenario)
        assert len(first) == 10
        acked = {repr(harness.comparable(e)) for e in first[:5]}
        unacked = {repr(harness.comparable(e)) for e in first[5:]}
        redelivered = {repr(harness.comparable(e)) for e in again}
        assert redelivered == unacked and not redelivered & acked, (sorted(redelivered - unacked), sorted(unacked - redelivered))

    def test_nack_releases_the_message_for_redelivery(self, harness: Harness) -> None:
        if not harness.at_least_once:
            pytest.skip(f"{harness.protocol} source is at-most-once by design (documented)")
        config = harness.config("nack")

        async def scenario() -> tuple[Envelope, Envelope]:
            async with harness.create_source(config) as source:
                await publish(harness, config, [harness.sample(7)])
                [first] = await take(source, 1)
                await source.nack(first)
                [second] = await take(source, 1)
                await source.ack(second)
                return first, second
        first, second = run(scenario)
        assert harness.comparable(first) == harness.comparable(second)

    def test_take_ready_hands_over_what_arrived_without_waiting(self, harness: Harness) -> None:
        """Batches: what the source already holds comes out of `take_ready` at once, each message once, and
        is acknowledged like an iterated one (nothing of it is delivered again)."""
        config = harness.config("batch")
        sent = [harness.sample(i) for i in range(40)]

        async def scenario() -> tuple[list[Envelope], int, list[Envelope]]:
            got: list[Envelope] = []
            batches = 0
            async with harness.create_source(config) as source:
                take_ready = getattr(source, "take_ready", None)
                if harness.protocol == "HTTP":
                    pytest.skip("an HTTP request is one message: the webhook hands over one at a time")
                assert take_ready is not None, f"{harness.protocol} source cannot hand over a batch"
                await publish(harness, config, sent)
                iterator = source.__aiter__()
                async with asyncio.timeout(WAIT):
                    while len(got) < len(sent):
                        got.append(await iterator.__anext__())
                        await asyncio.sleep(0.05)  # let more arrive: take_ready must not wait for any
                        more = take_ready(len(sent))
                        batches += bool(more)
                        got += more
                assert take_ready(10) == []  # nothing left: an empty list at once, never a wait
                for envelope in got:
                    await source.ack(envelope)
            again: list[Envelope] = []
            if harness.at_least_once:
                async with harness.create_source(config) as source:
                    again = await take(source, 1, timeout=2.0)
            return got, batches, again
        got, batches, again = run(scenario)
        assert sorted(map(repr, map(harness.comparable, got))) == sorted(map(repr, map(harness.comparable, sent)))
        assert batches >= 1, "every message came one at a time: take_ready never handed over a batch"
        assert again == [], "a message handed over by take_ready and acknowledged was delivered again"

    def test_stop_ends_iteration(self, harness: Harness) -> None:
        config = harness.config("stop")

        async def scenario() -> list[Envelope]:
            async with harness.create_source(config) as source:
                got: list[Envelope] = []

                async def consume() -> None:
                    async for envelope in source:
                        got.append(envelope)
                        await source.ack(envelope)
                task = asyncio.create_task(consume())
                await publish(harness, config, [harness.sample(1)])
                for _ in range(200):
                    if got:
                        break
                    await asyncio.sleep(0.05)
                await source.stop()
                await asyncio.wait_for(task, WAIT)
                return got
        assert len(run(scenario)) == 1

    def test_unreachable_broker_is_a_retriable_error(self, harness: Harness) -> None:
        config = harness.unreachable("nowhere")

        async def scenario() -> None:
            async with harness.create_sink(config) as sink:
                await sink.send(harness.sample(0))
        with pytest.raises(AdapterError) as caught:
            run(scenario, timeout=60)
        assert caught.value.retriable
