"""Cross-protocol routes re-map CloudEvents per the bindings; same-protocol routes keep everything."""

from __future__ import annotations

import json

import pytest

from gateway.cloudevents import read_cloudevents
from gateway.envelope import Envelope
from gateway.runtime.remap import VIOLATIONS_LIMIT, dead_letter_headers, outgoing
from gateway.verdict import Outcome, Rule, Verdict, Violation

ATTRIBUTES = {"specversion": "1.0", "type": "com.example.t", "id": "42", "source": "/s/1", "subject": "x",
              "datacontenttype": "application/json"}
BODY = b'{"v": 1}'
PROTOCOLS = ["KAFKA", "MQTT/5.0", "MQTT/3.1.1", "AMQP/1.0", "NATS", "HTTP"]


def binary(protocol: str) -> Envelope:
    attrs = {k: v for k, v in ATTRIBUTES.items() if k != "datacontenttype"}
    if protocol == "KAFKA":
        headers = [(f"ce_{k}", v.encode()) for k, v in attrs.items()]
        return Envelope(protocol, {"topic": "t", "key": b"k", "headers": headers + [
            ("content-type", b"application/json"), ("trace", b"abc")]}, BODY)
    if protocol == "MQTT/5.0":
        return Envelope(protocol, {"topic_name": "t", "qos": 1, "content_type": "application/json",
                                   "user_properties": list(attrs.items()) + [("x-trace", "abc")]}, BODY)
    if protocol == "AMQP/1.0":
        return Envelope(protocol, {"properties": {"content-type": "application/json"},
                                   "application-properties": {**{f"cloudEvents_{k}": v for k, v in attrs.items()},
                                                              "trace": "abc"}}, BODY)
    if protocol == "NATS":
        return Envelope(protocol, {"subject": "t", "headers": [(f"ce-{k}", v) for k, v in ATTRIBUTES.items()] + [
            ("trace", "abc")]}, BODY)
    return Envelope(protocol, {"method": "POST", "path": "/", "headers": [(f"ce-{k}", v) for k, v in attrs.items()]
                               + [("Content-Type", "application/json"), ("trace", "abc")]}, BODY)


SOURCES = [p for p in PROTOCOLS if p != "MQTT/3.1.1"]


@pytest.mark.parametrize("target", PROTOCOLS)
@pytest.mark.parametrize("source", SOURCES)
def test_binary_event_keeps_its_attributes_and_data_across_protocols(source: str, target: str) -> None:
    out = outgoing(binary(source), target)
    assert out.protocol == target
    [event] = read_cloudevents(out, None)
    assert event.problem is None
    assert {k: event.attributes.get(k) for k in ATTRIBUTES} == ATTRIBUTES
    if target == "MQTT/3.1.1":
        assert event.mode == "structured" and event.data == {"v": 1}  # no headers: becomes a JSON-format event
    else:
        assert event.mode == "binary" and out.body == BODY


@pytest.mark.parametrize("target", ["KAFKA", "MQTT/5.0", "AMQP/1.0", "NATS", "HTTP"])
@pytest.mark.parametrize("source", SOURCES)
def test_other_headers_carry_over_as_text(source: str, target: str) -> None:
    out = outgoing(binary(source), target)
    fields = out.fields
    if target == "KAFKA":
        names = {n: v for n, v in fields["headers"]}
        value = names.get("trace", names.get("x-trace"))
        assert value == b"abc"
    elif target == "MQTT/5.0":
        assert ("trace", "abc") in fields["user_properties"] or ("x-trace", "abc") in fields["user_properties"]
    elif target == "AMQP/1.0":
        props = fields["application-properties"]
        assert props.get("trace", props.get("x-trace")) == "abc"
    else:
        assert {"trace", "x-trace"} & {n for n, v in fields["headers"] if v == "abc"}


@pytest.mark.parametrize("target", PROTOCOLS)
def test_structured_event_keeps_body_and_content_type(target: str) -> None:
    body = json.dumps({**ATTRIBUTES, "data": {"v": 1}}).encode()
    source = Envelope("HTTP", {"method": "POST", "path": "/", "headers": [
        ("Content-Type", "application/cloudevents+json")]}, body)
    out = outgoing(source, target)
    assert out.body == body
    [event] = read_cloudevents(out, None)
    assert event.mode == "structured" and event.data == {"v": 1}


def test_same_protocol_keeps_key_headers_and_timestamp_byte_for_byte() -> None:
    source = binary("KAFKA")
    source.fields.update(partition=3, timestamp=1700000000000, headers=source.fields["headers"] + [("raw", b"\xff")])
    out = outgoing(source, "KAFKA")
    assert out.fields["key"] == b"k" and out.fields["timestamp"] == 1700000000000
    assert out.fields["headers"] == source.fields["headers"] and "partition" not in out.fields
    assert out.fields is not source.fields


def test_dead_letter_headers_say_why_and_where_from() -> None:
    verdict = Verdict(Outcome.NONCONFORMANT, "g", "m", tuple(
        Violation(f"dataschema:/f{i}", Rule.SCHEMA, "x" * 50, "y" * 50, "m" * 80) for i in range(200)))
    envelope = binary("KAFKA")
    envelope.position = {"topic": "t", "partition": 2, "offset": 99}
    headers = dict(dead_letter_headers(envelope, verdict, "in"))
    assert headers["xgate-verdict"] == "nonconformant" and headers["xgate-messageid"] == "m"
    assert headers["xgate-source-endpoint"] == "in" and headers["xgate-source-address"] == "t"
    assert json.loads(headers["xgate-source-position"]) == {"topic": "t", "partition": 2, "offset": 99}
    violations = json.loads(headers["xgate-violations"])
    assert len(headers["xgate-violations"]) <= VIOLATIONS_LIMIT
    assert violations[0]["rule"] == "schema" and violations[-1]["rule"] == "truncated"
    out = outgoing(envelope, "AMQP/1.0", list(headers.items()))
    assert out.fields["application-properties"]["xgate-verdict"] == "nonconformant"


def test_dead_letter_headers_are_ascii_json_whatever_the_violation_holds() -> None:
    verdict = Verdict(Outcome.NONCONFORMANT, "g", "m", (
        Violation("data.name", Rule.SCHEMA, "ü at most 3", "naïve ☃", "too long"),
        Violation("data.big", Rule.SCHEMA, "at most 1", 2**70, "too big")))
    headers = dict(dead_letter_headers(binary("KAFKA"), verdict, "in"))
    assert headers["xgate-violations"].isascii() and ", " not in headers["xgate-violations"]
    violations = json.loads(headers["xgate-violations"])
    assert violations[0]["actual"] == "naïve ☃" and violations[1]["actual"] == 2**70
