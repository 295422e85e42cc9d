"""`xgate run --workers N`: each protocol shares a source between workers by its own means."""

from __future__ import annotations

import pytest

from protocol_adapters import registry
from protocol_adapters.base import EndpointConfig
from protocol_adapters.http.options import source_options as http_source_options
from protocol_adapters.mqtt.options import build_options as mqtt_options
from protocol_adapters.nats.options import source_options as nats_source_options


def _config(protocol: str, uri: str, **options: object) -> EndpointConfig:
    return EndpointConfig("orders.in", protocol, (uri,), options)


def test_mqtt_workers_subscribe_as_one_shared_subscription_with_sessions_of_their_own() -> None:
    config = _config("MQTT/5.0", "mqtt://127.0.0.1:1883", topic_name="orders/#")
    first, second = (mqtt_options(registry.share_source(config, worker)) for worker in (0, 1))
    assert first.topic_filters == second.topic_filters == ("$share/xgate-orders.in/orders/#",)
    assert first.client_id != second.client_id
    assert mqtt_options(config).topic_filters == ("orders/#",)  # one process: a plain subscription


def test_mqtt_keeps_the_operators_group_and_client_id() -> None:
    config = _config("MQTT/3.1.1", "mqtt://127.0.0.1:1883", topic_name="t", sharedsubscriptiongroup="ops",
                     clientid="edge")
    options = mqtt_options(registry.share_source(config, 1))
    assert options.topic_filters == ("$share/ops/t",) and options.client_id == "edge-w1"


def test_core_nats_workers_join_one_queue_group() -> None:
    config = _config("NATS", "nats://127.0.0.1:4222", subject="orders.>")
    assert nats_source_options(registry.share_source(config, 0)).queue_group == "xgate-orders.in"
    assert nats_source_options(config).queue_group == ""


def test_jetstream_workers_pull_from_the_same_durable_consumer() -> None:
    config = _config("NATS", "nats://127.0.0.1:4222", subject="orders.>", stream="ORDERS")
    durables = {nats_source_options(registry.share_source(config, worker)).durable for worker in (0, 1)}
    assert durables == {nats_source_options(config).durable}


def test_webhook_workers_bind_with_reuse_port() -> None:
    config = _config("HTTP", "http://127.0.0.1:8080/events")
    assert http_source_options(registry.share_source(config, 0)).reuse_port
    assert not http_source_options(config).reuse_port


@pytest.mark.parametrize(("value", "reuse"), [("true", True), ("yes", True),
                                              ("false", False), ("0", False), (False, False)])
def test_reuseport_from_gateway_yaml_is_read_as_a_flag(value: object, reuse: bool) -> None:
    """`reuseport: ${XGATE_REUSEPORT}` expands to text: "true" must mean true (it was read with `is True`)."""
    config = EndpointConfig("orders.in", "HTTP", ("http://127.0.0.1:8080/events",), {}, extra={"reuseport": value})
    assert http_source_options(config).reuse_port is reuse


def test_a_reuseport_that_is_no_flag_is_refused_by_name() -> None:
    from protocol_adapters.option_values import OptionError

    config = EndpointConfig("orders.in", "HTTP", ("http://127.0.0.1:8080/events",), {}, extra={"reuseport": "sometimes"})
    with pytest.raises(OptionError, match="reuseport.*expected true or false, found 'sometimes'"):
        http_source_options(config)


@pytest.mark.parametrize("protocol,uri", [("KAFKA", "tcp://127.0.0.1:9092"), ("AMQP/1.0", "amqp://127.0.0.1:5672")])
def test_consumer_groups_and_competing_receivers_need_no_change(protocol: str, uri: str) -> None:
    config = _config(protocol, uri, topic="orders", node="/queue/orders")
    assert registry.share_source(config, 1) == config


def test_a_protocol_that_cannot_share_says_so() -> None:
    from gateway.errors import GatewayError

    with pytest.raises(GatewayError, match="--workers 1"):
        registry.share_source(_config("MEMORY", "memory://x"), 1)


def test_kafka_workers_get_static_member_ids_of_their_own() -> None:
    """Issue 35, item 12: `group_instance_id` (KIP-345) must differ between the group's members."""
    from protocol_adapters.kafka.options import source_options as kafka_source_options

    config = _config("KAFKA", "tcp://127.0.0.1:9092", topic="orders", group_instance_id="edge-1")
    assert kafka_source_options(config).group_instance_id == "edge-1"
    ids = {kafka_source_options(registry.share_source(config, worker)).group_instance_id for worker in (0, 1)}
    assert ids == {"edge-1-0", "edge-1-1"}
    plain = _config("KAFKA", "tcp://127.0.0.1:9092", topic="orders")
    assert kafka_source_options(registry.share_source(plain, 0)).group_instance_id is None
    from_settings = EndpointConfig("orders.in", "KAFKA", ("127.0.0.1:9092",), {"topic": "orders"},
                                   extra={"group_instance_id": "edge-2"})
    assert kafka_source_options(registry.share_source(from_settings, 1)).group_instance_id == "edge-2-1"
