"""A message a destination can never accept is settled on its own (dead-lettered or dropped and counted), the
route keeps flowing, and a destination that keeps failing shows in readiness, metrics and the log within seconds."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from gateway.runtime import health
from gateway.runtime.engine import Engine
from gateway.testing import memory
from tests.unit.runtime import test_pipeline
from tests.unit.runtime.test_pipeline import message, run_until

world = test_pipeline.world  # the shared fixture: an in-process broker and a compiled registry

BIG = b"x" * 4000


def big(kind: str, number: int) -> Any:
    envelope = message(kind, number)
    # still valid JSON for the schema's sake: {"v": n, "pad": "xxx..."}
    body = json.loads(envelope.body)
    body["pad"] = BIG.decode()
    return type(envelope)(envelope.protocol, envelope.fields, json.dumps(body).encode())


def sample(engine: Engine, name: str, **labels: str) -> float | None:
    value: float | None = engine.metrics.registry.get_sample_value(name, labels)
    return value


def test_a_message_too_large_for_its_destination_is_dead_lettered_with_the_cause(world: Any) -> None:
    world.broker.max_bytes["valid"] = 1000
    traffic = [message("ok", 0), big("ok", 1)] + [message("ok", n) for n in range(2, 20)]
    world.publish(traffic)
    engine = Engine([world.route(inflight=4)], world.ruleset, create_source=memory.create_source,
                    create_sink=memory.create_sink)
    run_until(engine, lambda: world.broker.depth("in") == 0)
    assert world.broker.depth("in") == 0
    assert len(world.delivered("valid")) == 19
    [letter] = world.delivered("dlq")
    assert letter.body == traffic[1].body
    error = dict(letter.fields["headers"])["xgate-error"].decode()
    assert "exceeds the destination's max_bytes of 1000 bytes" in error
    assert sample(engine, "xgate_routed_messages_total", endpoint="in", destination="dlq",
                  action="deadlettered") == 1
    assert sample(engine, "xgate_routed_messages_total", endpoint="in", destination="valid",
                  action="forwarded") == 19


def test_a_message_no_destination_can_hold_is_dropped_counted_and_logged_then_acknowledged(
        world: Any, caplog: pytest.LogCaptureFixture) -> None:
    world.broker.max_bytes["valid"] = 1000
    world.broker.max_bytes["dlq"] = 1000
    world.publish([big("ok", 0), big("invalid", 1)] + [message("ok", n) for n in range(2, 12)])
    engine = Engine([world.route(inflight=4)], world.ruleset, create_source=memory.create_source,
                    create_sink=memory.create_sink)
    with caplog.at_level(logging.WARNING, "xgate.pipeline"):
        run_until(engine, lambda: world.broker.depth("in") == 0)
    assert world.broker.depth("in") == 0  # acknowledged: neither held nor redelivered forever
    assert len(world.delivered("valid")) == 10 and not world.delivered("dlq")
    assert sample(engine, "xgate_undeliverable_messages_total", endpoint="in", destination="dlq",
                  cause="too-large") == 2
    assert sample(engine, "xgate_routed_messages_total", endpoint="in", destination="valid",
                  action="dropped") == 1
    dropped = [r for r in caplog.records if "dropped (too-large)" in r.getMessage()]
    assert len(dropped) == 2


def test_a_message_refused_by_policy_is_dead_lettered_and_the_route_goes_on(world: Any) -> None:
    world.broker.refusing.add("unknown")
    world.publish([message("unknown", 0)] + [message("ok", n) for n in range(1, 6)])
    engine = Engine([world.route()], world.ruleset, create_source=memory.create_source,
                    create_sink=memory.create_sink)
    run_until(engine, lambda: world.broker.depth("in") == 0)
    assert len(world.delivered("valid")) == 5
    [letter] = world.delivered("dlq")
    assert "refuses messages to unknown" in dict(letter.fields["headers"])["xgate-error"].decode()


def test_a_destination_that_keeps_failing_turns_readiness_and_metrics_off_then_on(
        world: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(health, "DESTINATION_GRACE", 0.2)
    world.broker.refusing.clear()
    world.publish([message("ok", n) for n in range(5)])
    engine = Engine([world.route(inflight=5)], world.ruleset, create_source=memory.create_source,
                    create_sink=memory.create_sink)
    seen: dict[str, Any] = {}

    async def main() -> None:
        world.broker.down = True  # every send fails, retriably
        task = asyncio.create_task(engine.run())
        for _ in range(300):
            if engine.stats.route("in").retries and not engine.ready()[0]:
                break
            await asyncio.sleep(0.01)
        seen["down"] = (engine.ready()[0], sample(engine, "xgate_destination_up", endpoint="in", destination="valid"),
                        sample(engine, "xgate_adapter_up", endpoint="in", role="sink"))
        world.broker.down = False
        for _ in range(3000):
            if engine.ready()[0] and not world.broker.queue("in").ready and not world.broker.queue("in").unacked:
                break
            await asyncio.sleep(0.01)
        seen["up"] = (engine.ready()[0], sample(engine, "xgate_destination_up", endpoint="in", destination="valid"))
        engine.request_stop()
        await asyncio.wait_for(task, 10)

    with caplog.at_level(logging.INFO, "xgate.pipeline"):
        asyncio.run(main())
    assert seen["down"] == (False, 0.0, 0.0)
    assert seen["up"] == (True, 1.0)
    messages = [r.getMessage() for r in caplog.records]
    assert sum("destination valid down" in m for m in messages) == 1
    assert any("destination valid delivers again" in m for m in messages)
    assert len(world.delivered("valid")) == 5
