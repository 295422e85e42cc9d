"""Which routes the Spark runner takes from a config directory, offline (no Spark, no broker)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from gateway.settings import load_settings
from gateway.spark.shipping import bundle_from_paths
from gateway.spark.streaming import PlanError, StreamPlan, plan_stream

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "config" / "demo"


def plan(folder: Path) -> StreamPlan:
    snapshot, bundle = bundle_from_paths([folder])
    settings, problems = load_settings(folder)
    assert not problems
    return plan_stream(snapshot, settings, bundle)


def kafka_endpoint(usage: str, topic: str | None) -> dict[str, object]:
    options: dict[str, object] = {"endpoints": [{"uri": "tcp://127.0.0.1:9092"}]}
    if topic:
        options["topic"] = topic
    return {"usage": [usage], "protocol": "KAFKA", "protocoloptions": options}


def test_demo_reads_the_kafka_route_and_leaves_the_others_to_run() -> None:
    result = plan(DEMO)
    assert [s.endpoint_id for s in result.sources] == ["telemetry.in"]
    assert result.sources[0].topics == ("xgate-demo-telemetry",)
    routes = dict(result.table.routes)
    assert set(routes) == {"telemetry.in"}
    assert {name for name, _ in result.table.destinations} == {
        e.endpoint_id for e in (routes["telemetry.in"].conformant, routes["telemetry.in"].nonconformant,
                                routes["telemetry.in"].unmatched) if e is not None}
    left = [n for n in result.notes if "served by `xgate run`" in n]
    assert {n.split("'")[1] for n in left} == {"orders.http", "orders.queue", "facility.mqtt", "facility.nats"}


def test_kafka_route_to_another_protocol_is_refused_with_its_name(tmp_path: Path) -> None:
    shutil.copytree(DEMO, tmp_path / "demo")
    (tmp_path / "demo" / "gateway.yaml").write_text(yaml.safe_dump(
        {"routes": [{"source": "telemetry.in", "conformant": "facility.dlq"}]}), "utf-8")
    with pytest.raises(PlanError, match=r"'telemetry.in'.*conformant destination 'facility.dlq' is NATS"):
        plan(tmp_path / "demo")


def test_unrouted_kafka_consumer_is_judged_not_forwarded(tmp_path: Path) -> None:
    document = {"endpoints": {"audit.in": kafka_endpoint("consumer", "audit"),
                              "audit.out": kafka_endpoint("producer", "elsewhere"),
                              "no.topic": kafka_endpoint("consumer", None)}}
    (tmp_path / "a.xreg.json").write_text(json.dumps(document), "utf-8")
    result = plan(tmp_path)
    assert [s.endpoint_id for s in result.sources] == ["audit.in"]
    route = dict(result.table.routes)["audit.in"]
    assert (route.conformant, route.nonconformant, route.unmatched, route.policy) == (None, None, None, "drop")
    assert any("'audit.in' has no route" in n for n in result.notes)
    assert any("'no.topic'" in n and "topic" in n for n in result.notes)
    assert result.table.destinations == ()


def test_nothing_to_read_is_a_plan_error(tmp_path: Path) -> None:
    (tmp_path / "a.xreg.json").write_text(json.dumps({"endpoints": {"x": {
        "usage": ["consumer"], "protocol": "NATS", "protocoloptions": {"subject": "s"}}}}), "utf-8")
    with pytest.raises(PlanError, match="no Kafka consumer endpoint"):
        plan(tmp_path)


def test_rc4_bootstrap_servers_reach_the_kafka_connector(tmp_path: Path) -> None:
    from gateway.spark.kafka_options import jvm_options

    rc4 = {"endpoints": [{"bootstrap.servers": ["k1:9092", "k2:9093"]}], "topic": "audit"}
    (tmp_path / "a.xreg.json").write_text(json.dumps({"endpoints": {"audit.in": {
        "usage": ["consumer"], "protocol": "KAFKA", "protocoloptions": rc4}}}), "utf-8")
    [source] = plan(tmp_path).sources
    assert source.connection.bootstrap_servers == ("k1:9092", "k2:9093")
    assert jvm_options(source.connection)["kafka.bootstrap.servers"] == "k1:9092,k2:9093"
