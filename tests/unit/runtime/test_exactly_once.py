"""Exactly-once routes, offline: which routes may be transactional, and what their adapters are told."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.cli import main
from gateway.loader import load_snapshot
from gateway.routes.resolve import Route, resolve_routes
from gateway.settings import load_settings
from protocol_adapters import kafka
from protocol_adapters.kafka.transactional_source import TransactionalKafkaSource


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("eos") / "config"
    assert main(["init", str(directory), "kafka", "mqtt"]) == 0
    return directory


def routes(config: Path, settings: dict[str, Any]) -> tuple[dict[str, Route], list[str]]:
    (config / "gateway.yaml").write_text(yaml.safe_dump(settings))
    loaded, problems = load_settings(config)
    assert problems == []
    resolved, route_problems = resolve_routes(load_snapshot([config]).registry, loaded)
    return {r.source.endpoint_id: r for r in resolved}, [p.message for p in route_problems]


KAFKA_ROUTE = {"source": "kafka.in", "conformant": "kafka.valid", "nonconformant": "kafka.dlq"}
MQTT_ROUTE = {"source": "mqtt.in", "conformant": "mqtt.valid", "nonconformant": "mqtt.dlq"}


def test_an_exactly_once_kafka_route_shares_one_transactional_id(config: Path) -> None:
    resolved, problems = routes(config, {"routes": [{**KAFKA_ROUTE, "exactly_once": True}]})
    assert problems == []
    route = resolved["kafka.in"]
    ids = {e.extra.get("transactional_id") for e in (route.source, route.conformant, route.nonconformant, route.unmatched)}
    assert ids == {"xgate-kafka.in"}
    assert isinstance(kafka.create_source(route.source), TransactionalKafkaSource)
    assert kafka.create_sink(route.conformant).options.transactional_id == "xgate-kafka.in"  # type: ignore[arg-type]


def test_routes_are_at_least_once_unless_asked(config: Path) -> None:
    resolved, problems = routes(config, {"routes": [KAFKA_ROUTE]})
    assert problems == []
    assert "transactional_id" not in resolved["kafka.in"].source.extra
    assert type(kafka.create_source(resolved["kafka.in"].source)) is kafka.KafkaSource


def test_runtime_exactly_once_is_the_default_and_a_route_may_opt_out(config: Path) -> None:
    resolved, problems = routes(config, {"runtime": {"exactly_once": True},
                                         "routes": [KAFKA_ROUTE, {**MQTT_ROUTE, "exactly_once": False}]})
    assert problems == []
    assert resolved["kafka.in"].source.extra["transactional_id"] == "xgate-kafka.in"
    assert "transactional_id" not in resolved["mqtt.in"].source.extra


def test_a_route_that_is_not_kafka_to_kafka_is_refused_with_the_reason(config: Path) -> None:
    resolved, problems = routes(config, {"routes": [{**MQTT_ROUTE, "exactly_once": True},
                                                    {**KAFKA_ROUTE, "nonconformant": "mqtt.dlq",
                                                     "exactly_once": True}]})
    assert resolved == {}
    assert any("mqtt.in" in p and "exactly_once needs Kafka endpoints only" in p for p in problems), problems
    assert any("kafka.in" in p and "mqtt.dlq is not Kafka" in p for p in problems), problems


def test_exactly_once_must_be_true_or_false(config: Path) -> None:
    # the one flag reader takes true/false and their text forms (yes/no too); anything else is refused
    (config / "gateway.yaml").write_text(yaml.safe_dump({"runtime": {"exactly_once": "maybe"}}))
    _, problems = load_settings(config)
    assert [p.pointer for p in problems] == ["/runtime/exactly_once"]
    assert "found 'maybe'" in problems[0].message
