"""MQTT PUBLISH <-> Envelope mapping and the adapter's options, offline (protocol_adapters/mqtt/mapping.py, options.py).

Properties go through paho's own wire encoding (pack, then unpack as a receiver would) so the tests see
what a broker would carry.
"""

from __future__ import annotations

from typing import Any

import pytest
from paho.mqtt.client import MQTTMessage
from paho.mqtt.exception import MQTTException
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from gateway.envelope import header_values
from gateway.errors import AdapterError
from protocol_adapters.base import EndpointConfig, TlsSettings
from protocol_adapters.mqtt.mapping import (
    accept_bom_in_received_strings,
    envelope_from_message,
    fields_from_publish,
    publish_properties,
    user_property_pairs,
)
from protocol_adapters.mqtt.options import SESSION_NEVER_EXPIRES, build_options

FULL = {
    "content_type": "application/cloudevents+json; charset=utf-8",
    "payload_format": 1,
    "message_expiry_interval": 120,
    "response_topic": "replies/ü",
    "correlation_data": b"\x00\xff\x10\x80",
    "user_properties": [("ce-id", "1"), ("tag", "a"), ("Tag", "b"), ("tag", "c"), ("empty", ""), ("näme", "välue €")],
}


def on_the_wire(properties: Properties | None) -> Properties | None:
    """What a receiver decodes from `properties` as paho writes them into a PUBLISH."""
    if properties is None:
        return None
    received = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
    received.unpack(properties.pack())  # type: ignore[no-untyped-call]
    return received


def message(topic: str, payload: bytes, *, qos: int = 1, retain: bool = False, mid: int = 7,
            properties: Properties | None = None) -> MQTTMessage:
    received = MQTTMessage(mid=mid, topic=topic.encode())
    received.payload = payload
    received.qos = qos
    received.retain = retain
    if properties is not None:
        received.properties = properties
    return received


def test_every_mqtt5_field_of_a_publish() -> None:
    properties = on_the_wire(publish_properties(dict(FULL)))
    body = bytes(range(256))
    envelope = envelope_from_message(message("a/b/c", body, qos=2, retain=True, properties=properties),
                                     "MQTT/5.0", "ep", ack="handle")
    assert envelope.protocol == "MQTT/5.0"
    assert envelope.endpoint == "ep" and envelope.ack == "handle"
    assert envelope.body == body
    assert envelope.position == {"topic_name": "a/b/c", "mid": 7}
    assert envelope.fields == {"topic_name": "a/b/c", "qos": 2, "retain": True, **FULL}


def test_mqtt311_has_topic_qos_and_retain_only() -> None:
    envelope = envelope_from_message(message("x/y", b"\x00\x01", qos=0), "MQTT/3.1.1", "ep")
    assert envelope.fields == {"topic_name": "x/y", "qos": 0, "retain": False}
    assert envelope.body == b"\x00\x01"


def test_absent_mqtt5_properties_are_none_and_no_user_properties_is_empty() -> None:
    envelope = envelope_from_message(message("t", b""), "MQTT/5.0", "ep")
    assert envelope.fields == {"topic_name": "t", "qos": 1, "retain": False, "content_type": None,
                               "payload_format": None, "message_expiry_interval": None, "response_topic": None,
                               "correlation_data": None, "user_properties": []}
    assert publish_properties(envelope.fields) is None


def test_repeated_user_properties_keep_their_order_and_case() -> None:
    fields = fields_from_publish("MQTT/5.0", "t", 1, False, on_the_wire(publish_properties(dict(FULL))))
    pairs = fields["user_properties"]
    assert header_values(pairs, "tag", casefold=False) == ["a", "c"]
    assert header_values(pairs, "tag", casefold=True) == ["a", "b", "c"]
    assert pairs == FULL["user_properties"]


def test_envelope_fields_roundtrip_through_publish_properties() -> None:
    received = fields_from_publish("MQTT/5.0", "t", 1, False, on_the_wire(publish_properties(dict(FULL))))
    assert {k: v for k, v in received.items() if k in FULL} == FULL


def test_encoded_properties_are_byte_for_byte_what_paho_writes() -> None:
    reference = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
    reference.ContentType = FULL["content_type"]
    reference.PayloadFormatIndicator = FULL["payload_format"]
    reference.MessageExpiryInterval = FULL["message_expiry_interval"]
    reference.ResponseTopic = FULL["response_topic"]
    reference.CorrelationData = FULL["correlation_data"]
    reference.UserProperty = FULL["user_properties"]
    encoded = publish_properties(dict(FULL))
    assert encoded is not None
    assert encoded.pack() == reference.pack()  # type: ignore[no-untyped-call]
    long_value = publish_properties({"user_properties": [("k", "v" * 200)]})
    assert long_value is not None and long_value.pack()[:2] == bytes([0x80 | 206 % 128, 206 // 128])


def test_publish_properties_accept_other_shapes() -> None:
    properties = publish_properties({"correlation_data": "text id", "payload_format": "0",
                                     "user_properties": {"a": "1", "b": 2}})
    received = fields_from_publish("MQTT/5.0", "t", 0, False, on_the_wire(properties))
    assert received["correlation_data"] == b"text id"
    assert received["payload_format"] == 0
    assert received["user_properties"] == [("a", "1"), ("b", "2")]
    assert user_property_pairs([{"name": "x", "value": "1"}, ["x", b"2"], ("y", "3")]) == [
        ("x", "1"), ("x", "2"), ("y", "3")]
    assert user_property_pairs(None) == []


@pytest.mark.parametrize("fields", [
    {"user_properties": [("bad\x00name", "v")]},
    {"user_properties": [("bytes", b"\xff\xfe")]},
    {"content_type": "x" * 70000},
    {"correlation_data": b"x" * 70000},
    {"payload_format": 2},
    {"message_expiry_interval": -1},
    {"message_expiry_interval": "soon"},
])
def test_properties_mqtt_cannot_carry_are_a_permanent_error(fields: dict[str, Any]) -> None:
    with pytest.raises(AdapterError) as caught:
        publish_properties(fields)
    assert not caught.value.retriable


def config(protocol: str = "MQTT/5.0", uris: tuple[str, ...] = ("mqtt://127.0.0.1:1883",),
           **options: Any) -> EndpointConfig:
    return EndpointConfig("orders.in", protocol, uris, options)


def test_option_defaults() -> None:
    options = build_options(config(topicfilter="a/#"))
    assert options.v5 and options.protocol == "MQTT/5.0"
    assert options.topic_filters == ("a/#",) and options.topic is None
    assert options.qos == 1 and options.retain is False and options.clean is False
    assert options.client_id == "xgate-orders.in"
    assert options.session_expiry == SESSION_NEVER_EXPIRES
    assert options.receive_maximum == 1000 and options.reject_reason_code == 0x83
    assert [(b.host, b.port, b.transport, b.tls) for b in options.brokers] == [("127.0.0.1", 1883, "tcp", False)]


def test_topics_shared_group_and_versions() -> None:
    options = build_options(config("MQTT/3.1.1", topicfilter="a/+, b/#", sharedsubscriptiongroup="gw",
                                   cleansession="true", qos={"value": 2}))
    assert not options.v5 and options.protocol == "MQTT/3.1.1"
    assert options.topic_filters == ("$share/gw/a/+", "$share/gw/b/#")
    assert options.clean is True and options.qos == 2
    assert build_options(config(topic_name=["x", "y"])).topic_filters == ("x", "y")
    sink = build_options(config(topic="out/topic", retain=True, clientid="gw-1"))
    assert sink.topic == "out/topic" and sink.retain is True and sink.client_id == "gw-1"
    assert build_options(config("MQTT")).v5


def test_broker_uris() -> None:
    options = build_options(config(uris=("mqtts://broker.example", "ws://h:9001/path", "tcp://h2", "h3:1884")))
    assert [(b.host, b.port, b.transport, b.tls, b.path) for b in options.brokers] == [
        ("broker.example", 8883, "tcp", True, "/mqtt"), ("h", 9001, "websockets", False, "/path"),
        ("h2", 1883, "tcp", False, "/mqtt"), ("h3", 1884, "tcp", False, "/mqtt")]
    with_tls = EndpointConfig("e", "MQTT/5.0", ("mqtt://h",), {}, tls=TlsSettings(verify=False))
    assert build_options(with_tls).brokers[0].tls


@pytest.mark.parametrize("protocol_options, uris", [
    ({"qos": 3}, ("mqtt://h",)),
    ({"qos": True}, ("mqtt://h",)),
    ({"retain": "maybe"}, ("mqtt://h",)),
    ({"sharedsubscriptiongroup": "a/b"}, ("mqtt://h",)),
    ({"receivemaximum": 0}, ("mqtt://h",)),
    ({}, ("amqp://h",)),
    ({}, ()),
])
def test_bad_options_are_permanent_errors(protocol_options: dict[str, Any], uris: tuple[str, ...]) -> None:
    with pytest.raises(AdapterError) as caught:
        build_options(EndpointConfig("e", "MQTT/5.0", uris, protocol_options))
    assert not caught.value.retriable and "'e'" in str(caught.value)


def test_received_strings_may_hold_u_feff_but_not_nul() -> None:
    """MQTT 5 [MQTT-1.5.4-3] keeps U+FEFF; paho 2.2 alone would drop the connection over it."""
    accept_bom_in_received_strings()
    sent = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
    sent.UserProperty = [("\ufeffname", "v\ufeff")]
    sent.ContentType = "text/\ufeffplain"
    received = fields_from_publish("MQTT/5.0", "t", 1, False, on_the_wire(sent))
    assert received["user_properties"] == [("\ufeffname", "v\ufeff")]
    assert received["content_type"] == "text/\ufeffplain"
    with_nul = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
    with_nul.ContentType = "a\x00b"
    with pytest.raises(MQTTException):
        on_the_wire(with_nul)
