"""`xgate capture` reads through observers that never take messages from the gateway's own consumers (issue 17,
defect 5): built offline here; tests/integration/test_capture_beside_gateway.py runs them against real brokers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gateway.errors import ObserverRefused
from protocol_adapters import registry
from protocol_adapters.base import EndpointConfig

REPO = Path(__file__).resolve().parents[3]


def test_kafka_observer_has_a_group_of_its_own_and_never_commits() -> None:
    config = EndpointConfig("k.in", "KAFKA", ("127.0.0.1:9092",), {"topic": "t", "consumergroup": "gateway-group"})
    gateway, observer = registry.create_source(config), registry.create_observer(config)
    assert gateway.options.group_id == "gateway-group" and gateway.options.commit  # type: ignore[attr-defined]
    assert observer.options.group_id.startswith("xgate-capture-k.in-")  # type: ignore[attr-defined]
    assert observer.options.commit is False  # type: ignore[attr-defined]
    assert registry.create_observer(config).options.group_id != observer.options.group_id  # type: ignore[attr-defined]


def test_nats_observer_uses_an_ephemeral_consumer_and_no_queue_group() -> None:
    config = EndpointConfig("n.in", "NATS", ("nats://127.0.0.1:4222",),
                            {"subject": "a.>", "stream": "S", "queuegroup": "workers"})
    gateway, observer = registry.create_source(config), registry.create_observer(config)
    assert not gateway.options.ephemeral and gateway.options.queue_group == "workers"  # type: ignore[attr-defined]
    assert observer.options.ephemeral and observer.options.queue_group == ""  # type: ignore[attr-defined]


def test_mqtt_observer_subscribes_plainly_in_a_clean_session() -> None:
    config = EndpointConfig("m.in", "MQTT/5.0", ("mqtt://127.0.0.1:1883",),
                            {"topic_name": "a/#", "sharedsubscriptiongroup": "gw", "clientid": "gateway"})
    gateway, observer = registry.create_source(config), registry.create_observer(config)
    assert gateway.options.topic_filters == ("$share/gw/a/#",)  # type: ignore[attr-defined]
    options = observer.options  # type: ignore[attr-defined]
    assert options.topic_filters == ("a/#",) and options.clean and options.session_expiry == 0
    assert options.client_id.startswith("gateway-capture-")


def test_amqp_queue_observer_is_refused_with_the_reason() -> None:
    config = EndpointConfig("a.in", "AMQP/1.0", ("amqp://127.0.0.1:5672",), {"node": "/queue/q"})
    with pytest.raises(ObserverRefused, match="--destructive"):
        registry.create_observer(config)


def test_capture_from_an_amqp_queue_refuses_without_destructive(tmp_path: Path) -> None:
    init = subprocess.run([sys.executable, "-m", "gateway.cli", "init", str(tmp_path / "cfg"), "amqp"],
                          capture_output=True, text=True, cwd=REPO, check=False)
    assert init.returncode == 0, init.stderr
    capture = subprocess.run([sys.executable, "-m", "gateway.cli", "capture", "--config", str(tmp_path / "cfg"),
                              "--endpoint", "amqp.in", "--count", "1"],
                             capture_output=True, text=True, cwd=REPO, check=False, timeout=60)
    assert capture.returncode == 2
    [line] = [line for line in capture.stderr.splitlines() if line.startswith("xgate capture:")]
    assert "takes its messages away from the gateway" in line and "--destructive" in line
    assert "Traceback" not in capture.stderr
