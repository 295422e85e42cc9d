"""validation rule 5.1 (CloudEvents implicit rules), 5.2 (declared properties), 5.4 (fixed values, "any
timestamp") and 5.5 (content type), each failing on its own with an exact violation path and rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit.builders import CE, bad, ce_message, http_ce, kafka_ce, load_doc, ok, registry, shape

# --- 5.1 CloudEvents implicit rules -----------------------------------------------------------------


@pytest.fixture
def typed(tmp_path: Path) -> Any:
    """A CloudEvents definition with a fixed type and nothing else declared."""
    return load_doc(tmp_path, registry("KAFKA", {"m": ce_message("t")}))


@pytest.fixture
def untyped(tmp_path: Path) -> Any:
    """A CloudEvents definition that declares nothing: no discriminator, every rule is implicit."""
    return load_doc(tmp_path, registry("KAFKA", {"m": {"envelope": CE}}))


def test_complete_event_conforms(typed: Any, untyped: Any) -> None:
    assert shape(typed.judge(kafka_ce("t"))) == ok("g", "m")
    assert shape(untyped.judge(kafka_ce("anything"))) == ok("g", "m")


@pytest.mark.parametrize(("headers", "omit", "violation"), [
    ({}, ["ce_specversion"], ("envelopemetadata.specversion", "specversion")),
    ({"ce_specversion": "0.3"}, [], ("envelopemetadata.specversion", "specversion")),
    ({"ce_specversion": "1.0.0"}, [], ("envelopemetadata.specversion", "specversion")),
    ({}, ["ce_id"], ("envelopemetadata.id", "required")),
    ({"ce_id": ""}, [], ("envelopemetadata.id", "required")),
    ({}, ["ce_source"], ("envelopemetadata.source", "required")),
    ({"ce_source": ""}, [], ("envelopemetadata.source", "required")),
    ({"ce_source": "not a uri reference"}, [], ("envelopemetadata.source", "type")),
    ({"ce_time": "yesterday"}, [], ("envelopemetadata.time", "type")),
    ({"ce_time": "2024-05-01T12:00:00"}, [], ("envelopemetadata.time", "type")),
    ({"ce_dataschema": "/relative/schema"}, [], ("envelopemetadata.dataschema", "type")),
    ({"ce_Comexampleext": "1"}, [], ("envelopemetadata.Comexampleext", "attribute-name")),
    ({"ce_my_ext": "1"}, [], ("envelopemetadata.my_ext", "attribute-name")),
    ({"ce_my-ext": "1"}, [], ("envelopemetadata.my-ext", "attribute-name")),
])
def test_each_implicit_rule_fails_on_its_own(typed: Any, headers: dict[str, str], omit: list[str],
                                             violation: tuple[str, str]) -> None:
    assert shape(typed.judge(kafka_ce("t", extra_headers=headers, omit=omit))) == bad("g", "m", violation)


@pytest.mark.parametrize("headers", [
    {"ce_time": "2024-05-01T12:00:00+02:00"},
    {"ce_dataschema": "https://example.com/schema.json"},
    {"ce_source": "https://example.com/devices/1"},
    {"ce_source": "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66"},
    {"ce_comexampleext1": "x"},
    {"ce_subject": "any text at all"},
])
def test_valid_optional_attributes_conform(typed: Any, headers: dict[str, str]) -> None:
    assert shape(typed.judge(kafka_ce("t", extra_headers=headers))) == ok("g", "m")


def test_type_is_required_when_nothing_else_names_the_definition(untyped: Any) -> None:
    assert shape(untyped.judge(kafka_ce(None))) == bad("g", "m", ("envelopemetadata.type", "required"))
    assert shape(untyped.judge(kafka_ce(""))) == bad("g", "m", ("envelopemetadata.type", "required"))


def test_several_implicit_failures_are_all_reported(untyped: Any) -> None:
    verdict = untyped.judge(kafka_ce("x", omit=["ce_specversion", "ce_id"], extra_headers={"ce_time": "no"}))
    assert shape(verdict) == bad("g", "m", ("envelopemetadata.specversion", "specversion"),
                                 ("envelopemetadata.id", "required"), ("envelopemetadata.time", "type"))


def test_missing_specversion_is_still_read_in_binary_mode(typed: Any) -> None:
    # section 8: Kafka headers with ce_type but no ce_specversion are read in binary mode and fail specversion
    verdict = typed.judge({"protocol": "KAFKA", "topic": "t", "headers": {"ce_type": "t", "ce_id": "1",
                                                                          "ce_source": "/s"}})
    assert shape(verdict) == bad("g", "m", ("envelopemetadata.specversion", "specversion"))
    assert verdict.violations[0].actual is None


def _structured(event: Any, content_type: str = "application/cloudevents+json") -> dict[str, Any]:
    return {"protocol": "HTTP", "method": "POST", "path": "/in", "headers": {"Content-Type": content_type},
            "body": event if isinstance(event, str) else json.dumps(event)}


EVENT = {"specversion": "1.0", "id": "1", "source": "/s", "type": "t"}


@pytest.fixture
def http_typed(tmp_path: Path) -> Any:
    return load_doc(tmp_path, registry("HTTP", {"m": ce_message("t")}))


def test_structured_event_conforms(http_typed: Any) -> None:
    assert shape(http_typed.judge(_structured(EVENT))) == ok("g", "m")
    assert shape(http_typed.judge(_structured(EVENT, "Application/CloudEvents+JSON; charset=utf-8"))) == \
        ok("g", "m")


@pytest.mark.parametrize(("change", "violation"), [
    ({"specversion": 1.0}, ("envelopemetadata.specversion", "specversion")),
    ({"id": 5}, ("envelopemetadata.id", "type")),
    ({"source": 5}, ("envelopemetadata.source", "type")),
    ({"id": None}, ("envelopemetadata.id", "required")),
    ({"time": 1714564800}, ("envelopemetadata.time", "type")),
    ({"Type2": "x"}, ("envelopemetadata.Type2", "attribute-name")),
])
def test_structured_typed_attributes(http_typed: Any, change: dict[str, Any], violation: tuple[str, str]) -> None:
    event = {**EVENT, **change}
    assert shape(http_typed.judge(_structured(event))) == bad("g", "m", violation)


def test_structured_body_that_is_not_json_is_decode(http_typed: Any) -> None:
    assert shape(http_typed.judge(_structured("{not json"))) == bad(None, None, ("body", "decode"))


def test_structured_body_that_is_not_an_object_is_decode(http_typed: Any) -> None:
    verdict = http_typed.judge(_structured("[1, 2]"))
    assert [v.rule.value for v in verdict.violations] == ["decode"]
    assert not verdict.conformant


# --- 5.2 declared properties --------------------------------------------------------------------------


@pytest.fixture
def declared(tmp_path: Path) -> Any:
    message = ce_message("t", {
        "severity": {"type": "integer", "required": True},
        "region": {"type": "string", "value": "eu", "required": False},
        "tier": {"value": "gold"},
    }, protocol="KAFKA", protocoloptions={"topic": "alerts", "headers": {"x-tenant": "acme"}})
    return load_doc(tmp_path, registry("KAFKA", {"m": message}))


def _alert(**headers: Any) -> dict[str, Any]:
    extra = {"ce_severity": "3", "x-tenant": "acme"}
    extra.update(headers)
    return kafka_ce("t", extra_headers={k: v for k, v in extra.items() if v is not None}, topic="alerts")


def test_declared_properties_conform(declared: Any) -> None:
    assert shape(declared.judge(_alert())) == ok("g", "m")
    assert shape(declared.judge(_alert(ce_region="eu", ce_tier="gold"))) == ok("g", "m")


def test_required_property_absent(declared: Any) -> None:
    verdict = declared.judge(_alert(ce_severity=None))
    assert shape(verdict) == bad("g", "m", ("envelopemetadata.severity", "required"))
    assert (verdict.violations[0].expected, verdict.violations[0].actual) == ("present", None)


def test_declared_type_is_checked(declared: Any) -> None:
    verdict = declared.judge(_alert(ce_severity="high"))
    assert shape(verdict) == bad("g", "m", ("envelopemetadata.severity", "type"))
    assert (verdict.violations[0].expected, verdict.violations[0].actual) == ("integer", "high")


def test_value_must_match_when_present(declared: Any) -> None:
    assert shape(declared.judge(_alert(ce_region="us"))) == bad("g", "m", ("envelopemetadata.region", "value"))
    verdict = declared.judge(_alert(ce_tier="silver"))
    assert shape(verdict) == bad("g", "m", ("envelopemetadata.tier", "value"))
    assert (verdict.violations[0].expected, verdict.violations[0].actual) == ("gold", "silver")


def test_value_on_absent_optional_property_is_no_violation(declared: Any) -> None:
    # `region` (required: false) and `tier` (required absent) carry values but are not in the message
    verdict = declared.judge(_alert())
    assert verdict.conformant and verdict.violations == ()


def test_plain_protocol_option_is_required_and_must_match(declared: Any) -> None:
    assert shape(declared.judge(_alert(**{"x-tenant": "other"}))) == \
        bad("g", "m", ("protocoloptions.headers.x-tenant", "value"))
    assert shape(declared.judge(_alert(**{"x-tenant": None}))) == \
        bad("g", "m", ("protocoloptions.headers.x-tenant", "required"))
    record = _alert()
    record["topic"] = "other"
    assert shape(declared.judge(record)) == bad("g", "m", ("protocoloptions.topic", "value"))
    del record["topic"]
    assert shape(declared.judge(record)) == bad("g", "m", ("protocoloptions.topic", "required"))


def test_plain_mqtt_options_are_required(tmp_path: Path) -> None:
    message = {"protocol": "MQTT/5.0", "protocoloptions": {"topic_name": "a/b", "qos": 1, "retain": False}}
    loaded = load_doc(tmp_path, registry("MQTT/5.0", {"m": message}))
    rec = {"protocol": "MQTT/5.0", "topic_name": "a/b", "qos": 1, "retain": False}
    assert shape(loaded.judge(rec)) == ok("g", "m")
    assert shape(loaded.judge({**rec, "qos": 0})) == bad("g", "m", ("protocoloptions.qos", "value"))
    assert shape(loaded.judge({**rec, "retain": True})) == bad("g", "m", ("protocoloptions.retain", "value"))
    no_qos = {k: v for k, v in rec.items() if k != "qos"}
    assert shape(loaded.judge(no_qos)) == bad("g", "m", ("protocoloptions.qos", "required"))


def test_required_false_with_a_wrong_present_value(tmp_path: Path) -> None:
    message = {"protocol": "NATS", "protocoloptions": {
        "subject": "s", "headers": {"X-Kind": {"value": "a", "required": False}}}}
    loaded = load_doc(tmp_path, registry("NATS", {"m": message}))
    assert shape(loaded.judge({"protocol": "NATS", "subject": "s"})) == ok("g", "m")
    assert shape(loaded.judge({"protocol": "NATS", "subject": "s", "headers": {"x-kind": "a"}})) == ok("g", "m")
    assert shape(loaded.judge({"protocol": "NATS", "subject": "s", "headers": {"x-kind": "b"}})) == \
        bad("g", "m", ("protocoloptions.headers.X-Kind", "value"))


def test_repeated_header_every_value_is_checked(tmp_path: Path) -> None:
    # silent point (assumed): a repeated header conforms only when every occurrence does
    message = {"protocol": "NATS", "protocoloptions": {"subject": "s", "headers": {"X-N": {"type": "integer"}}}}
    loaded = load_doc(tmp_path, registry("NATS", {"m": message}))
    assert shape(loaded.judge({"protocol": "NATS", "subject": "s", "headers": {"X-N": ["1", "2"]}})) == ok("g", "m")
    assert shape(loaded.judge({"protocol": "NATS", "subject": "s", "headers": {"X-N": ["1", "two"]}})) == \
        bad("g", "m", ("protocoloptions.headers.X-N", "type"))


# --- 5.4 "any timestamp" ------------------------------------------------------------------------------


@pytest.mark.parametrize("any_value", ["0000-01-01T00:00:00Z", "01-01-0000T00:00:00Z"])
@pytest.mark.parametrize("declared_type", [{"type": "timestamp"}, {}])
def test_any_timestamp_value(tmp_path: Path, any_value: str, declared_type: dict[str, str]) -> None:
    # `time` is a timestamp by the CloudEvents type table whether or not the document repeats it
    message = ce_message("t", {"time": {**declared_type, "value": any_value, "required": True}})
    loaded = load_doc(tmp_path, registry("KAFKA", {"m": message}))
    assert loaded.errors == []
    for time in ("2024-05-01T12:00:00Z", "1999-12-31T23:59:59.999-08:00"):
        assert shape(loaded.judge(kafka_ce("t", extra_headers={"ce_time": time}))) == ok("g", "m"), time
    assert shape(loaded.judge(kafka_ce("t", extra_headers={"ce_time": "not a time"}))) == \
        bad("g", "m", ("envelopemetadata.time", "type"))
    assert shape(loaded.judge(kafka_ce("t"))) == bad("g", "m", ("envelopemetadata.time", "required"))


def test_fixed_timestamp_value_compares_as_instant(tmp_path: Path) -> None:
    message = ce_message("t", {"time": {"value": "2024-05-01T12:00:00Z"}})
    loaded = load_doc(tmp_path, registry("KAFKA", {"m": message}))
    assert shape(loaded.judge(kafka_ce("t", extra_headers={"ce_time": "2024-05-01T14:00:00+02:00"}))) == \
        ok("g", "m")
    assert shape(loaded.judge(kafka_ce("t", extra_headers={"ce_time": "2024-05-01T12:00:01Z"}))) == \
        bad("g", "m", ("envelopemetadata.time", "value"))


def test_any_timestamp_on_a_typed_header(tmp_path: Path) -> None:
    message = {"protocol": "KAFKA", "protocoloptions": {
        "topic": "t", "headers": {"sent": {"type": "timestamp", "value": "0000-01-01T00:00:00Z", "required": True}}}}
    loaded = load_doc(tmp_path, registry("KAFKA", {"m": message}))
    assert shape(loaded.judge({"protocol": "KAFKA", "topic": "t", "headers": {"sent": "2030-01-01T00:00:00Z"}})) \
        == ok("g", "m")
    assert shape(loaded.judge({"protocol": "KAFKA", "topic": "t", "headers": {"sent": "2030-01-01"}})) == \
        bad("g", "m", ("protocoloptions.headers.sent", "type"))


# --- 5.5 content type --------------------------------------------------------------------------------


@pytest.fixture
def declared_json(tmp_path: Path) -> Any:
    message = ce_message("t", {"datacontenttype": {"value": "application/json"}})
    return load_doc(tmp_path, registry("KAFKA", {"m": message}))


@pytest.mark.parametrize("content_type", [
    "application/json", "Application/JSON", "application/json; charset=utf-8", "application/json ;charset=UTF-8",
    "application/vnd.example.reading+json", "APPLICATION/LD+JSON"])
def test_content_type_agrees(declared_json: Any, content_type: str) -> None:
    # binary mode: the Kafka `content-type` header is datacontenttype; `ce_datacontenttype` is as good
    assert shape(declared_json.judge(kafka_ce("t", extra_headers={"content-type": content_type}))) == ok("g", "m")
    assert shape(declared_json.judge(kafka_ce("t", extra_headers={"ce_datacontenttype": content_type}))) == \
        ok("g", "m")


@pytest.mark.parametrize("content_type", ["text/plain", "application/xml", "application/jsonx", "json"])
def test_content_type_disagrees(declared_json: Any, content_type: str) -> None:
    verdict = declared_json.judge(kafka_ce("t", extra_headers={"content-type": content_type}))
    assert shape(verdict) == bad("g", "m", ("envelopemetadata.datacontenttype", "content-type"))
    assert verdict.violations[0].actual == content_type


def test_content_type_absent_on_the_message_is_no_violation(declared_json: Any) -> None:
    assert shape(declared_json.judge(kafka_ce("t"))) == ok("g", "m")


def test_xml_suffix(tmp_path: Path) -> None:
    message = ce_message("t", {"datacontenttype": {"value": "application/xml"}})
    loaded = load_doc(tmp_path, registry("HTTP", {"m": message}))
    assert shape(loaded.judge(http_ce("t", extra_headers={"Content-Type": "application/atom+xml"}))) == ok("g", "m")
    assert shape(loaded.judge(http_ce("t", extra_headers={"Content-Type": "application/json"}))) == \
        bad("g", "m", ("envelopemetadata.datacontenttype", "content-type"))


JSON_SCHEMA = {"type": "object"}
AVRO_SCHEMA = {"type": "record", "name": "R", "fields": []}
PROTO_SCHEMA = 'syntax = "proto3";\npackage rules.test;\nmessage R { string a = 1; }\n'
XSD_SCHEMA = ('<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">'
              '<xs:element name="r" type="xs:string"/></xs:schema>')


@pytest.mark.parametrize(("fmt", "schema", "body", "agree", "disagree"), [
    ("JsonSchema/draft-07", JSON_SCHEMA, "{}", ["application/json", "application/cloudevents+json"],
     ["application/avro", "text/plain"]),
    ("Avro/1.11", AVRO_SCHEMA, "", ["application/avro", "avro/binary", "Application/Avro; x=1"],
     ["application/protobuf", "application/octet-stream"]),
    ("Protobuf/3", PROTO_SCHEMA, "", ["application/protobuf", "application/x-protobuf"],
     ["application/avro", "application/xml"]),
    ("XSD/1.0", XSD_SCHEMA, "<r>x</r>", ["application/xml", "text/xml", "application/soap+xml"],
     ["application/json", "text/plain"]),
])
def test_content_type_implied_by_schema_format(tmp_path: Path, fmt: str, schema: Any, body: str,
                                               agree: list[str], disagree: list[str]) -> None:
    message = ce_message("t", dataschemaformat=fmt, dataschema=schema)
    loaded = load_doc(tmp_path, registry("KAFKA", {"m": message}))
    assert loaded.errors == []
    for content_type in agree:
        record = kafka_ce("t", extra_headers={"ce_datacontenttype": content_type}, body=body)
        assert shape(loaded.judge(record)) == ok("g", "m"), content_type
    for content_type in disagree:
        record = kafka_ce("t", extra_headers={"ce_datacontenttype": content_type}, body=body)
        assert shape(loaded.judge(record)) == bad("g", "m", ("envelopemetadata.datacontenttype", "content-type")), \
            content_type
    assert shape(loaded.judge(kafka_ce("t", body=body))) == ok("g", "m")


def test_declared_content_type_wins_over_implied(tmp_path: Path) -> None:
    # silent point (assumed): a declared datacontenttype replaces the one the schema format implies
    message = ce_message("t", {"datacontenttype": {"value": "application/vnd.custom"}},
                         dataschemaformat="JsonSchema/draft-07", dataschema=JSON_SCHEMA)
    loaded = load_doc(tmp_path, registry("KAFKA", {"m": message}))
    assert shape(loaded.judge(kafka_ce("t", extra_headers={"content-type": "application/vnd.custom"},
                                       body="{}"))) == ok("g", "m")
    assert shape(loaded.judge(kafka_ce("t", extra_headers={"content-type": "application/json"}, body="{}"))) == \
        bad("g", "m", ("envelopemetadata.datacontenttype", "content-type"))


@pytest.mark.parametrize(("protocol", "record"), [
    ("HTTP", {"protocol": "HTTP", "path": "/x", "headers": {"content-type": "text/plain"}}),
    ("MQTT/5.0", {"protocol": "MQTT/5.0", "topic_name": "x", "content_type": "text/plain"}),
    ("AMQP/1.0", {"protocol": "AMQP/1.0", "properties": {"subject": "x", "content-type": "text/plain"}}),
    ("KAFKA", {"protocol": "KAFKA", "topic": "x", "headers": {"content-type": "text/plain"}}),
    ("NATS", {"protocol": "NATS", "subject": "x", "headers": {"Content-Type": "text/plain"}}),
])
def test_content_type_without_cloudevents_reads_the_protocol(tmp_path: Path, protocol: str,
                                                             record: dict[str, Any]) -> None:
    # silent point (assumed): without the CloudEvents envelope the violation path is `datacontenttype`
    discriminator = {"HTTP": {"path": "/x"}, "MQTT/5.0": {"topic_name": "x"}, "KAFKA": {"topic": "x"},
                     "AMQP/1.0": {"properties": {"subject": "x"}}, "NATS": {"subject": "x"}}[protocol]
    message = {"protocol": protocol, "protocoloptions": discriminator, "dataschemaformat": "JsonSchema/draft-07",
               "dataschema": JSON_SCHEMA}
    loaded = load_doc(tmp_path, registry(protocol, {"m": message}))
    record = {**record, "body": "{}"}
    assert shape(loaded.judge(record)) == bad("g", "m", ("datacontenttype", "content-type"))
    good = json.loads(json.dumps(record).replace("text/plain", "application/json; charset=utf-8"))
    assert shape(loaded.judge(good)) == ok("g", "m")
