"""After N messages of known verdicts pass through `xgate run`, the scraped counters equal those numbers."""

from __future__ import annotations

import asyncio
import collections
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway.check import judge_record
from gateway.compiler import compile_registry
from gateway.loader import load_snapshot
from gateway.runtime.router import kind_of
from tests.integration.harness import Collector, Gateway, prepare, publish, wait_until_live
from tests.integration.profiles import PROFILES
from tests.integration.traffic import DESTINATION_OF_KIND, kind_of_record, mixed

pytestmark = pytest.mark.integration
COUNT = 2000


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(scraped: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return scraped.get((name, tuple(sorted(labels.items()))), 0.0)


def test_scraped_counters_equal_the_verdicts(tmp_path: Path) -> None:
    world = prepare(PROFILES["NATS"], tmp_path)
    records = mixed("NATS", COUNT)
    ruleset = compile_registry(load_snapshot([world.config_dir]).registry)
    verdicts = [judge_record(ruleset, r) for r in records]

    async def scenario() -> tuple[int, str, str, str]:
        async with Collector(world) as collector:
            gateway = Gateway(world.config_dir)
            try:
                probes = await wait_until_live(world, collector)
                expected = world.expected(records)
                await publish(world, records)
                await collector.wait_for(expected, 120)
                await asyncio.sleep(0.5)
                _, ready = gateway.scrape("/readyz")
                _, health = gateway.scrape("/healthz")
                return len(probes), gateway.scrape()[1], ready, health
            finally:
                assert gateway.stop() == 0
    probes, text, ready, health = asyncio.run(scenario())
    scraped = samples(text)
    # per verdict, from what the generator made each message to be (world.expected checked judge_record agrees)
    verdict_of = {"valid": "conformant", "dlq": "nonconformant", "unknown": "unmatched"}
    kinds = collections.Counter(verdict_of[DESTINATION_OF_KIND[kind_of_record(r)]] for r in records)
    assert kinds == collections.Counter(kind_of(v).value for v in verdicts)
    kinds["conformant"] += probes  # the liveness probes are conformant messages too
    for verdict in ("conformant", "nonconformant", "unmatched"):
        assert value(scraped, "xgate_messages_total", endpoint="in", verdict=verdict) == kinds[verdict], verdict
    rules = collections.Counter(v.rule.value for verdict in verdicts for v in verdict.violations)
    for rule, count in rules.items():
        assert value(scraped, "xgate_violations_total", endpoint="in", rule=rule) == count, rule
    by_definition = collections.Counter((v.messagegroupid or "", v.messageid or "", kind_of(v).value)
                                        for v in verdicts)
    by_definition[("in", "reading", "conformant")] += probes
    for (group, message, verdict), count in by_definition.items():
        assert value(scraped, "xgate_definition_messages_total", endpoint="in", messagegroup=group,
                     message=message, verdict=verdict) == count
    assert value(scraped, "xgate_routed_messages_total", endpoint="in", destination="valid",
                 action="forwarded") == kinds["conformant"]
    assert value(scraped, "xgate_routed_messages_total", endpoint="in", destination="dlq",
                 action="deadlettered") == kinds["nonconformant"]
    assert value(scraped, "xgate_routed_messages_total", endpoint="in", destination="unknown",
                 action="deadlettered") == kinds["unmatched"]
    assert value(scraped, "xgate_validation_seconds_count", endpoint="in") == COUNT + probes
    assert value(scraped, "xgate_end_to_end_seconds_count", endpoint="in") == COUNT + probes
    assert value(scraped, "xgate_inflight_messages", endpoint="in") == 0
    assert value(scraped, "xgate_adapter_up", endpoint="in", role="source") == 1
    assert value(scraped, "xgate_compiled_definitions") == 1
    assert '"ready": true' in ready and health.strip() == "ok"
