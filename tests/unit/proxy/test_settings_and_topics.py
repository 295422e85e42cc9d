"""gateway.yaml's `proxy` section (gateway/sections/proxy.py) and which topics the proxy judges under which
policy (gateway/proxy/judging.py `topic_rules`): each mistake named by its setting, nothing read silently."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.loader import load_snapshot
from gateway.proxy.judging import topic_rules
from gateway.sections.proxy import read_proxy
from gateway.settings import load_settings


def read(raw: Any) -> tuple[Any, list[str]]:
    problems: list[str] = []
    return read_proxy(raw, problems), problems


def test_a_full_section_reads_as_written() -> None:
    settings, problems = read({"upstream": ["kafka-1:9092", "[::1]:9093"], "listen": "0.0.0.0:29092",
                               "advertised_host": "gw.internal", "policy": "Observe", "max_frame_bytes": 4096,
                               "frame_timeout": 2.5, "tls": {"cert": "c.pem", "key": "k.pem"},
                               "upstream_tls": {"ca": "ca.pem", "verify": "false"}})
    assert problems == []
    assert settings.upstream == (("kafka-1", 9092), ("::1", 9093))
    assert (settings.listen_host, settings.listen_port, settings.advertised_host) == ("0.0.0.0", 29092, "gw.internal")
    assert (settings.policy, settings.max_frame_bytes, settings.frame_timeout) == ("observe", 4096, 2.5)
    assert settings.broker_port(3) == 29096


def test_defaults_listen_on_loopback_and_reject() -> None:
    settings, problems = read({"upstream": "a:1,b:2"})
    assert problems == []
    assert settings.upstream == (("a", 1), ("b", 2))
    assert (settings.listen_host, settings.listen_port, settings.advertised_host, settings.policy) == \
        ("127.0.0.1", 19092, "127.0.0.1", "reject")


@pytest.mark.parametrize(("raw", "named"), [
    ({}, "/proxy/upstream"),
    ({"upstream": "kafka"}, "/proxy/upstream/0"),
    ({"upstream": "kafka:99999"}, "/proxy/upstream/0"),
    ({"upstream": "k:1", "listen": "0.0.0.0:1"}, "/proxy/advertised_host"),
    ({"upstream": "k:1", "policy": "forward"}, "/proxy/policy"),
    ({"upstream": "k:1", "max_frame_bytes": 10}, "/proxy/max_frame_bytes"),
    ({"upstream": "k:1", "frame_timeout": 0}, "/proxy/frame_timeout"),
    ({"upstream": "k:1", "tls": {"cert": "c.pem"}}, "/proxy/tls/key"),
    ({"upstream": "k:1", "upstream_tls": {"verify": "perhaps"}}, "/proxy/upstream_tls/verify"),
    ({"upstream": "k:1", "listen_port": 1}, "/proxy/listen_port"),
    ("k:1", "/proxy: expected a mapping"),
])
def test_each_mistake_is_named(raw: Any, named: str) -> None:
    settings, problems = read(raw)
    assert settings is None
    assert any(named in problem for problem in problems), problems


def test_the_section_is_read_with_the_rest_of_gateway_yaml(tmp_path: Path) -> None:
    (tmp_path / "gateway.yaml").write_text(yaml.safe_dump({"proxy": {"upstream": "k:1", "policy": "drop"}}))
    settings, diagnostics = load_settings(tmp_path)
    assert settings.proxy is None
    assert any("/proxy/policy" in str(d) for d in diagnostics)


def endpoint(topic: Any, labels: dict[str, str] | None = None, protocol: str = "KAFKA") -> dict[str, Any]:
    return {"usage": ["consumer"], "protocol": protocol, "labels": labels or {},
            "protocoloptions": {"endpoints": [{"uri": "tcp://k:9092"}],
                                **({"topics": topic} if isinstance(topic, list) else {"topic": topic})},
            "messages": {"m": {"dataschemaformat": "JsonSchema/draft-07", "dataschema": {"type": "object"}}}}


def rules(tmp_path: Path, endpoints: dict[str, Any], policy: str = "reject") -> tuple[dict[str, Any], list[Any]]:
    (tmp_path / "doc.xreg.json").write_text(json.dumps({"endpoints": endpoints}))
    snapshot = load_snapshot([tmp_path])
    settings, _ = load_settings(tmp_path)
    return topic_rules(snapshot.registry, settings, policy, set(endpoints))


def test_each_topic_an_endpoint_names_is_judged_by_it_under_its_policy(tmp_path: Path) -> None:
    found, problems = rules(tmp_path, {
        "orders": endpoint(["orders", "orders-eu"]),
        "audit": endpoint("audit", {"xgate.route.policy": "observe", "xgate.route.nonconformant": "dlq"}),
        "dlq": endpoint("audit-dlq"),
        "mqtt": endpoint("sensors/#", protocol="MQTT/5.0"),
    })
    assert problems == []
    assert {topic: (rule.endpoint_id, rule.policy) for topic, rule in found.items()} == {
        "orders": ("orders", "reject"), "orders-eu": ("orders", "reject"), "audit": ("audit", "observe"),
        "audit-dlq": ("dlq", "reject")}
    assert found["audit"].nonconformant is not None and found["audit"].nonconformant.endpoint_id == "dlq"
    assert found["audit"].unmatched is found["audit"].nonconformant  # unmatched ones follow nonconformant


def test_a_topic_two_endpoints_name_is_an_error_naming_both(tmp_path: Path) -> None:
    found, problems = rules(tmp_path, {"a": endpoint("shared"), "b": endpoint("shared")})
    assert len(problems) == 1 and "'a'" in problems[0].message and "'b'" in problems[0].message
    assert found["shared"].endpoint_id == "a"


def test_a_route_policy_the_proxy_has_not_takes_the_proxy_default(tmp_path: Path) -> None:
    found, _ = rules(tmp_path, {"a": endpoint("t", {"xgate.route.policy": "drop"})}, policy="observe")
    assert found["t"].policy == "observe"
