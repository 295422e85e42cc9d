"""How each protocol's integration endpoints are addressed: unique per run, all on 127.0.0.1."""

from __future__ import annotations

from typing import Any

from tests.conftest import free_port
from tests.integration.harness import Profile
from tests.kafka_broker import BOOTSTRAP, PrivateKafka

ENDPOINTS = ("in", "valid", "dlq", "unknown")


def _kafka(run: str, bootstrap: str = BOOTSTRAP) -> dict[str, dict[str, Any]]:
    return {n: {"uris": [f"tcp://{bootstrap}"], "topic": f"it-{run}-{n}", "consumergroup": f"it-{run}-{n}",
                "autooffsetreset": "earliest"} for n in ENDPOINTS}


# the broker's smallest session timeout (group.min.session.timeout.ms): a gateway that died is noticed soon
KAFKA_GROUP = {n: {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500} for n in ENDPOINTS}


def private_kafka(broker: PrivateKafka) -> Profile:
    """Kafka endpoints on a broker of the test's own (tests/kafka_broker.py), which it may restart."""
    return Profile("KAFKA", "kafka", lambda run: _kafka(run, broker.bootstrap), settings=KAFKA_GROUP,
                   broker_env={k: v for k, v in broker.env.items() if k.startswith("XGATE_")})


# our own Mosquitto (deploy/brokers/mosquitto.sh config: persistence, large queues) rather than whatever
# runs on 1883, whose default max_queued_messages of 1000 drops QoS 1 messages under a 10k burst
MQTT_PORT = "18830"


def _mqtt(run: str) -> dict[str, dict[str, Any]]:
    return {n: {"uris": [f"mqtt://127.0.0.1:{MQTT_PORT}"], "topic_name": f"it/{run}/{n}", "topicfilter": f"it/{run}/{n}",
                "qos": 1, "clientid": f"it-{run}-{n}"} for n in ENDPOINTS}


def _amqp(run: str, port: str = "5672") -> dict[str, dict[str, Any]]:
    return {n: {"uris": [f"amqp://127.0.0.1:{port}"], "node": f"/queue/xgate-test-{run}-{n}"} for n in ENDPOINTS}


AMQP_GUEST = {n: {"username": "guest", "password": "guest"} for n in ENDPOINTS}


def private_amqp(env: dict[str, str]) -> Profile:
    """AMQP 1.0 endpoints on a RabbitMQ node of the test's own (tests/rabbitmq_node.py), which it
    may restart: `env` is that node's environment."""
    return Profile("AMQP/1.0", "rabbitmq", lambda run: _amqp(run, env["XGATE_RABBITMQ_PORT"]), settings=AMQP_GUEST,
                   broker_env=env)


def _nats(run: str, address: str = "127.0.0.1:4222") -> dict[str, dict[str, Any]]:
    return {n: {"uris": [f"nats://{address}"], "subject": f"it.{run}.{n}", "stream": f"IT_{run}_{n}".upper()}
            for n in ENDPOINTS}


def private_nats(port: int, address: str | None = None) -> Profile:
    """NATS JetStream on a server of its own (deploy/brokers/nats.sh with XGATE_NATS_PORT), so a test may stop
    it; `address` is where the gateway and the test reach it (a proxy in front of it, say)."""
    return Profile("NATS", "nats", lambda run: _nats(run, address or f"127.0.0.1:{port}"),
                   broker_env={"XGATE_NATS_PORT": str(port)})


def _http(run: str) -> dict[str, dict[str, Any]]:
    return {n: {"uris": [f"http://127.0.0.1:{free_port()}/{n}"]} for n in ENDPOINTS}


PROFILES = {
    "KAFKA": Profile("KAFKA", "kafka", _kafka, settings=KAFKA_GROUP),
    "MQTT/5.0": Profile("MQTT/5.0", "mosquitto", _mqtt, broker_env={"XGATE_MQTT_PORT": MQTT_PORT}),
    "MQTT/3.1.1": Profile("MQTT/3.1.1", "mosquitto", _mqtt, broker_env={"XGATE_MQTT_PORT": MQTT_PORT}),
    "AMQP/1.0": Profile("AMQP/1.0", "rabbitmq", _amqp, settings=AMQP_GUEST),
    "NATS": Profile("NATS", "nats", _nats),
    "HTTP": Profile("HTTP", None, _http),
}
