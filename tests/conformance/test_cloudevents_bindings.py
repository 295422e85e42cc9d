"""CloudEvents protocol bindings read correctly (validation rules 4-8).

1. cloudevents/conformance Gherkin features (Kafka, HTTP) parsed with a tiny
   reader and replayed through `envelope_from_record` + `read_cloudevents`.
2. The example messages of the binding specs (AMQP, HTTP, Kafka, MQTT 5.0 and
   3.1.1, NATS) written in recorded form and read back; the cloudevents/conformance
   YAML event vectors encoded through every binding and read back.
3. End to end through `judge_lines` and `xgate check` against
   tests/documents/cloudevents/bindings.xreg.json: conformant messages in both
   modes on every protocol, broken variants nonconformant with the right rule.
4. The cloudevents/sdk-java JSON fixtures as structured HTTP events.

WebSockets is not an xgate protocol; its binding (structured only, via the
subprotocol) is not exercised.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.check import judge_lines
from gateway.cloudevents import BINARY, MISSING, STRUCTURED, CloudEventReading, read_cloudevents
from gateway.compiler import Ruleset, compile_registry
from gateway.envelope import Envelope
from gateway.errors import Severity
from gateway.loader import load_snapshot
from gateway.recorded import envelope_from_record
from gateway.verdict import Verdict
from tests.conformance.cloudevents_wire import (
    PROTOCOL_MODES,
    Scenario,
    encode,
    is_json_media,
    parse_feature,
    parse_http_message,
    percent_encode,
    table_map,
)
from tests.conftest import ABSENT_HINT, SHARED_CONFORMANCE, conformance_dir

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = REPO / "tests" / "documents" / "cloudevents"
BINDINGS_DOC = DOCUMENTS / "bindings.xreg.json"
FIXTURES_DOC = DOCUMENTS / "sdk-java-fixtures.xreg.json"
CE_MATERIAL = SHARED_CONFORMANCE / "cloudevents"
ABSENT = f"cloudevents conformance material not found at {CE_MATERIAL} ({ABSENT_HINT})"

APP_DATA = {"message": "Hello World!"}  # stands for the specs' "... application data ..."
APP_BODY = json.dumps(APP_DATA, indent=4)
CORE = {"specversion": "1.0", "type": "com.example.someevent", "time": "2018-04-05T03:56:24Z",
        "id": "1234-1234-1234", "source": "/mycontext/subcontext"}


def read(record: dict[str, Any], mode: str | None = None) -> tuple[Envelope, list[CloudEventReading]]:
    envelope = envelope_from_record(record)
    return envelope, read_cloudevents(envelope, mode)


def data_of(reading: CloudEventReading, envelope: Envelope) -> Any:
    """Binary mode: the body bytes. Structured: the `data` value (bytes for `data_base64`), or MISSING."""
    return envelope.body if reading.mode == BINARY else reading.data


# --- 1. cloudevents/conformance features -----------------------------------------------------------


def _feature_params() -> list[Any]:
    folder = CE_MATERIAL / "conformance" / "features"
    files = sorted(folder.glob("*.feature")) if folder.exists() else []
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(reason=ABSENT), id="features-absent")]
    return [pytest.param(s, id=f"{path.stem}:{s.line}:{s.name}")
            for path in files for s in parse_feature(path.read_text("utf-8"))]


def test_both_feature_files_are_found_and_parsed() -> None:
    folder = conformance_dir("cloudevents", "conformance", "features")
    counts = {p.stem: len(parse_feature(p.read_text("utf-8"))) for p in sorted(folder.glob("*.feature"))}
    # Kafka: 1 binary + 2 structured examples; HTTP: 2 binary + 2 structured examples
    assert counts == {"http-protocol-binding": 4, "kafka-protocol-binding": 3}


def run_scenario(scenario: Scenario) -> None:
    record: dict[str, Any] | None = None
    envelope: Envelope | None = None
    readings: list[CloudEventReading] = []
    checked = set()
    for step in scenario.steps:
        text = step.text.rstrip(":").strip()
        if step.keyword == "Given" and text.endswith("Protocol Binding is supported"):
            continue
        if text == "a Kafka message with payload":
            record = {"protocol": "KAFKA", "topic": "t", "body": step.docstring}
        elif text == "Kafka headers":
            assert record is not None
            record["headers"] = [list(pair) for pair in table_map(step.table)]
        elif text == "an HTTP request":
            assert step.docstring is not None
            record = parse_http_message(step.docstring)
        elif text in ("parsed as Kafka message", "parsed as HTTP request"):
            assert record is not None
            envelope, readings = read(record)
            assert len(readings) == 1, readings
            assert readings[0].problem is None, readings[0].problem
        elif text in ("the attributes are", "the attributes are to be"):
            assert envelope is not None
            assert readings[0].attributes == dict(table_map(step.table))
            checked.add("attributes")
        elif text == "the data is equal to the following JSON":
            assert envelope is not None and step.docstring is not None
            data = data_of(readings[0], envelope)
            actual = json.loads(data) if isinstance(data, bytes) else data
            assert actual == json.loads(step.docstring)
            checked.add("data")
        else:
            raise AssertionError(f"step not understood: {step.keyword} {step.text}")
    assert checked == {"attributes", "data"}, f"scenario {scenario.name!r} asserted only {checked}"
    expected_mode = BINARY if scenario.name.lower().startswith("binary") else STRUCTURED
    assert readings[0].mode == expected_mode


@pytest.mark.parametrize("scenario", _feature_params())
def test_feature_scenario(scenario: Scenario) -> None:
    run_scenario(scenario)


def test_gherkin_reader_expands_outlines_and_docstrings() -> None:
    text = '''@tag
Feature: F
  Some description.
  Background:
  Given X is supported
  Scenario Outline: S (<a>)
  Given a thing:
      """
      line <a>
        indented
      """
  And table:
      | key | value |
      |  k  |  <a>  |
  Then done
  Examples:
  | a |
  | 1 |
  | 2 |
'''
    scenarios = parse_feature(text)
    assert [s.name for s in scenarios] == ["S (1)", "S (2)"]
    steps = scenarios[1].steps
    assert [s.keyword for s in steps] == ["Given", "Given", "Given", "Then"]
    assert steps[1].docstring == "line 2\n  indented"
    assert table_map(steps[2].table) == [("k", "2")]


# --- 2. binding spec examples ----------------------------------------------------------------------

BINDING_EXAMPLES: list[tuple[str, dict[str, Any], str, list[dict[str, Any]], list[Any]]] = [
    # (id, recorded message, mode, attributes of each event, data of each event)
    ("amqp-3.1.4-binary-colon", {
        "protocol": "AMQP/1.0",
        "properties": {"to": "myqueue", "content-type": "application/json; charset=utf-8"},
        "application-properties": {f"cloudEvents:{k}": v for k, v in CORE.items()},
        "body": APP_BODY,
    }, BINARY, [{**CORE, "datacontenttype": "application/json; charset=utf-8"}], [APP_BODY.encode()]),
    ("amqp-3.1.3.1-binary-underscore", {
        "protocol": "AMQP/1.0",
        "properties": {"to": "myqueue", "content-type": "application/json; charset=utf-8"},
        "application_properties": {f"cloudEvents_{k}": v for k, v in CORE.items()},
        "body": APP_BODY,
    }, BINARY, [{**CORE, "datacontenttype": "application/json; charset=utf-8"}], [APP_BODY.encode()]),
    ("amqp-3.2.4-structured", {
        "protocol": "AMQP/1.0",
        "properties": {"to": "myqueue", "content-type": "application/cloudevents+json; charset=utf-8"},
        "application-properties": {},
        "body": json.dumps({**CORE, "data": APP_DATA}),
    }, STRUCTURED, [dict(CORE)], [APP_DATA]),
    ("amqp-3.2.1-structured-uppercase-charset", {
        "protocol": "AMQP",
        "properties": {"content-type": "application/cloudevents+json; charset=UTF-8"},
        "body": json.dumps({**CORE, "datacontenttype": "application/json", "data": APP_DATA}),
    }, STRUCTURED, [{**CORE, "datacontenttype": "application/json"}], [APP_DATA]),
    ("kafka-3.2.5-binary-avro", {
        "protocol": "KAFKA", "topic": "mytopic", "key": "mykey",
        "headers": {"ce_specversion": "1.0", "ce_type": "com.example.someevent",
                    "ce_source": "/mycontext/subcontext", "ce_id": "1234-1234-1234",
                    "ce_time": "2018-04-05T03:56:24Z", "content-type": "application/avro"},
        "body_base64": base64.b64encode(b"\x02\x0aHello").decode(),
    }, BINARY, [{**CORE, "datacontenttype": "application/avro"}], [b"\x02\x0aHello"]),
    ("kafka-3.2.2-binary-no-data-tombstone", {
        "protocol": "KAFKA", "topic": "mytopic", "key": "mykey",
        "headers": [["ce_specversion", "1.0"], ["ce_type", "com.example.someevent"],
                    ["ce_source", "/mycontext/subcontext"], ["ce_id", "1234-1234-1234"]],
    }, BINARY, [{k: CORE[k] for k in ("specversion", "type", "source", "id")}], [b""]),
    ("kafka-3.3.4-structured", {
        "protocol": "KAFKA", "topic": "mytopic", "key": "mykey",
        "headers": {"content-type": "application/cloudevents+json; charset=UTF-8"},
        "body": json.dumps({**CORE, "datacontenttype": "application/xml", "data": "<much wow=\"xml\"/>"}),
    }, STRUCTURED, [{**CORE, "datacontenttype": "application/xml"}], ["<much wow=\"xml\"/>"]),
    ("mqtt5-3.1.4-binary", {
        "protocol": "MQTT/5.0", "topic_name": "mytopic", "content_type": "application/json; charset=utf-8",
        "user_properties": [{"name": k, "value": v} for k, v in CORE.items()]
        + [{"name": "datacontenttype", "value": "application/json; charset=utf-8"}],
        "body": APP_BODY,
    }, BINARY, [{**CORE, "datacontenttype": "application/json; charset=utf-8"}], [APP_BODY.encode()]),
    ("mqtt5-3.1.1-binary-content-type-maps-to-datacontenttype", {
        "protocol": "MQTT/5.0", "topic_name": "mytopic", "content_type": "application/json; charset=utf-8",
        "user_properties": [[k, v] for k, v in CORE.items()],
        "body": APP_BODY,
    }, BINARY, [{**CORE, "datacontenttype": "application/json; charset=utf-8"}], [APP_BODY.encode()]),
    ("mqtt5-3.2.4-structured", {
        "protocol": "MQTT/5.0", "topic_name": "mytopic",
        "content_type": "application/cloudevents+json; charset=utf-8",
        "body": json.dumps({**CORE, "datacontenttype": "application/json; charset=utf-8", "data": APP_DATA}),
    }, STRUCTURED, [{**CORE, "datacontenttype": "application/json; charset=utf-8"}], [APP_DATA]),
    ("mqtt311-3.2.4-structured-implied", {
        "protocol": "MQTT/3.1.1", "topic_name": "mytopic",
        "body": json.dumps({**CORE, "datacontenttype": "application/json; charset=utf-8", "data": APP_DATA}),
    }, STRUCTURED, [{**CORE, "datacontenttype": "application/json; charset=utf-8"}], [APP_DATA]),
    ("nats-3.1.4-binary", {
        "protocol": "NATS", "subject": "mySubject",
        "headers": {**{f"ce-{k}": v for k, v in CORE.items()}, "ce-datacontenttype": "application/json"},
        "body": APP_BODY,
    }, BINARY, [{**CORE, "datacontenttype": "application/json"}], [APP_BODY.encode()]),
    ("nats-3.1.3.1-header-names-case-insensitive", {
        "protocol": "NATS", "subject": "mySubject",
        "headers": {"CE-SPECVERSION": "1.0", "Ce-Type": "com.example.someevent", "ce-Time": CORE["time"],
                    "cE-iD": CORE["id"], "CE-source": CORE["source"], "CE-DataContentType": "application/json"},
        "body": APP_BODY,
    }, BINARY, [{**CORE, "datacontenttype": "application/json"}], [APP_BODY.encode()]),
    ("nats-3.1.3.1-content-type-is-not-datacontenttype", {
        "protocol": "NATS", "subject": "mySubject",
        "headers": {**{f"ce-{k}": v for k, v in CORE.items()}, "Content-Type": "application/json"},
        "body": APP_BODY,
    }, BINARY, [dict(CORE)], [APP_BODY.encode()]),
    ("nats-3.2.1-structured-with-content-type", {
        "protocol": "NATS", "subject": "mySubject",
        "headers": {"Content-Type": "application/cloudevents+json"},
        "body": json.dumps({**CORE, "data": APP_DATA}),
    }, STRUCTURED, [dict(CORE)], [APP_DATA]),
    ("nats-3-structured-content-type-case-insensitive", {
        "protocol": "NATS", "subject": "mySubject",
        "headers": {"content-type": "Application/CloudEvents+JSON"},
        "body": json.dumps({**CORE, "data": APP_DATA}),
    }, STRUCTURED, [dict(CORE)], [APP_DATA]),
]

HTTP_EXAMPLES: list[tuple[str, str, str, list[dict[str, Any]], list[Any]]] = [
    ("http-3.1.4-binary-request", """POST /someresource HTTP/1.1
Host: webhook.example.com
ce-specversion: 1.0
ce-type: com.example.someevent
ce-time: 2018-04-05T03:56:24Z
ce-id: 1234-1234-1234
ce-source: /mycontext/subcontext
Content-Type: application/json; charset=utf-8
Content-Length: nnnn

""" + APP_BODY, BINARY, [{**CORE, "datacontenttype": "application/json; charset=utf-8"}], [APP_BODY.encode()]),
    ("http-3.1.4-binary-response", """HTTP/1.1 200 OK
ce-specversion: 1.0
ce-type: com.example.someevent
ce-time: 2018-04-05T03:56:24Z
ce-id: 1234-1234-1234
ce-source: /mycontext/subcontext
Content-Type: application/json; charset=utf-8
Content-Length: nnnn

""" + APP_BODY, BINARY, [{**CORE, "datacontenttype": "application/json; charset=utf-8"}], [APP_BODY.encode()]),
    ("http-3.2.4-structured-put", """PUT /myresource HTTP/1.1
Host: webhook.example.com
Content-Type: application/cloudevents+json; charset=utf-8
Content-Length: nnnn

""" + json.dumps({**CORE, "data": APP_DATA}, indent=4), STRUCTURED, [dict(CORE)], [APP_DATA]),
    ("http-3.2.4-structured-response", """HTTP/1.1 200 OK
Content-Type: application/cloudevents+json; charset=utf-8
Content-Length: nnnn

""" + json.dumps({**CORE, "data": APP_DATA}), STRUCTURED, [dict(CORE)], [APP_DATA]),
    ("http-3.2.3-structured-ignores-ce-headers", """POST /myresource HTTP/1.1
Content-Type: application/cloudevents+json
ce-id: header-id
ce-comexampleextension1: from-header

""" + json.dumps({**CORE, "data": APP_DATA}), STRUCTURED, [dict(CORE)], [APP_DATA]),
    ("http-3.3.3-batch-put", """PUT /myresource HTTP/1.1
Host: webhook.example.com
Content-Type: application/cloudevents-batch+json; charset=utf-8
Content-Length: nnnn

""" + json.dumps([{**CORE, "data": APP_DATA},
                  {**CORE, "type": "com.example.someotherevent", "data": APP_DATA}], indent=4),
     STRUCTURED, [dict(CORE), {**CORE, "type": "com.example.someotherevent"}], [APP_DATA, APP_DATA]),
    ("http-3.3.3-batch-response", """HTTP/1.1 200 OK
Content-Type: application/cloudevents-batch+json; charset=utf-8
Content-Length: nnnn

""" + json.dumps([{**CORE, "data": APP_DATA}, {**CORE, "type": "com.example.someotherevent"}]),
     STRUCTURED, [dict(CORE), {**CORE, "type": "com.example.someotherevent"}], [APP_DATA, MISSING]),
    ("json-format-4.3-batch-binary-and-json-data", """POST /events HTTP/1.1
Content-Type: application/cloudevents-batch+json

""" + json.dumps([
        {"specversion": "1.0", "type": "com.example.someevent", "source": "/mycontext/4", "id": "B234-1234-1234",
         "time": "2018-04-05T17:31:00Z", "comexampleextension1": "value", "comexampleothervalue": 5,
         "datacontenttype": "application/vnd.apache.thrift.binary",
         "data_base64": base64.b64encode(b"\x0b\x00\x01thrift").decode()},
        {"specversion": "1.0", "type": "com.example.someotherevent", "source": "/mycontext/9",
         "id": "C234-1234-1234", "time": "2018-04-05T17:31:05Z", "comexampleextension1": "value",
         "comexampleothervalue": 5, "datacontenttype": "application/json",
         "data": {"appinfoA": "abc", "appinfoB": 123, "appinfoC": True}}]),
     STRUCTURED,
     [{"specversion": "1.0", "type": "com.example.someevent", "source": "/mycontext/4", "id": "B234-1234-1234",
       "time": "2018-04-05T17:31:00Z", "comexampleextension1": "value", "comexampleothervalue": 5,
       "datacontenttype": "application/vnd.apache.thrift.binary"},
      {"specversion": "1.0", "type": "com.example.someotherevent", "source": "/mycontext/9",
       "id": "C234-1234-1234", "time": "2018-04-05T17:31:05Z", "comexampleextension1": "value",
       "comexampleothervalue": 5, "datacontenttype": "application/json"}],
     [b"\x0b\x00\x01thrift", {"appinfoA": "abc", "appinfoB": 123, "appinfoC": True}]),
    ("json-format-4.3-empty-batch", """HTTP/1.1 200 OK
Content-Type: application/cloudevents-batch+json

[]""", STRUCTURED, [], []),
    ("http-3.1.3.1-header-names-case-insensitive", """POST /someresource HTTP/1.1
CE-SpecVersion: 1.0
Ce-Type: com.example.someevent
CE-TIME: 2018-04-05T03:56:24Z
ce-Id: 1234-1234-1234
Ce-Source: /mycontext/subcontext
content-type: application/json

""" + APP_BODY, BINARY, [{**CORE, "datacontenttype": "application/json"}], [APP_BODY.encode()]),
]


@pytest.mark.parametrize(("record", "mode", "attributes", "data"),
                         [pytest.param(r, m, a, d, id=i) for i, r, m, a, d in BINDING_EXAMPLES]
                         + [pytest.param(parse_http_message(t), m, a, d, id=i) for i, t, m, a, d in HTTP_EXAMPLES])
def test_binding_example_is_read(record: dict[str, Any], mode: str, attributes: list[dict[str, Any]],
                                 data: list[Any]) -> None:
    envelope, readings = read(record)
    assert [r.problem for r in readings] == [None] * len(readings)
    assert [r.mode for r in readings] == [mode] * len(readings)
    assert [r.attributes for r in readings] == attributes
    assert [data_of(r, envelope) for r in readings] == data


def test_http_binary_example_text_is_parsed_faithfully() -> None:
    record = parse_http_message(HTTP_EXAMPLES[0][1])
    assert (record["method"], record["path"]) == ("POST", "/someresource")
    assert ["Host", "webhook.example.com"] in record["headers"]
    assert ["Content-Length", "nnnn"] in record["headers"]


def test_mqtt_3_2_4_example_text_as_printed_is_not_json() -> None:
    """The MQTT spec's structured example has unquoted `time` and `id` values: a receiver gets `decode`."""
    printed = ('{"specversion" : "1.0", "type" : "com.example.someevent", "time" : 2018-04-05T03:56;24Z, '
               '"id" : 1234-1234-1234, "source" : "/mycontext/subcontext", '
               '"datacontenttype" : "application/json; charset=utf-8", "data" : {}}')
    for protocol in ("MQTT/5.0", "MQTT/3.1.1"):
        record = {"protocol": protocol, "topic_name": "mytopic", "body": printed}
        if protocol == "MQTT/5.0":
            record["content_type"] = "application/cloudevents+json; charset=utf-8"
        _, readings = read(record)
        assert len(readings) == 1 and readings[0].mode == STRUCTURED
        assert readings[0].problem is not None and readings[0].problem.rule.value == "decode"


def test_nats_message_without_headers_is_binary_per_conformance_table() -> None:
    """NATS 3: only pre-2.2 servers imply structured mode; CONFORMANCE section 4 keys structured on Content-Type."""
    _, readings = read({"protocol": "NATS", "subject": "mySubject", "body": json.dumps({**CORE, "data": {}})})
    assert readings[0].mode == BINARY and readings[0].attributes == {}


def test_mqtt311_is_structured_even_with_a_non_cloudevents_body() -> None:
    _, readings = read({"protocol": "MQTT/3.1.1", "topic_name": "t", "body": "plain text"})
    assert readings[0].mode == STRUCTURED and readings[0].problem is not None


def test_endpoint_mode_narrows_the_marker() -> None:
    record = {"protocol": "HTTP", "headers": {"Content-Type": "application/cloudevents+json", "ce-id": "1"},
              "body": json.dumps({**CORE, "data": APP_DATA})}
    _, readings = read(record, BINARY)
    assert readings[0].mode == BINARY
    assert readings[0].attributes == {"id": "1", "datacontenttype": "application/cloudevents+json"}
    record = {"protocol": "KAFKA", "headers": {"content-type": "application/json"},
              "body": json.dumps({**CORE, "data": APP_DATA})}
    _, readings = read(record, STRUCTURED)
    assert readings[0].mode == STRUCTURED and readings[0].attributes == CORE


# --- header value encodings: HTTP and NATS percent-encoding, AMQP native types, JSON nulls ------------


@pytest.mark.parametrize("protocol", ["HTTP", "NATS"])
@pytest.mark.parametrize(("wire", "value"), [
    pytest.param("Euro%20%E2%82%AC%20%F0%9F%98%80", "Euro \u20ac \U0001f600", id="spec-example"),
    pytest.param("Euro%20%e2%82%ac%20%f0%9f%98%80", "Euro \u20ac \U0001f600", id="lower-case-hex"),
    pytest.param("%41BC", "ABC", id="unnecessarily-encoded"),
    pytest.param('"hello world"', "hello world", id="double-quoted"),
    pytest.param('"say \\"hi\\""', 'say "hi"', id="double-quoted-escapes"),
    pytest.param('"100%25"', "100%", id="double-quoted-then-percent"),
    pytest.param("/mycontext/subcontext", "/mycontext/subcontext", id="plain"),
])
def test_header_values_are_unquoted_then_percent_decoded(protocol: str, wire: str, value: str) -> None:
    record = {"protocol": protocol, "headers": {**{f"ce-{k}": v for k, v in CORE.items()}, "ce-subject": wire}}
    _, readings = read(record)
    assert readings[0].problem is None
    assert readings[0].attributes["subject"] == value


@pytest.mark.parametrize("protocol", ["HTTP", "NATS"])
def test_percent_encoded_invalid_utf8_is_rejected(protocol: str) -> None:
    """HTTP/NATS 3.1.3.2: "%C0%A0" is an overlong encoding of U+0020 and MUST be rejected."""
    record = {"protocol": protocol, "headers": {**{f"ce-{k}": v for k, v in CORE.items()}, "ce-subject": "%C0%A0"}}
    _, readings = read(record)
    problem = readings[0].problem
    assert problem is not None and problem.rule.value == "decode"
    assert problem.path == "protocoloptions.headers.ce-subject"


@pytest.mark.parametrize("protocol", ["KAFKA", "MQTT/5.0", "AMQP/1.0"])
def test_percent_encoding_is_http_and_nats_only(protocol: str) -> None:
    record = encode(protocol, BINARY, {**CORE, "subject": "100%25"}, APP_DATA)
    _, readings = read(record)
    assert readings[0].attributes["subject"] == "100%25"


def test_structured_null_attribute_is_unset() -> None:
    """json-format 2.2: a null attribute value MUST be treated as unset."""
    _, readings = read({"protocol": "HTTP", "headers": {"Content-Type": "application/cloudevents+json"},
                        "body": json.dumps({**CORE, "subject": None, "unsetExtension": None})})
    assert readings[0].attributes == CORE


# --- the cloudevents/conformance YAML event vectors through every binding ------------------------------


def _yaml_events() -> list[Any]:
    folder = CE_MATERIAL / "conformance" / "yaml"
    files = [folder / "v1.yaml", folder / "v1.0" / "v1_minimum.yaml"]
    if not all(f.exists() for f in files):
        return [pytest.param(None, None, None, None, None, marks=pytest.mark.skip(reason=ABSENT), id="yaml-absent")]
    params = []
    for path in files:
        # BaseLoader: every scalar stays text (`specversion: 1.0` is the string "1.0", times are not datetimes)
        for n, vector in enumerate(yaml.load_all(path.read_text("utf-8"), Loader=yaml.BaseLoader)):
            if not vector:
                continue
            context = dict(vector["ContextAttributes"])
            attributes = {**{k: v for k, v in context.items() if k != "Extensions"}, **context.get("Extensions", {})}
            transport = vector.get("TransportExtensions") or {}
            for protocol, mode in PROTOCOL_MODES:
                params.append(pytest.param(attributes, vector.get("Data", ""), transport, protocol, mode,
                                           id=f"{path.stem}#{n}-{protocol}-{mode}"))
    return params


@pytest.mark.parametrize(("attributes", "data", "transport", "protocol", "mode"), _yaml_events())
def test_conformance_yaml_vector_reads_back_through_binding(attributes: dict[str, str], data: str,
                                                            transport: dict[str, str], protocol: str,
                                                            mode: str) -> None:
    record = encode(protocol, mode, attributes, data_text=data)
    if protocol == "HTTP":
        record["headers"].extend([name, value] for name, value in transport.items())
    envelope, readings = read(record)
    assert len(readings) == 1 and readings[0].problem is None
    reading = readings[0]
    assert reading.mode == mode
    assert reading.attributes == attributes
    expected = data.encode("utf-8") if mode == BINARY else (
        json.loads(data) if is_json_media(attributes.get("datacontenttype")) else data)
    assert data_of(reading, envelope) == expected


def test_percent_encoder_matches_the_spec_example() -> None:
    assert percent_encode("Euro \u20ac \U0001f600") == "Euro%20%E2%82%AC%20%F0%9F%98%80"


# --- 3. end to end: judge_lines and `xgate check` ------------------------------------------------------

EVENT = {**CORE, "datacontenttype": "application/json; charset=utf-8", "comexampleextension1": "value"}
MESSAGE_IDS = {"KAFKA": ("cebindings.group.kafka", "com.example.someevent"),
               "MQTT/5.0": ("cebindings.mqtt5", "com.example.someevent"),
               "MQTT/3.1.1": ("cebindings.group.mqtt311", "com.example.someevent"),
               "AMQP/1.0": ("cebindings.amqp", "com.example.someevent"),
               "NATS": ("cebindings.group.nats", "com.example.someevent"),
               "HTTP": ("cebindings.group.http", "com.example.someevent")}


@cache
def ruleset_of(path: Path) -> Ruleset:
    snapshot = load_snapshot([path])
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    problems = [d for d in list(snapshot.diagnostics) + list(ruleset.diagnostics) if d.severity is Severity.ERROR]
    assert not problems, problems
    return ruleset


def judge(*records: dict[str, Any], document: Path = BINDINGS_DOC) -> list[Verdict]:
    return list(judge_lines(ruleset_of(document), [json.dumps(r) for r in records]))


def rules(verdict: Verdict) -> list[tuple[str, str]]:
    return [(v.path, v.rule.value) for v in verdict.violations]


def test_bindings_document_compiles_every_endpoint() -> None:
    ruleset = ruleset_of(BINDINGS_DOC)
    assert {k: len(v.definitions) for k, v in ruleset.endpoints.items()} == {
        "cebindings.kafka": 1, "cebindings.mqtt5": 1, "cebindings.mqtt311": 1, "cebindings.amqp": 1,
        "cebindings.nats": 1, "cebindings.http": 2}


@pytest.mark.parametrize(("protocol", "mode"), PROTOCOL_MODES)
def test_well_formed_event_is_conformant(protocol: str, mode: str) -> None:
    [verdict] = judge(encode(protocol, mode, EVENT, APP_DATA))
    assert verdict.conformant, verdict.as_dict()
    assert (verdict.messagegroupid, verdict.messageid) == MESSAGE_IDS[protocol]


def test_amqp_colon_separator_is_conformant() -> None:
    [verdict] = judge(encode("AMQP/1.0", BINARY, EVENT, APP_DATA, amqp_separator=":"))
    assert verdict.conformant, verdict.as_dict()


def _broken(variant: str, protocol: str, mode: str) -> dict[str, Any]:
    attributes = dict(EVENT)
    if variant == "no-specversion":
        del attributes["specversion"]
    elif variant == "no-id":
        del attributes["id"]
    elif variant == "time-not-rfc3339":
        attributes["time"] = "2018-04-05T03:56:24"
    elif variant == "uppercase-attribute":
        attributes["Foo"] = "bar"
    return encode(protocol, mode, attributes, APP_DATA)


BROKEN = {
    "no-specversion": [("envelopemetadata.specversion", "specversion")],
    "no-id": [("envelopemetadata.id", "required")],
    "time-not-rfc3339": [("envelopemetadata.time", "type")],
    "uppercase-attribute": [("envelopemetadata.Foo", "attribute-name")],
}


@pytest.mark.parametrize(("protocol", "mode"), PROTOCOL_MODES)
@pytest.mark.parametrize("variant", list(BROKEN))
def test_broken_event_is_nonconformant_with_the_rule(variant: str, protocol: str, mode: str) -> None:
    [verdict] = judge(_broken(variant, protocol, mode))
    if variant == "uppercase-attribute" and mode == BINARY and protocol in ("HTTP", "NATS", "MQTT/5.0"):
        # header names are case-insensitive in HTTP and NATS: `ce-Foo` is the attribute `foo`;
        # MQTT 5 user properties carry no prefix, so `Foo` is an application property, not an attribute
        assert verdict.conformant, verdict.as_dict()
        return
    assert not verdict.conformant
    assert (verdict.messagegroupid, verdict.messageid) == MESSAGE_IDS[protocol]
    assert rules(verdict) == BROKEN[variant], verdict.as_dict()


def test_kafka_header_ce_Foo_is_an_attribute_name_violation() -> None:
    record = encode("KAFKA", BINARY, EVENT, APP_DATA)
    record["headers"].append(["ce_Foo", "x"])
    [verdict] = judge(record)
    assert rules(verdict) == [("envelopemetadata.Foo", "attribute-name")]


def test_kafka_header_prefix_is_case_sensitive() -> None:
    """Kafka header keys are case-sensitive (CONFORMANCE 4 marks only NATS and HTTP names case-insensitive)."""
    record = encode("KAFKA", BINARY, {k: v for k, v in EVENT.items() if k != "id"}, APP_DATA)
    record["headers"].append(["CE_id", "1234"])
    _, [reading] = read(record)
    assert "id" not in reading.attributes and "CE_id" not in reading.attributes
    [verdict] = judge(record)
    assert rules(verdict) == [("envelopemetadata.id", "required")]


def test_mqtt5_user_property_that_cannot_be_an_attribute_is_an_application_property() -> None:
    """MQTT carries attributes as unprefixed user properties; a user property whose name is not a valid
    attribute name (`x-request-id`) is an application property and is not judged (docs/decisions.md)."""
    record = encode("MQTT/5.0", BINARY, EVENT, APP_DATA)
    record["user_properties"].append({"name": "x-request-id", "value": "42"})
    [verdict] = judge(record)
    assert verdict.conformant, verdict.as_dict()
    record["user_properties"] = [p for p in record["user_properties"] if p["name"] != "specversion"]
    [verdict] = judge(record)
    assert rules(verdict) == [("envelopemetadata.specversion", "specversion")]


def test_empty_http_batch_is_conformant_and_names_no_message() -> None:
    [verdict] = judge(_batch())
    assert verdict.conformant and verdict.events == () and verdict.messageid is None


@pytest.mark.parametrize("protocol", sorted({p for p, m in PROTOCOL_MODES if m == STRUCTURED}))
def test_structured_body_that_is_not_json_is_decode(protocol: str) -> None:
    record = encode(protocol, STRUCTURED, EVENT, APP_DATA)
    record["body"] = record["body"][:-5]
    [verdict] = judge(record)
    assert not verdict.conformant and verdict.messageid is None
    assert [v.rule.value for v in verdict.violations] == ["decode"], verdict.as_dict()


@pytest.mark.parametrize("protocol", sorted({p for p, m in PROTOCOL_MODES if m == BINARY}))
def test_binary_body_that_is_not_json_is_decode(protocol: str) -> None:
    """CONFORMANCE 8: a binary body the schema format cannot parse is `decode`, not `schema`."""
    record = encode(protocol, BINARY, EVENT, data_text="{not json")
    [verdict] = judge(record)
    assert (verdict.messagegroupid, verdict.messageid) == MESSAGE_IDS[protocol]
    assert [v.rule.value for v in verdict.violations] == ["decode"], verdict.as_dict()


def test_kafka_ce_type_without_ce_specversion_is_read_binary_and_fails_specversion() -> None:
    """CONFORMANCE 8: no binding marker, still read in binary mode, then `specversion`."""
    record = {"endpoint": "cebindings.kafka", "protocol": "KAFKA", "topic": "mytopic",
              "headers": {"ce_type": "com.example.someevent", "ce_id": "1", "ce_source": "/s",
                          "content-type": "application/json"},
              "body": json.dumps(APP_DATA)}
    [verdict] = judge(record)
    assert (verdict.messagegroupid, verdict.messageid) == MESSAGE_IDS["KAFKA"]
    assert rules(verdict) == [("envelopemetadata.specversion", "specversion")]


def test_mqtt311_binary_looking_message_is_decode() -> None:
    [verdict] = judge({"endpoint": "cebindings.mqtt311", "protocol": "MQTT/3.1.1", "topic_name": "mytopic",
                       "user_properties": [["specversion", "1.0"]], "body": "hello"})
    assert [v.rule.value for v in verdict.violations] == ["decode"]


AMQP_TYPED = {"comexampleothervalue": 5, "comexampleflag": True, "comexampleblob": b"\x00\xffblob"}


@pytest.mark.parametrize("form", ["native", "canonical-string"])
def test_amqp_application_properties_in_native_or_canonical_string_form(form: str) -> None:
    """AMQP 3.1.3.2: a receiver MUST interpret both the native AMQP types and the canonical strings."""
    values = AMQP_TYPED if form == "native" else {
        "comexampleothervalue": "5", "comexampleflag": "true",
        "comexampleblob": base64.b64encode(AMQP_TYPED["comexampleblob"]).decode()}
    record = encode("AMQP/1.0", BINARY, {**EVENT, **values}, APP_DATA)
    [verdict] = judge(record)
    assert verdict.conformant, verdict.as_dict()


@pytest.mark.parametrize(("name", "value"), [("comexampleothervalue", 4.5), ("comexampleothervalue", "five"),
                                             ("comexampleothervalue", 2**40), ("comexampleflag", "yes"),
                                             ("comexampleflag", 1), ("comexampleblob", "not base64!")])
def test_amqp_application_property_of_the_wrong_type(name: str, value: Any) -> None:
    record = encode("AMQP/1.0", BINARY, {**EVENT, name: value}, APP_DATA)
    [verdict] = judge(record)
    assert rules(verdict) == [(f"envelopemetadata.{name}", "type")], verdict.as_dict()


def test_amqp_native_timestamp_reads_as_an_rfc3339_time() -> None:
    """An adapter hands an AMQP timestamp over as a datetime (the recorded JSON form has no timestamp type)."""
    properties = {f"cloudEvents_{k}": v for k, v in EVENT.items() if k not in ("time", "datacontenttype")}
    properties["cloudEvents_time"] = datetime(2018, 4, 5, 3, 56, 24, tzinfo=UTC)
    envelope = Envelope("AMQP/1.0", {"properties": {"to": "myqueue", "content-type": "application/json"},
                                     "application-properties": properties}, APP_BODY.encode(),
                        endpoint="cebindings.amqp")
    [reading] = read_cloudevents(envelope, None)
    assert reading.attributes["time"] == "2018-04-05T03:56:24Z"
    assert ruleset_of(BINDINGS_DOC).classify(envelope).conformant


def test_amqp_native_non_string_for_a_string_core_attribute_is_type() -> None:
    record = encode("AMQP/1.0", BINARY, EVENT, APP_DATA)
    record["application-properties"]["cloudEvents_id"] = 1234
    [verdict] = judge(record)
    assert rules(verdict) == [("envelopemetadata.id", "type")]


def _batch(*events: dict[str, Any]) -> dict[str, Any]:
    return {"endpoint": "cebindings.http", "protocol": "HTTP", "method": "POST", "path": "/events",
            "headers": {"Content-Type": "application/cloudevents-batch+json; charset=utf-8"},
            "body": json.dumps(list(events))}


def test_http_batch_of_good_events_is_conformant_event_by_event() -> None:
    [verdict] = judge(_batch({**EVENT, "data": APP_DATA},
                             {**CORE, "type": "com.example.someotherevent", "data": APP_DATA}))
    assert verdict.conformant, verdict.as_dict()
    assert verdict.events is not None
    assert [(e.outcome.value, e.messageid) for e in verdict.events] == [
        ("conformant", "com.example.someevent"), ("conformant", "com.example.someotherevent")]


def test_http_batch_with_one_bad_event_is_nonconformant() -> None:
    bad = {k: v for k, v in CORE.items() if k != "id"}
    [verdict] = judge(_batch({**EVENT, "data": APP_DATA}, {**bad, "type": "com.example.someotherevent"},
                             {**CORE, "data": APP_DATA}))
    assert not verdict.conformant
    assert verdict.messageid == "com.example.someotherevent"
    assert rules(verdict) == [("envelopemetadata.id", "required")]
    assert verdict.events is not None
    assert [e.outcome.value for e in verdict.events] == ["conformant", "nonconformant", "conformant"]
    assert verdict.as_dict()["events"][1]["violations"][0]["rule"] == "required"


def test_http_batch_that_is_not_an_array_is_decode() -> None:
    record = _batch()
    record["body"] = json.dumps({**EVENT, "data": APP_DATA})
    [verdict] = judge(record)
    assert [v.rule.value for v in verdict.violations] == ["decode"]


def _check_cli(tmp_path: Path, records: list[dict[str, Any]], *extra: str) -> subprocess.CompletedProcess[str]:
    messages = tmp_path / "messages.jsonl"
    messages.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return subprocess.run([sys.executable, "-m", "gateway.cli", "check", "--registry", str(BINDINGS_DOC), *extra,
                           str(messages)], capture_output=True, text=True, cwd=REPO, timeout=120, check=False)


def test_check_cli_exit_codes(tmp_path: Path) -> None:
    good = [encode(p, m, EVENT, APP_DATA) for p, m in PROTOCOL_MODES]
    done = _check_cli(tmp_path, good)
    assert done.returncode == 0, done.stderr
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert [v["verdict"] for v in verdicts] == ["conformant"] * len(good)
    assert [(v["messagegroupid"], v["messageid"]) for v in verdicts] == [MESSAGE_IDS[p] for p, _ in PROTOCOL_MODES]

    broken = good + [_broken("no-specversion", "KAFKA", BINARY), _batch({**CORE, "time": "yesterday"})]
    done = _check_cli(tmp_path, broken)
    assert done.returncode == 1, done.stderr
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert [v["verdict"] for v in verdicts[-2:]] == ["nonconformant", "nonconformant"]
    assert verdicts[-2]["violations"][0]["rule"] == "specversion"
    assert verdicts[-1]["events"][0]["violations"][0]["rule"] == "type"

    done = _check_cli(tmp_path, good, "--endpoint", "no.such.endpoint")
    assert done.returncode == 2 and "no.such.endpoint" in done.stderr


# --- 4. cloudevents/sdk-java JSON fixtures ----------------------------------------------------------------

FIXTURE_RULES = {
    # attribute names must be lower-case letters and digits (CONFORMANCE 5.1)
    "json_data_with_ext_invalid": [("envelopemetadata.a_invalid_name", "attribute-name")],
    "json_data_with_ext_upper_case": [("envelopemetadata.aString", "attribute-name"),
                                      ("envelopemetadata.aBoolean", "attribute-name"),
                                      ("envelopemetadata.aNumber", "attribute-name")],
}
# with the extension declared as a CloudEvents Integer (the only numeric CloudEvents type)
TYPED_FIXTURE_RULES = {
    **FIXTURE_RULES,
    "fail_numeric_decimal": [("envelopemetadata.decimal", "type")],  # 42.42 is not an integer
    "fail_numeric_long": [("envelopemetadata.long", "type")],  # 4247483647 > 2^31-1
}


def _fixture_params(version: str) -> list[Any]:
    folder = CE_MATERIAL / "sdk-java-json-fixtures" / version
    files = sorted(folder.glob("*.json")) if folder.exists() else []
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(reason=ABSENT), id=f"{version}-absent")]
    return [pytest.param(path, id=path.stem) for path in files]


def _fixture_record(path: Path, endpoint: str) -> dict[str, Any]:
    return {"endpoint": endpoint, "protocol": "HTTP", "method": "POST", "path": "/",
            "headers": {"Content-Type": "application/cloudevents+json"}, "body": path.read_text("utf-8")}


@pytest.mark.parametrize("path", _fixture_params("v1"))
def test_sdk_java_fixture_is_read_as_structured_http(path: Path) -> None:
    event = json.loads(path.read_text("utf-8"))
    _, readings = read(_fixture_record(path, "fixtures.permissive"))
    assert len(readings) == 1 and readings[0].problem is None and readings[0].mode == STRUCTURED
    # null means unset (json-format 2.2); data / data_base64 are not attributes
    assert readings[0].attributes == {k: v for k, v in event.items()
                                      if k not in ("data", "data_base64") and v is not None}
    if "data_base64" in event:
        assert readings[0].data_is_bytes and readings[0].data == base64.b64decode(event["data_base64"])
    else:
        assert readings[0].data == event.get("data", MISSING)


@pytest.mark.parametrize("path", _fixture_params("v1"))
def test_sdk_java_fixture_against_a_permissive_definition(path: Path) -> None:
    """Only the type is declared: undeclared extension values are not type-checked (CONFORMANCE 5.1 lists no
    such rule), so the fail_numeric_* fixtures are conformant here; bad attribute names are not."""
    [verdict] = judge(_fixture_record(path, "fixtures.permissive"), document=FIXTURES_DOC)
    expected = FIXTURE_RULES.get(path.stem, [])
    assert rules(verdict) == expected, verdict.as_dict()
    assert verdict.conformant is (not expected)
    assert (verdict.messagegroupid, verdict.messageid) == ("fixtures.permissive", "mock.test")


CE_TYPE_OF_NAME = {"binary": "binary"}


def _declared_type(name: str, value: Any) -> str:
    """The CloudEvents type a JSON value maps to (json-format 2.2): number -> Integer, the only numeric type."""
    if name in CE_TYPE_OF_NAME:
        return CE_TYPE_OF_NAME[name]
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "integer"
    return "string"


@pytest.fixture(scope="module")
def typed_fixtures_document(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One HTTP endpoint per v1 fixture whose mock.test definition declares every extension with its type."""
    folder = conformance_dir("cloudevents", "sdk-java-json-fixtures", "v1")
    core = {"specversion", "id", "type", "source", "subject", "time", "datacontenttype", "dataschema",
            "data", "data_base64"}
    endpoints = {}
    for path in sorted(folder.glob("*.json")):
        event = json.loads(path.read_text("utf-8"))
        metadata: dict[str, Any] = {"type": {"value": "mock.test", "required": True}}
        for name, value in event.items():
            if name not in core:
                metadata[name] = {"type": _declared_type(name, value), "required": True}
        endpoints[f"fixture.{path.stem}"] = {
            "usage": ["consumer"], "protocol": "HTTP", "envelope": "CloudEvents/1.0",
            "messages": {"mock.test": {"envelope": "CloudEvents/1.0", "protocol": "HTTP",
                                       "envelopemetadata": metadata}}}
    document = tmp_path_factory.mktemp("sdk-java") / "typed-fixtures.xreg.json"
    document.write_text(json.dumps({"specversion": "1.0-rc1", "endpoints": endpoints}), "utf-8")
    return document


@pytest.mark.parametrize("path", _fixture_params("v1"))
def test_sdk_java_fixture_against_declared_extension_types(path: Path, typed_fixtures_document: Path) -> None:
    """Declared Integer extensions reject a decimal (42.42) and an out-of-range long (4247483647): `type`."""
    [verdict] = judge(_fixture_record(path, f"fixture.{path.stem}"), document=typed_fixtures_document)
    expected = TYPED_FIXTURE_RULES.get(path.stem, [])
    assert rules(verdict) == expected, verdict.as_dict()
    assert verdict.conformant is (not expected)


@pytest.mark.parametrize("path", _fixture_params("v03"))
def test_sdk_java_v03_fixture_fails_specversion(path: Path) -> None:
    event = json.loads(path.read_text("utf-8"))
    [verdict] = judge(_fixture_record(path, "fixtures.permissive"), document=FIXTURES_DOC)
    if event["specversion"] != "0.3":
        # sdk-java's v03/fail_numeric_* files carry specversion 1.0: judged like their v1 twins
        assert path.stem.startswith("fail_numeric") and verdict.conformant, verdict.as_dict()
        return
    assert not verdict.conformant
    assert ("envelopemetadata.specversion", "specversion") in rules(verdict)
