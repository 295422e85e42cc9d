"""validation rule 7: the recorded message form -> Envelope (gateway/recorded.py), and judge_lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.check import judge_lines, judge_record
from gateway.recorded import RecordError, envelope_from_record
from tests.unit.builders import b64, bad, ce_message, kafka_ce, load_doc, ok, registry, shape


@pytest.mark.parametrize(("written", "protocol"), [
    ("KAFKA", "KAFKA"), ("Kafka", "KAFKA"), ("KAFKA/3.0", "KAFKA"), ("mqtt", "MQTT/5.0"), ("MQTT/3.1.1", "MQTT/3.1.1"),
    ("MQTT/5.0", "MQTT/5.0"), ("AMQP", "AMQP/1.0"), ("amqp/1.0", "AMQP/1.0"), ("NATS/1.0.0", "NATS"),
    ("HTTP/1.1", "HTTP"), ("http", "HTTP")])
def test_protocol_names(written: str, protocol: str) -> None:
    assert envelope_from_record({"protocol": written}).protocol == protocol


def test_unknown_or_missing_protocol_is_an_error() -> None:
    with pytest.raises(RecordError):
        envelope_from_record({"protocol": "SMTP"})
    with pytest.raises(RecordError):
        envelope_from_record({})
    assert envelope_from_record({}, default_protocol="NATS").protocol == "NATS"


def test_body_text_and_base64() -> None:
    assert envelope_from_record({"protocol": "HTTP", "body": "héllo"}).body == "héllo".encode()
    assert envelope_from_record({"protocol": "HTTP", "body_base64": b64(b"\xff\x00")}).body == b"\xff\x00"
    assert envelope_from_record({"protocol": "HTTP"}).body == b""
    with pytest.raises(RecordError):
        envelope_from_record({"protocol": "HTTP", "body": {"a": 1}})
    with pytest.raises(RecordError):
        envelope_from_record({"protocol": "HTTP", "body_base64": "not base64!"})


def test_endpoint_from_record_or_default() -> None:
    assert envelope_from_record({"protocol": "HTTP", "endpoint": "a"}, "b").endpoint == "a"
    assert envelope_from_record({"protocol": "HTTP"}, "b").endpoint == "b"


def test_kafka_fields() -> None:
    env = envelope_from_record({"protocol": "KAFKA", "topic": "t", "partition": 2, "timestamp": 1714564800000,
                                "key": "k", "headers": {"a": "1", "b": {"base64": b64(b"\xff")}, "c": None}})
    assert env.fields["topic"] == "t"
    assert env.fields["partition"] == 2
    assert env.fields["timestamp"] == 1714564800000
    assert env.fields["key"] == b"k"
    assert env.fields["headers"] == [("a", b"1"), ("b", b"\xff"), ("c", None)]


def test_kafka_key_base64_and_repeated_headers() -> None:
    env = envelope_from_record({"protocol": "KAFKA", "key_base64": b64(b"\x00\x01"),
                                "headers": [["h", "1"], {"name": "h", "value": "2"}]})
    assert env.fields["key"] == b"\x00\x01"
    assert env.fields["headers"] == [("h", b"1"), ("h", b"2")]
    assert envelope_from_record({"protocol": "KAFKA"}).fields["key"] is None


def test_mqtt_fields_and_user_properties_both_forms() -> None:
    env = envelope_from_record({"protocol": "MQTT/5.0", "topic_name": "a/b", "qos": 1, "retain": True,
                                "content_type": "application/json", "payload_format": 1,
                                "message_expiry_interval": 30, "response_topic": "r",
                                "correlation_data": {"base64": b64(b"\x01\x02")},
                                "user_properties": [{"name": "x", "value": "1"}, ["x", "2"], ["y", "3"]]})
    assert env.fields["topic_name"] == "a/b"
    assert env.fields["qos"] == 1 and env.fields["retain"] is True
    assert env.fields["content_type"] == "application/json"
    assert env.fields["payload_format"] == 1 and env.fields["message_expiry_interval"] == 30
    assert env.fields["response_topic"] == "r"
    assert env.fields["correlation_data"] == b"\x01\x02"
    assert env.fields["user_properties"] == [("x", "1"), ("x", "2"), ("y", "3")]


def test_mqtt_bad_user_property_entry() -> None:
    with pytest.raises(RecordError, match=r"user_properties\[0\]"):
        envelope_from_record({"protocol": "MQTT/5.0", "user_properties": ["x"]})


def test_amqp_sections_keep_json_types_and_binary() -> None:
    env = envelope_from_record({"protocol": "AMQP/1.0",
                                "properties": {"subject": "s", "user-id": {"base64": b64(b"\xfe")}},
                                "application_properties": {"n": 1, "f": 1.5, "b": False, "z": None, "s": "x"},
                                "header": {"durable": True}, "footer": {"k": "v"},
                                "message-annotations": {"m": 1}, "delivery-annotations": {"d": "x"}})
    assert env.fields["properties"] == {"subject": "s", "user-id": b"\xfe"}
    assert env.fields["application-properties"] == {"n": 1, "f": 1.5, "b": False, "z": None, "s": "x"}
    assert env.fields["header"] == {"durable": True}
    assert env.fields["footer"] == {"k": "v"}
    assert env.fields["message-annotations"] == {"m": 1}
    assert env.fields["delivery-annotations"] == {"d": "x"}


def test_amqp_section_must_be_an_object() -> None:
    with pytest.raises(RecordError):
        envelope_from_record({"protocol": "AMQP/1.0", "properties": ["subject"]})


def test_nats_and_http_repeated_headers() -> None:
    env = envelope_from_record({"protocol": "NATS", "subject": "s", "reply_to": "r",
                                "headers": {"A": ["1", "2"], "b": "3"}})
    assert env.fields["subject"] == "s" and env.fields["reply-to"] == "r"
    assert env.fields["headers"] == [("A", "1"), ("A", "2"), ("b", "3")]
    env = envelope_from_record({"protocol": "HTTP", "method": "GET", "path": "/p", "query": {"q": ["1", "2"]},
                                "headers": {"Accept": "x"}})
    assert (env.fields["method"], env.fields["path"]) == ("GET", "/p")
    assert env.fields["query"] == [("q", "1"), ("q", "2")]
    assert env.fields["headers"] == [("Accept", "x")]


def test_headers_of_the_wrong_shape() -> None:
    with pytest.raises(RecordError):
        envelope_from_record({"protocol": "HTTP", "headers": "Accept: x"})


# --- judge_record / judge_lines ------------------------------------------------------------------------


@pytest.fixture
def loaded(tmp_path: Path):  # type: ignore[no-untyped-def]
    return load_doc(tmp_path, registry("KAFKA", {"m": ce_message("t")}))


def test_unreadable_record_is_a_decode_verdict(loaded) -> None:  # type: ignore[no-untyped-def]
    assert shape(judge_record(loaded.ruleset, {"protocol": "KAFKA", "body_base64": "%%%"})) == \
        bad(None, None, ("record", "decode"))
    assert shape(judge_record(loaded.ruleset, ["not", "an", "object"])) == bad(None, None, ("record", "decode"))


def test_record_protocol_defaults_to_the_endpoint_protocol(loaded) -> None:  # type: ignore[no-untyped-def]
    record = kafka_ce("t")
    del record["protocol"]
    assert shape(judge_record(loaded.ruleset, record, "ep")) == ok("g", "m")


def test_judge_lines_keeps_order_and_skips_blank_lines(loaded) -> None:  # type: ignore[no-untyped-def]
    lines = [json.dumps(kafka_ce("t")), "", "   ", "{broken", json.dumps(kafka_ce("t", omit=["ce_id"]))]
    verdicts = [shape(v) for v in judge_lines(loaded.ruleset, lines, "ep")]
    assert verdicts == [ok("g", "m"), bad(None, None, ("record", "decode")),
                        bad("g", "m", ("envelopemetadata.id", "required"))]


def test_lines_are_strict_json_read_like_bodies(loaded) -> None:  # type: ignore[no-untyped-def]
    from gateway.check import judge_line

    record = kafka_ce("t")
    assert shape(judge_line(loaded.ruleset, json.dumps(record), "ep")) == ok("g", "m")
    # an integer past 64 bits (orjson refuses it; json reads it) still reads
    assert shape(judge_line(loaded.ruleset, json.dumps({**record, "timestamp": 2**70}), "ep")) == ok("g", "m")
    # NaN is not JSON (RFC 8259), and nesting past the limit is refused before anything walks it
    nan = json.dumps({**record, "timestamp": float("nan")})
    assert shape(judge_line(loaded.ruleset, nan, "ep")) == bad(None, None, ("record", "decode"))
    deep = json.dumps({**record, "extra": [[[]]]}).replace("[[[]]]", "[" * 200 + "]" * 200)
    verdict = judge_line(loaded.ruleset, deep, "ep")
    assert shape(verdict) == bad(None, None, ("record", "decode"))
    assert "nests deeper than 128 levels" in verdict.violations[0].message


def test_verdict_line_shape(loaded) -> None:  # type: ignore[no-untyped-def]
    verdict = judge_record(loaded.ruleset, kafka_ce("t", omit=["ce_source"]))
    line = verdict.as_dict()
    assert line["verdict"] == "nonconformant"
    assert (line["messagegroupid"], line["messageid"]) == ("g", "m")
    assert line["violations"] == [{"path": "envelopemetadata.source", "rule": "required", "expected": "present",
                                   "actual": None, "message": line["violations"][0]["message"]}]
    assert line["violations"][0]["message"] and "\n" not in line["violations"][0]["message"]
    assert judge_record(loaded.ruleset, kafka_ce("t")).as_dict() == {
        "verdict": "conformant", "messagegroupid": "g", "messageid": "m", "violations": []}


def test_actual_is_truncated(loaded) -> None:  # type: ignore[no-untyped-def]
    verdict = judge_record(loaded.ruleset, kafka_ce("t", extra_headers={"ce_source": "x y" * 200}))
    actual = verdict.as_dict()["violations"][0]["actual"]
    assert isinstance(actual, str) and len(actual) < 200 and actual.endswith("...")


def test_only_amqp_values_which_are_copied_recursively_are_bounded_in_depth() -> None:
    deep: object = "leaf"
    for _ in range(200):
        deep = [deep]
    with pytest.raises(RecordError, match="nests deeper than 128 levels"):
        envelope_from_record({"protocol": "AMQP/1.0", "application-properties": {"a": deep}})
    # a member no protocol reads is not walked: the record is read as if it were absent
    kafka = envelope_from_record({"protocol": "KAFKA", "topic": "t", "body": "{}", "extra": deep})
    assert kafka.fields["topic"] == "t" and kafka.body == b"{}"
