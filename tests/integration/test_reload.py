"""Hot reload on a running gateway: new, broken, edited and removed documents, nothing in flight lost."""

from __future__ import annotations

import asyncio
import collections
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.harness import Collector, Gateway, World, account, prepare, publish, wait_until_live
from tests.integration.profiles import PROFILES
from tests.integration.test_metrics import samples, value
from tests.integration.traffic import mixed

pytestmark = pytest.mark.integration
# after the edit below, a reading the generator made conformant has v < 1,000,000: it fails the schema
EDITED = {"ok-binary": "dlq", "ok-structured": "dlq"}
# a shared 2-core machine can stall any process for seconds: poll generously, report how long it took
EVENT_SECONDS = 60


async def until(condition: Any, timeout: float, what: str) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if condition():
            return time.monotonic() - started
        await asyncio.sleep(0.1)
    raise AssertionError(f"{what} did not happen within {timeout}s")


def reloads(gateway: Gateway, outcome: str) -> float:
    return value(samples(gateway.scrape()[1]), "xgate_reloads_total", outcome=outcome)


def merge(total: dict[str, collections.Counter[bytes]], more: dict[str, collections.Counter[bytes]]) -> None:
    for destination, bodies in more.items():
        total[destination].update(bodies)


def test_reload_scenarios_on_a_running_gateway(tmp_path: Path) -> None:
    world = prepare(PROFILES["NATS"], tmp_path)
    registry_file = world.config_dir / "registry.json"
    document = json.loads(registry_file.read_text())
    second = world.config_dir / "second.json"

    async def scenario() -> dict[str, Any]:
        expected: dict[str, collections.Counter[bytes]] = collections.defaultdict(collections.Counter)
        async with Collector(world) as collector:
            gateway = Gateway(world.config_dir)
            try:
                probes = await wait_until_live(world, collector)
                batch = mixed("NATS", 600)
                merge(expected, world.expected(batch))
                await publish(world, batch)
                await collector.wait_for(expected, 60)  # judged by the first rules before they change

                # 1. edit a definition: conformant readings now need v >= 1,000,000
                document["endpoints"]["in"]["messages"]["reading"]["dataschema"]["properties"]["v"]["minimum"] = 10**6
                registry_file.write_text(json.dumps(document))
                await until(lambda: reloads(gateway, "applied") >= 1, EVENT_SECONDS, "the edit being applied")
                edited = [dict(r, body=r.get("body", "").replace('"seq": ', '"seq": 1')) for r in mixed("NATS", 600)]
                edited_expected = world.expected(edited, now=EDITED)
                assert not any(b for b in edited_expected["valid"])  # every reading now fails the schema
                merge(expected, edited_expected)
                await publish(world, edited)
                await collector.wait_for(expected, 60)

                # 2. break the document: the last good rules keep working, the failure is counted
                registry_file.write_text('{"endpoints": {')
                await until(lambda: reloads(gateway, "failed") >= 1, EVENT_SECONDS,
                            "the broken document being rejected")
                while_broken = [dict(r, body=r.get("body", "").replace('"seq": ', '"seq": 2'))
                                for r in mixed("NATS", 300)]
                registry_file.write_text(json.dumps(document))  # to compute the verdicts of the last good rules
                merge(expected, world.expected(while_broken, now=EDITED))
                registry_file.write_text('{"endpoints": {')
                await publish(world, while_broken)

                # 3. drop a new endpoint document: consumed while the gateway runs (the time is reported)
                second.write_text(json.dumps(second_document(world)))
                took = await until(lambda: '"in2"' in gateway.scrape("/readyz")[1], EVENT_SECONDS,
                                   "the new route starting")
                extra = [dict(r, endpoint="in2", body=r.get("body", "").replace('"seq": ', '"seq": 3'))
                         for r in mixed("NATS", 200)]
                from gateway.recorded import envelope_from_record
                config = world.config("in2")
                from protocol_adapters import registry as adapters
                async with adapters.create_sink(config) as sink:
                    for record in extra:
                        await sink.send(envelope_from_record(record))
                expected["valid"].update(envelope_from_record(r).body for r in extra)

                # 4. remove it again: its route drains and stops
                second.unlink()
                await until(lambda: '"in2"' not in gateway.scrape("/readyz")[1], EVENT_SECONDS,
                            "the removed route stopping")
                await collector.wait_for(expected, 120)
                report = account(expected, collector, probes)
                report["new_route_seconds"] = took
                report["failed_reloads"] = reloads(gateway, "failed")
                return report
            finally:
                registry_file.write_text(json.dumps(document))
                assert gateway.stop() == 0, gateway.output()[-3000:]
    report = asyncio.run(scenario())
    summary = json.dumps(report, indent=1)
    for destination in ("valid", "dlq", "unknown"):
        assert report[destination]["missing"] == 0 and report[destination]["unexpected"] == 0, summary
    assert report["failed_reloads"] >= 1, summary


def second_document(world: World) -> dict[str, Any]:
    """A second source endpoint (NATS, its own subject and stream) whose labels route it to `valid`."""
    options = PROFILES["NATS"].options(world.run_id + "x")["in"]
    uris = options.pop("uris")
    return {"endpoints": {"in2": {
        "usage": ["consumer"], "protocol": "NATS", "envelope": "CloudEvents/1.0",
        "protocoloptions": {"endpoints": [{"uri": u} for u in uris], **options},
        "labels": {"xgate.route.conformant": "valid", "xgate.route.nonconformant": "valid",
                   "xgate.route.policy": "observe"},
        "messages": {"anything": {"envelope": "CloudEvents/1.0", "envelopemetadata": {}}}}}}
