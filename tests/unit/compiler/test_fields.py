"""validation rule 4 (first table) with 7 (recorded form): every protocol field a definition can constrain is read
from the recorded message, passing and failing, with the exact `protocoloptions.*` violation path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.unit.builders import b64, bad, load_doc, ok, registry, shape


def _load(tmp_path: Path, protocol: str, options: dict[str, Any]) -> Any:
    loaded = load_doc(tmp_path, registry(protocol, {"m": {"protocol": protocol, "protocoloptions": options}}))
    assert loaded.errors == []
    return loaded


# --- KAFKA --------------------------------------------------------------------------------------------


def test_kafka_topic_partition_timestamp(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "KAFKA", {"topic": "orders", "partition": 3, "timestamp": {"required": True}})
    rec = {"protocol": "KAFKA", "topic": "orders", "partition": 3, "timestamp": 1714564800000}
    assert shape(loaded.judge(rec)) == ok("g", "m")
    assert shape(loaded.judge({**rec, "partition": 4})) == bad("g", "m", ("protocoloptions.partition", "value"))
    assert shape(loaded.judge({**rec, "partition": None})) == bad("g", "m", ("protocoloptions.partition", "required"))
    assert shape(loaded.judge({**rec, "timestamp": None})) == bad("g", "m", ("protocoloptions.timestamp", "required"))
    assert shape(loaded.judge({**rec, "timestamp": "yesterday"})) == \
        bad("g", "m", ("protocoloptions.timestamp", "type"))


def test_kafka_timestamp_value(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "KAFKA", {"topic": "t", "timestamp": 1714564800000})
    assert shape(loaded.judge({"protocol": "KAFKA", "topic": "t", "timestamp": 1714564800000})) == ok("g", "m")
    assert shape(loaded.judge({"protocol": "KAFKA", "topic": "t", "timestamp": 1714564800001})) == \
        bad("g", "m", ("protocoloptions.timestamp", "value"))


def test_kafka_key_text(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "KAFKA", {"topic": "t", "key": "dev-1"})
    assert shape(loaded.judge({"protocol": "KAFKA", "topic": "t", "key": "dev-1"})) == ok("g", "m")
    # the same UTF-8 bytes given as key_base64 are the same key
    assert shape(loaded.judge({"protocol": "KAFKA", "topic": "t", "key_base64": b64(b"dev-1")})) == ok("g", "m")
    assert shape(loaded.judge({"protocol": "KAFKA", "topic": "t", "key": "dev-2"})) == \
        bad("g", "m", ("protocoloptions.key", "value"))
    assert shape(loaded.judge({"protocol": "KAFKA", "topic": "t"})) == bad("g", "m", ("protocoloptions.key", "required"))


def test_kafka_key_that_is_not_utf8_is_no_string(tmp_path: Path) -> None:
    # validation rule 5.7: bytes that are not UTF-8 in a text-typed value are `decode`
    loaded = _load(tmp_path, "KAFKA", {"topic": "t", "key": {"type": "string", "required": True}})
    assert shape(loaded.judge({"protocol": "KAFKA", "topic": "t", "key_base64": b64(b"\xff\xfe")})) == \
        bad("g", "m", ("protocoloptions.key", "decode"))


def test_kafka_key_base64(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "KAFKA", {"topic": "t", "key_base64": b64(b"\x00\x01\xff")})
    assert shape(loaded.judge({"protocol": "KAFKA", "topic": "t", "key_base64": b64(b"\x00\x01\xff")})) == \
        ok("g", "m")
    assert shape(loaded.judge({"protocol": "KAFKA", "topic": "t", "key_base64": b64(b"\x00\x01\xfe")})) == \
        bad("g", "m", ("protocoloptions.key_base64", "value"))
    assert shape(loaded.judge({"protocol": "KAFKA", "topic": "t"})) == \
        bad("g", "m", ("protocoloptions.key_base64", "required"))


def test_kafka_headers(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "KAFKA", {"topic": "t", "headers": {
        "tenant": "acme", "attempt": {"type": "integer", "required": True}}})
    rec = {"protocol": "KAFKA", "topic": "t", "headers": {"tenant": "acme", "attempt": "2"}}
    assert shape(loaded.judge(rec)) == ok("g", "m")
    # header bytes given as base64 that are valid UTF-8 read as the same text
    rec_b64 = {"protocol": "KAFKA", "topic": "t", "headers": {"tenant": {"base64": b64(b"acme")}, "attempt": "2"}}
    assert shape(loaded.judge(rec_b64)) == ok("g", "m")
    assert shape(loaded.judge({**rec, "headers": {"tenant": "acme", "attempt": "x"}})) == \
        bad("g", "m", ("protocoloptions.headers.attempt", "type"))
    assert shape(loaded.judge({**rec, "headers": {"tenant": "other", "attempt": "2"}})) == \
        bad("g", "m", ("protocoloptions.headers.tenant", "value"))


def test_kafka_header_names_are_case_sensitive(tmp_path: Path) -> None:
    # silent point (assumed): section 4 calls only NATS and HTTP header names case-insensitive
    loaded = _load(tmp_path, "KAFKA", {"topic": "t", "headers": {"Tenant": "acme"}})
    assert shape(loaded.judge({"protocol": "KAFKA", "topic": "t", "headers": {"Tenant": "acme"}})) == ok("g", "m")
    assert shape(loaded.judge({"protocol": "KAFKA", "topic": "t", "headers": {"tenant": "acme"}})) == \
        bad("g", "m", ("protocoloptions.headers.Tenant", "required"))


def test_kafka_headers_as_a_list_of_pairs(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "KAFKA", {"topic": "t", "headers": [{"name": "tenant", "value": "acme"}]})
    assert shape(loaded.judge({"protocol": "KAFKA", "topic": "t", "headers": [["tenant", "acme"]]})) == ok("g", "m")
    assert shape(loaded.judge({"protocol": "KAFKA", "topic": "t", "headers": [{"name": "tenant", "value": "x"}]})) \
        == bad("g", "m", ("protocoloptions.headers.tenant", "value"))


# --- MQTT 3.1.1 and 5.0 ------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["MQTT/3.1.1", "MQTT/5.0"])
def test_mqtt_topic_qos_retain(tmp_path: Path, protocol: str) -> None:
    loaded = _load(tmp_path, protocol, {"topic_name": "plant/{line}/temp", "qos": 1,
                                        "retain": {"type": "boolean", "required": True}})
    rec = {"protocol": protocol, "topic_name": "plant/7/temp", "qos": 1, "retain": False}
    assert shape(loaded.judge(rec)) == ok("g", "m")
    assert shape(loaded.judge({**rec, "qos": 2})) == bad("g", "m", ("protocoloptions.qos", "value"))
    assert shape(loaded.judge({**rec, "retain": "false"})) == bad("g", "m", ("protocoloptions.retain", "type"))
    assert shape(loaded.judge({k: v for k, v in rec.items() if k != "retain"})) == \
        bad("g", "m", ("protocoloptions.retain", "required"))


def test_mqtt5_properties(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "MQTT/5.0", {
        "topic_name": "t", "content_type": "application/json", "payload_format": 1,
        "message_expiry_interval": {"type": "integer", "required": True},
        "response_topic": "replies/{client}", "correlation_data": {"type": "binary", "required": True}})
    rec = {"protocol": "MQTT/5.0", "topic_name": "t", "content_type": "application/json", "payload_format": 1,
           "message_expiry_interval": 60, "response_topic": "replies/c1", "correlation_data": {"base64": b64(b"\x01")}}
    assert shape(loaded.judge(rec)) == ok("g", "m")
    assert shape(loaded.judge({**rec, "content_type": "text/plain"})) == \
        bad("g", "m", ("protocoloptions.content_type", "value"))
    assert shape(loaded.judge({**rec, "payload_format": 0})) == bad("g", "m", ("protocoloptions.payload_format", "value"))
    assert shape(loaded.judge({**rec, "message_expiry_interval": "60"})) == \
        bad("g", "m", ("protocoloptions.message_expiry_interval", "type"))
    assert shape(loaded.judge({**rec, "response_topic": "other/c1"})) == \
        bad("g", "m", ("protocoloptions.response_topic", "template"))
    assert shape(loaded.judge({k: v for k, v in rec.items() if k != "correlation_data"})) == \
        bad("g", "m", ("protocoloptions.correlation_data", "required"))


@pytest.mark.parametrize("form", ["objects", "pairs"])
def test_mqtt5_user_properties_in_both_list_forms(tmp_path: Path, form: str) -> None:
    loaded = _load(tmp_path, "MQTT/5.0", {"topic_name": "t", "user_properties": [
        {"name": "tenant", "value": "acme"}, {"name": "n", "type": "integer", "required": True}]})

    def props(*pairs: tuple[str, str]) -> list[Any]:
        if form == "objects":
            return [{"name": k, "value": v} for k, v in pairs]
        return [[k, v] for k, v in pairs]

    rec = {"protocol": "MQTT/5.0", "topic_name": "t"}
    assert shape(loaded.judge({**rec, "user_properties": props(("tenant", "acme"), ("n", "1"))})) == ok("g", "m")
    # a repeated name: every occurrence is read
    assert shape(loaded.judge({**rec, "user_properties": props(("tenant", "acme"), ("n", "1"), ("n", "2"))})) == \
        ok("g", "m")
    assert shape(loaded.judge({**rec, "user_properties": props(("tenant", "acme"), ("n", "1"), ("n", "x"))})) == \
        bad("g", "m", ("protocoloptions.user_properties.n", "type"))
    assert shape(loaded.judge({**rec, "user_properties": props(("tenant", "other"), ("n", "1"))})) == \
        bad("g", "m", ("protocoloptions.user_properties.tenant", "value"))
    assert shape(loaded.judge({**rec, "user_properties": props(("n", "1"))})) == \
        bad("g", "m", ("protocoloptions.user_properties.tenant", "required"))


def test_mqtt_user_properties_declared_as_a_map(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "MQTT/5.0", {"topic_name": "t", "user_properties": {"tenant": {"value": "acme",
                                                                                             "required": True}}})
    rec = {"protocol": "MQTT/5.0", "topic_name": "t"}
    assert shape(loaded.judge({**rec, "user_properties": [["tenant", "acme"]]})) == ok("g", "m")
    assert shape(loaded.judge(rec)) == bad("g", "m", ("protocoloptions.user_properties.tenant", "required"))


def test_mqtt_repeated_declared_user_property(tmp_path: Path) -> None:
    # a name declared twice: each occurrence must fit one declaration, each required declaration must be met
    loaded = _load(tmp_path, "MQTT/5.0", {"topic_name": "t", "user_properties": [
        {"name": "tag", "value": "a"}, {"name": "tag", "value": "b"}]})
    rec = {"protocol": "MQTT/5.0", "topic_name": "t", "user_properties": [["tag", "a"], ["tag", "b"]]}
    assert shape(loaded.judge(rec)) == ok("g", "m")
    rec["user_properties"] = [["tag", "b"], ["tag", "a"]]
    assert shape(loaded.judge(rec)) == ok("g", "m")
    rec["user_properties"] = [["tag", "a"]]
    assert shape(loaded.judge(rec)) == bad("g", "m", ("protocoloptions.user_properties.tag", "required"))
    rec["user_properties"] = [["tag", "a"], ["tag", "b"], ["tag", "c"]]
    assert shape(loaded.judge(rec)) == bad("g", "m", ("protocoloptions.user_properties.tag", "value"))


# --- AMQP 1.0 ------------------------------------------------------------------------------------------


@pytest.fixture
def amqp(tmp_path: Path) -> Any:
    return _load(tmp_path, "AMQP/1.0", {
        "properties": {"subject": "order.created", "message-id": {"required": True},
                       "to": {"value": "/queues/{queue}"}, "user-id": {"type": "binary", "required": True},
                       "group-sequence": {"type": "integer"}},
        "application-properties": {"priority": {"type": "integer", "value": 5}, "urgent": {"value": True},
                                   "blob": {"type": "binary", "value": b64(b"\x00\xff")}},
        "message-annotations": {"x-opt-partition-key": {"value": "{queue}", "required": True}},
        "delivery-annotations": {"x-trace": {"type": "string", "required": True}},
        "header": {"durable": True, "priority": {"type": "integer"}},
        "footer": {"checksum": {"type": "symbol", "required": True}}})


def _amqp_record(**changes: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "protocol": "AMQP/1.0",
        "properties": {"subject": "order.created", "message-id": "m-1", "to": "/queues/q1",
                       "user-id": {"base64": b64(b"alice")}, "group-sequence": 3},
        "application-properties": {"priority": 5, "urgent": True, "blob": {"base64": b64(b"\x00\xff")}},
        "message-annotations": {"x-opt-partition-key": "q1"},
        "delivery-annotations": {"x-trace": "abc"},
        "header": {"durable": True, "priority": 4},
        "footer": {"checksum": "c0ffee"}}
    for path, value in changes.items():
        section, name = path.split(":")
        if value is None:
            rec[section].pop(name)
        else:
            rec[section][name] = value
    return rec


def test_amqp_sections_conform(amqp: Any) -> None:
    assert shape(amqp.judge(_amqp_record())) == ok("g", "m")


def test_amqp_section_aliases_in_the_recorded_form(amqp: Any) -> None:
    rec = _amqp_record()
    rec["application_properties"] = rec.pop("application-properties")
    rec["message_annotations"] = rec.pop("message-annotations")
    rec["delivery_annotations"] = rec.pop("delivery-annotations")
    assert shape(amqp.judge(rec)) == ok("g", "m")


@pytest.mark.parametrize(("change", "violation"), [
    ({"properties:message-id": None}, ("protocoloptions.properties.message-id", "required")),
    ({"properties:to": "/topics/q1"}, ("protocoloptions.properties.to", "template")),
    ({"properties:user-id": "alice"}, ("protocoloptions.properties.user-id", "type")),
    # text in canonical form ("3", "5", "true") is valid for AMQP (validation rule 5.7); other text is not
    ({"properties:group-sequence": "3x"}, ("protocoloptions.properties.group-sequence", "type")),
    ({"application-properties:priority": "five"}, ("protocoloptions.application-properties.priority", "type")),
    ({"application-properties:priority": 6}, ("protocoloptions.application-properties.priority", "value")),
    ({"application-properties:urgent": False}, ("protocoloptions.application-properties.urgent", "value")),
    ({"application-properties:urgent": "yes"}, ("protocoloptions.application-properties.urgent", "type")),
    ({"application-properties:blob": {"base64": b64(b"\x00\xfe")}},
     ("protocoloptions.application-properties.blob", "value")),
    ({"message-annotations:x-opt-partition-key": "q2"},
     ("protocoloptions.message-annotations.x-opt-partition-key", "placeholder")),
    ({"delivery-annotations:x-trace": None}, ("protocoloptions.delivery-annotations.x-trace", "required")),
    ({"delivery-annotations:x-trace": 7}, ("protocoloptions.delivery-annotations.x-trace", "type")),
    ({"header:durable": False}, ("protocoloptions.header.durable", "value")),
    ({"header:priority": 1.5}, ("protocoloptions.header.priority", "type")),
    ({"footer:checksum": "c0 ffee"}, ("protocoloptions.footer.checksum", "type")),
])
def test_amqp_each_section_fails_on_its_own(amqp: Any, change: dict[str, Any],
                                            violation: tuple[str, str]) -> None:
    assert shape(amqp.judge(_amqp_record(**change))) == bad("g", "m", violation)


# --- NATS ----------------------------------------------------------------------------------------------


def test_nats_subject_reply_to_headers(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "NATS", {"subject": "orders.created", "reply-to": "_INBOX.{id}",
                                      "headers": {"Tenant": {"value": "acme", "required": True},
                                                  "X-N": {"type": "integer"}}})
    rec = {"protocol": "NATS", "subject": "orders.created", "reply-to": "_INBOX.abc",
           "headers": {"tenant": "acme", "x-n": ["1", "2"]}}
    assert shape(loaded.judge(rec)) == ok("g", "m")
    assert shape(loaded.judge({**rec, "headers": {"TENANT": "acme"}})) == ok("g", "m")
    underscore = {**{k: v for k, v in rec.items() if k != "reply-to"}, "reply_to": "_INBOX.abc"}
    assert shape(loaded.judge(underscore)) == ok("g", "m")
    assert shape(loaded.judge({**rec, "reply-to": "elsewhere"})) == bad("g", "m", ("protocoloptions.reply-to", "template"))
    assert shape(loaded.judge({**rec, "headers": {"tenant": "other"}})) == \
        bad("g", "m", ("protocoloptions.headers.Tenant", "value"))
    assert shape(loaded.judge({**rec, "headers": {"tenant": "acme", "X-n": ["1", "zwei"]}})) == \
        bad("g", "m", ("protocoloptions.headers.X-N", "type"))
    assert shape(loaded.judge({**rec, "headers": {}})) == bad("g", "m", ("protocoloptions.headers.Tenant", "required"))


def test_nats_headers_declared_as_a_list(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "NATS", {"subject": "s", "headers": [{"name": "Nats-Msg-Id", "value": "{id}"}]})
    assert shape(loaded.judge({"protocol": "NATS", "subject": "s", "headers": {"nats-msg-id": "42"}})) == ok("g", "m")
    # 1.0 list entries with name + value and no `required` are plain values: required
    assert shape(loaded.judge({"protocol": "NATS", "subject": "s"})) == \
        bad("g", "m", ("protocoloptions.headers.Nats-Msg-Id", "required"))


# --- HTTP ----------------------------------------------------------------------------------------------


def test_http_method_path_query_headers(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "HTTP", {"method": "POST", "path": "/orders/{id}",
                                      "query": {"v": {"value": "2", "required": True}},
                                      "headers": [{"name": "X-Tenant", "value": "acme"}]})
    rec = {"protocol": "HTTP", "method": "POST", "path": "/orders/9", "query": {"v": "2"},
           "headers": {"x-tenant": "acme"}}
    assert shape(loaded.judge(rec)) == ok("g", "m")
    assert shape(loaded.judge({**rec, "headers": {"X-TENANT": ["acme"]}})) == ok("g", "m")
    assert shape(loaded.judge({**rec, "method": "PUT"})) == bad("g", "m", ("protocoloptions.method", "value"))
    assert shape(loaded.judge({**rec, "query": {"v": "3"}})) == bad("g", "m", ("protocoloptions.query.v", "value"))
    assert shape(loaded.judge({**rec, "query": {}})) == bad("g", "m", ("protocoloptions.query.v", "required"))
    assert shape(loaded.judge({**rec, "headers": {"x-tenant": "x"}})) == \
        bad("g", "m", ("protocoloptions.headers.X-Tenant", "value"))
    assert shape(loaded.judge({**rec, "headers": {}})) == bad("g", "m", ("protocoloptions.headers.X-Tenant", "required"))


def test_http_query_names_are_case_sensitive(tmp_path: Path) -> None:
    # silent point (assumed): query parameter names keep their case (only header names are case-insensitive)
    loaded = _load(tmp_path, "HTTP", {"path": "/p", "query": {"v": {"required": True}}})
    assert shape(loaded.judge({"protocol": "HTTP", "path": "/p", "query": {"v": "1"}})) == ok("g", "m")
    assert shape(loaded.judge({"protocol": "HTTP", "path": "/p", "query": {"V": "1"}})) == \
        bad("g", "m", ("protocoloptions.query.v", "required"))
