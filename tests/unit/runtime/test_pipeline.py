"""The service loop on the in-process broker: routing per policy, ack after delivery, backpressure, draining."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from gateway.compiler import Ruleset, compile_registry
from gateway.compiler.core import NativeJudge
from gateway.envelope import Envelope
from gateway.errors import AdapterError
from gateway.loader import load_snapshot
from gateway.metrics import names
from gateway.routes.resolve import Route
from gateway.runtime.engine import Engine
from gateway.runtime.pipeline import BATCH_MAX, JUDGE_ATTEMPTS
from gateway.runtime.recent import RecentTraffic
from gateway.testing import memory
from protocol_adapters.base import EndpointConfig

_brokers = itertools.count()
SCHEMA = {"type": "object", "required": ["v"], "properties": {"v": {"type": "integer"}}}
REGISTRY = {"endpoints": {"in": {"usage": ["consumer"], "protocol": "KAFKA", "envelope": "CloudEvents/1.0",
                                 "messages": {"reading": {
                                     "envelope": "CloudEvents/1.0",
                                     "envelopemetadata": {"type": {"value": "com.example.reading"}},
                                     "dataschemaformat": "JsonSchema/draft-07", "dataschema": SCHEMA}}}}}


def message(kind: str, number: int) -> Envelope:
    headers = [("ce_specversion", b"1.0"), ("ce_id", str(number).encode()), ("ce_source", b"/s"),
               ("ce_type", b"com.example.reading" if kind != "unknown" else b"com.example.other"),
               ("content-type", b"application/json"), ("trace", f"t{number}".encode())]
    body = {"v": number} if kind != "invalid" else {"v": "not a number"}
    return Envelope("KAFKA", {"topic": "in", "key": f"k{number}".encode(), "headers": headers},
                    json.dumps(body).encode())


def reference_ruleset(folder: Path) -> Ruleset:
    """REGISTRY written into `folder` and compiled: the route tests' and the native core tests' ruleset."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "registry.json").write_text(json.dumps(REGISTRY))
    return compile_registry(load_snapshot([folder]).registry)


@pytest.fixture
def world(tmp_path: Path) -> Any:
    (tmp_path / "registry.json").write_text(json.dumps(REGISTRY))
    snapshot = load_snapshot([tmp_path])
    name = f"pipeline-{next(_brokers)}"
    broker = memory.memory_broker(name)
    assert broker.depth("in") == 0

    def config(queue: str) -> EndpointConfig:
        return EndpointConfig(queue, "MEMORY", (f"memory://{name}",), {"queue": queue})

    class World:
        ruleset = compile_registry(snapshot.registry)
        broker = memory.memory_broker(name)

        def route(self, policy: str = "forward", inflight: int = 100, **destinations: str | None) -> Route:
            picked = {"conformant": "valid", "nonconformant": "dlq", "unmatched": "unknown", **destinations}
            return Route(config("in"), *(config(picked[r]) if picked[r] else None
                                         for r in ("conformant", "nonconformant", "unmatched")), policy, inflight)

        def publish(self, envelopes: list[Envelope]) -> None:
            for envelope in envelopes:
                broker.publish("in", envelope)

        def delivered(self, queue: str) -> list[Envelope]:
            return [e for _, e in broker.queue(queue).ready]

    return World()


def run_until(engine: Engine, done: Any, timeout: float = 10.0) -> None:
    async def main() -> None:
        task = asyncio.create_task(engine.run())
        for _ in range(int(timeout / 0.01)):
            if done():
                break
            await asyncio.sleep(0.01)
        engine.request_stop()
        await asyncio.wait_for(task, timeout)
    asyncio.run(main())


def test_conformant_messages_keep_their_order_across_batches_of_one_and_of_several_destinations(world: Any) -> None:
    # a window wider than a batch: the first BATCH_MAX messages (one dead letter among them: two destinations)
    # and the three after them become two batches handed over at once, the second with one destination only
    traffic = [message("invalid" if n == 5 else "ok", n) for n in range(BATCH_MAX + 3)]
    world.publish(traffic)
    engine = Engine([world.route(inflight=BATCH_MAX * 2)], world.ruleset, create_source=memory.create_source,
                    create_sink=memory.create_sink)
    run_until(engine, lambda: world.broker.depth("in") == 0 and len(world.delivered("valid")) == len(traffic) - 1)
    assert [e.fields["key"] for e in world.delivered("valid")] == [e.fields["key"] for e in traffic
                                                                   if e.fields["key"] != b"k5"]
    assert len(world.delivered("dlq")) == 1


def test_forward_routes_each_verdict_and_acks_only_after_delivery(world: Any) -> None:
    traffic = [message(kind, n) for n, kind in enumerate(["ok", "invalid", "unknown"] * 10)]
    world.publish(traffic)
    engine = Engine([world.route()], world.ruleset, create_source=memory.create_source,
                    create_sink=memory.create_sink)
    run_until(engine, lambda: world.broker.depth("in") == 0)
    valid, dlq, unknown = world.delivered("valid"), world.delivered("dlq"), world.delivered("unknown")
    assert (len(valid), len(dlq), len(unknown)) == (10, 10, 10)
    assert world.broker.depth("in") == 0
    # dead letters keep body, key and headers byte for byte and add the reason
    original = {e.fields["key"]: e for e in traffic}
    for letter in dlq:
        source = original[letter.fields["key"]]
        assert letter.body == source.body
        assert letter.fields["headers"][:len(source.fields["headers"])] == source.fields["headers"]
        added = dict(letter.fields["headers"][len(source.fields["headers"]):])
        assert added["xgate-verdict"] == b"nonconformant"
        assert added["xgate-messageid"] == b"reading" and added["xgate-source-endpoint"] == b"in"
        assert json.loads(added["xgate-violations"])[0]["rule"] == "schema"
    assert all(dict(e.fields["headers"]).get("xgate-verdict") is None for e in valid)
    assert json.loads(dict(unknown[0].fields["headers"])["xgate-violations"])[0]["rule"] == "no-match"
    stats = engine.stats.route("in")
    assert stats.verdicts == {"conformant": 10, "nonconformant": 10, "unmatched": 10}


def test_unmatched_defaults_to_the_nonconformant_destination(world: Any) -> None:
    world.publish([message("unknown", 1), message("invalid", 2)])
    route = world.route()
    route = Route(route.source, route.conformant, route.nonconformant, route.nonconformant, "forward", 10)
    engine = Engine([route], world.ruleset, create_source=memory.create_source, create_sink=memory.create_sink)
    run_until(engine, lambda: world.broker.depth("in") == 0)
    assert len(world.delivered("dlq")) == 2


def test_observe_passes_everything_through_and_still_counts(world: Any) -> None:
    world.publish([message(kind, n) for n, kind in enumerate(["ok", "invalid", "unknown"])])
    engine = Engine([world.route("observe")], world.ruleset, create_source=memory.create_source,
                    create_sink=memory.create_sink)
    run_until(engine, lambda: world.broker.depth("in") == 0)
    assert len(world.delivered("valid")) == 3 and not world.delivered("dlq")
    assert all("xgate-verdict" not in dict(e.fields["headers"]) for e in world.delivered("valid"))
    assert engine.stats.route("in").verdicts == {"conformant": 1, "nonconformant": 1, "unmatched": 1}


def test_drop_acknowledges_nonconformant_without_forwarding(world: Any) -> None:
    world.publish([message(kind, n) for n, kind in enumerate(["ok", "invalid", "unknown"])])
    engine = Engine([world.route("drop")], world.ruleset, create_source=memory.create_source,
                    create_sink=memory.create_sink)
    run_until(engine, lambda: world.broker.depth("in") == 0)
    assert len(world.delivered("valid")) == 1 and not world.delivered("dlq") and not world.delivered("unknown")
    assert engine.stats.route("in").actions["dropped"] == 2


def test_reject_dead_letters_where_the_protocol_cannot_refuse(world: Any) -> None:
    world.publish([message("invalid", 1)])
    engine = Engine([world.route("reject")], world.ruleset, create_source=memory.create_source,
                    create_sink=memory.create_sink)
    run_until(engine, lambda: world.broker.depth("in") == 0)
    assert len(world.delivered("dlq")) == 1


def test_a_dead_destination_pauses_consumption_and_loses_nothing(world: Any) -> None:
    world.publish([message("ok", n) for n in range(50)])
    down = memory.memory_broker("down-destination")
    down.down = True
    route = world.route(inflight=5)
    route = Route(route.source, EndpointConfig("valid", "MEMORY", ("memory://down-destination",), {"queue": "valid"}),
                  route.nonconformant, route.unmatched, "forward", 5)
    engine = Engine([route], world.ruleset, create_source=memory.create_source, create_sink=memory.create_sink)

    async def main() -> None:
        task = asyncio.create_task(engine.run())
        # until the sink has failed a few times (polled, not timed: a loaded machine may take seconds)
        for _ in range(6000):
            if engine.stats.route("in").retries >= 3:
                break
            await asyncio.sleep(0.01)
        # the window holds at most 5 (+1 pulled) messages; the rest stay at the source, nothing is acked
        assert engine.stats.route("in").inflight <= 5
        assert world.broker.depth("in") == 50
        assert engine.stats.route("in").retries > 0
        down.down = False
        for _ in range(1000):
            if world.broker.depth("in") == 0:
                break
            await asyncio.sleep(0.01)
        engine.request_stop()
        await asyncio.wait_for(task, 10)
    asyncio.run(main())
    assert down.depth("valid") == 50 and world.broker.depth("in") == 0


def test_stop_drains_and_leaves_the_rest_unacknowledged(world: Any) -> None:
    world.publish([message("ok", n) for n in range(200)])
    engine = Engine([world.route(inflight=10)], world.ruleset, create_source=memory.create_source,
                    create_sink=memory.create_sink)
    judged: list[bytes] = []

    class StopAtTwenty(NativeJudge):
        """Requests the stop from inside the batch that judges the 20th message: the stop lands while messages
        are in flight."""

        def judge(self, envelopes: Any) -> Any:
            for envelope in envelopes:
                judged.append(envelope.fields["key"])
                if len(judged) == 20:
                    engine.request_stop()
            return super().judge(envelopes)

    engine.ref.native = StopAtTwenty(world.ruleset)
    run_until(engine, lambda: len(judged) >= 20)
    delivered = [e.fields["key"] for e in world.delivered("valid")]
    queue = world.broker.queue("in")
    left = [e.fields["key"] for _, e in queue.ready]
    assert len(judged) >= 20, "the stop was never requested from the judging path"
    assert 20 <= len(delivered) < 200, len(delivered)  # drained what was in flight, stopped before the end
    assert not queue.unacked  # what was not delivered went back to the source, unacknowledged
    assert sorted(delivered + left) == sorted(f"k{n}".encode() for n in range(200))  # each exactly once


class _BatchRefusing(NativeJudge):
    """The batch call fails on a batch holding `key` (a bug in it), so the pipeline judges that batch's messages
    one by one with the ruleset's `classify`, where each test puts its own bug."""

    def __init__(self, ruleset: Any, key: bytes) -> None:
        super().__init__(ruleset)
        self.key = key

    def judge(self, envelopes: Any) -> Any:
        if any(envelope.fields["key"] == self.key for envelope in envelopes):
            raise RuntimeError("a bug in the batch call")
        return super().judge(envelopes)


def test_a_batch_releases_only_the_message_whose_judging_failed(world: Any) -> None:
    """Messages already at the source are judged as one batch; a bug on one of them must not touch the others."""
    world.publish([message("ok", n) for n in range(40)])
    engine = Engine([world.route()], world.ruleset, create_source=memory.create_source,
                    create_sink=memory.create_sink)
    real = world.ruleset.classify
    failures: list[bytes] = []

    class Flaky:
        def __getattr__(self, name: str) -> Any:
            return getattr(world.ruleset, name)

        def classify(self, envelope: Envelope) -> Any:
            key = envelope.fields["key"]
            if key == b"k7" and not failures:
                failures.append(key)
                raise RuntimeError("a bug on one message")
            return real(envelope)

    engine.ref.native = _BatchRefusing(Flaky(), b"k7")  # type: ignore[arg-type]
    run_until(engine, lambda: len(world.delivered("valid")) == 40)
    keys = [e.fields["key"] for e in world.delivered("valid")]
    # delivered once each: the failed message came back (released), nothing was lost or doubled
    assert sorted(keys) == sorted(f"k{n}".encode() for n in range(40)) and failures == [b"k7"]
    stats = engine.stats.route("in")
    assert stats.delivery_failures == 1 and stats.verdicts["conformant"] == 40


def test_a_message_whose_judging_always_fails_is_routed_with_the_reason_not_retried_forever(world: Any) -> None:
    """A poison message (a bug that hits it every time) must neither stall the route nor be lost: after
    JUDGE_ATTEMPTS it gets a `decode` verdict naming no definition, so it goes where unmatched messages go."""
    world.publish([message("ok", n) for n in range(10)])
    engine = Engine([world.route()], world.ruleset, create_source=memory.create_source,
                    create_sink=memory.create_sink)
    real = world.ruleset.classify
    attempts: list[bytes] = []

    class Broken:
        def __getattr__(self, name: str) -> Any:
            return getattr(world.ruleset, name)

        def classify(self, envelope: Envelope) -> Any:
            if envelope.fields["key"] == b"k3":
                attempts.append(b"k3")
                raise RuntimeError("a bug that hits this message every time")
            return real(envelope)

    engine.ref.native = _BatchRefusing(Broken(), b"k3")  # type: ignore[arg-type]
    run_until(engine, lambda: len(world.delivered("valid")) == 9 and len(world.delivered("unknown")) == 1)
    assert len(attempts) == JUDGE_ATTEMPTS
    [poisoned] = world.delivered("unknown")
    assert poisoned.fields["key"] == b"k3"
    headers = dict(poisoned.fields["headers"])
    reason = json.loads(headers["xgate-violations"])
    assert reason[0]["rule"] == "decode" and "RuntimeError" in reason[0]["message"], reason
    assert world.broker.depth("in") == 0


def _dead_destination_engine(world: Any, drain_timeout: float) -> tuple[Engine, memory.MemoryBroker]:
    world.publish([message("ok", n) for n in range(50)])
    name = f"down-{next(_brokers)}"
    down = memory.memory_broker(name)
    down.down = True
    route = world.route(inflight=5)
    route = Route(route.source, EndpointConfig("valid", "MEMORY", (f"memory://{name}",), {"queue": "valid"}),
                  route.nonconformant, route.unmatched, "forward", 5)
    return Engine([route], world.ruleset, create_source=memory.create_source, create_sink=memory.create_sink,
                  drain_timeout=drain_timeout), down


def test_stop_completes_while_the_window_is_full_and_the_destination_is_down(world: Any) -> None:
    """Issue 17 defect 3: the loop waiting for room in a full window must see the stop; nothing is acknowledged."""
    engine, down = _dead_destination_engine(world, drain_timeout=0.2)

    async def main() -> None:
        task = asyncio.create_task(engine.run())
        for _ in range(1000):
            if engine.stats.route("in").retries > 0 and engine.stats.route("in").inflight == 5:
                break
            await asyncio.sleep(0.01)
        assert engine.stats.route("in").inflight == 5  # the window is full: the loop waits for room
        engine.request_stop()
        await asyncio.wait_for(task, 10)
    asyncio.run(main())
    assert down.depth("valid") == 0 and world.broker.depth("in") == 50  # released, none acknowledged, none lost
    assert world.broker.queue("in").unacked == {}


def test_a_second_stop_request_does_not_wait_for_the_drain(world: Any) -> None:
    engine, _ = _dead_destination_engine(world, drain_timeout=3600)

    async def main() -> None:
        task = asyncio.create_task(engine.run())
        for _ in range(1000):
            if engine.stats.route("in").inflight == 5:
                break
            await asyncio.sleep(0.01)
        engine.request_stop()
        await asyncio.sleep(0.1)
        assert not task.done()  # draining (an hour at most)
        engine.request_stop()
        await asyncio.wait_for(task, 10)
    asyncio.run(main())
    assert world.broker.depth("in") == 50


class _Refusing(memory.MemorySource):
    """A source whose connection is refused for good (as a broker refusing a queue's properties)."""

    async def __aenter__(self) -> memory.MemorySource:
        raise AdapterError(f"endpoint {self.config.endpoint_id!r}: refused for good")


def _refusing_when_asked(config: EndpointConfig) -> memory.MemorySource:
    return _Refusing(config) if config.options.get("refuse") else memory.MemorySource(config)


def test_a_route_that_cannot_start_at_startup_stops_the_gateway_with_one_reason(world: Any) -> None:
    route = world.route()
    route = Route(EndpointConfig("in", "MEMORY", route.source.uris, {"queue": "in", "refuse": True}),
                  route.conformant, route.nonconformant, route.unmatched, "forward", 10)
    engine = Engine([route], world.ruleset, create_source=_refusing_when_asked, create_sink=memory.create_sink)
    asyncio.run(asyncio.wait_for(engine.run(), 10))  # no ExceptionGroup
    assert engine.fatal == "route in could not start: endpoint 'in': refused for good"


def test_a_route_a_reload_cannot_start_gives_way_to_the_route_it_replaced(world: Any) -> None:
    world.publish([message("ok", n) for n in range(10)])
    good = world.route()
    bad = Route(EndpointConfig("in", "MEMORY", good.source.uris, {"queue": "in", "refuse": True}),
                good.conformant, good.nonconformant, good.unmatched, "forward", 10)
    engine = Engine([good], world.ruleset, create_source=_refusing_when_asked, create_sink=memory.create_sink)

    async def main() -> None:
        task = asyncio.create_task(engine.run())
        for _ in range(1000):
            if len(world.delivered("valid")) == 10:
                break
            await asyncio.sleep(0.01)
        await engine.apply([bad], world.ruleset)
        for _ in range(1000):
            if engine.metrics[names.RELOADS].labels("failed")._value.get() == 1 and engine.ready()[0]:
                break
            await asyncio.sleep(0.01)
        world.publish([message("ok", n) for n in range(10, 20)])
        for _ in range(1000):
            if len(world.delivered("valid")) == 20:
                break
            await asyncio.sleep(0.01)
        engine.request_stop()
        await asyncio.wait_for(task, 10)
    asyncio.run(main())
    assert engine.metrics[names.RELOADS].labels("failed")._value.get() == 1
    assert len(world.delivered("valid")) == 20 and engine.fatal is None  # the last good route kept flowing


def test_an_acknowledgement_that_fails_mid_batch_releases_only_the_messages_after_it(world: Any) -> None:
    """No message is settled twice: the ones acknowledged stay so, the ones not reached are released."""
    from gateway.metrics.instruments import GatewayMetrics
    from gateway.runtime.pipeline import Pipeline
    from gateway.runtime.stats import RouteStats

    class Source:
        def __init__(self) -> None:
            self.acked: list[bytes] = []
            self.nacked: list[bytes] = []

        async def ack(self, envelope: Envelope, delivery: Any = None) -> None:
            if envelope.fields["key"] == b"k2":
                raise RuntimeError("the broker went away mid-batch")
            self.acked.append(envelope.fields["key"])

        async def nack(self, envelope: Envelope) -> None:
            self.nacked.append(envelope.fields["key"])

    class Holder:
        ruleset = world.ruleset
        native = NativeJudge(world.ruleset)
        shadow = None
        recent = RecentTraffic()
        dead_letters = None

    route = world.route(conformant=None, nonconformant=None, unmatched=None)  # every verdict is dropped
    pipeline = Pipeline(route, Holder(), RouteStats("in"), GatewayMetrics().route("in", []),
                        memory.create_source, memory.create_sink)
    source = Source()
    asyncio.run(pipeline.handle(source, [message("ok", n) for n in range(6)]))
    assert source.acked == [b"k0", b"k1"]
    assert source.nacked == [b"k3", b"k4", b"k5"]
    assert pipeline.stats.delivery_failures == 1 and pipeline.stats.inflight == 0
