"""validation rule 4 (second table) and 3: CloudEvents attributes read per binding, structured vs binary mode,
the endpoint's `envelopeoptions.mode`, and where the payload is (event `data` vs body)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit.builders import b64, bad, ce_message, load_doc, ok, registry, shape

SCHEMA = {"type": "object", "required": ["temp"], "properties": {"temp": {"type": "number"}}}
ATTRS = {"specversion": "1.0", "id": "1", "source": "/s", "type": "t"}


def _load(tmp_path: Path, protocol: str, mode: str | None = None) -> Any:
    endpoint_attrs = {"envelope": "CloudEvents/1.0"}
    if mode:
        endpoint_attrs["envelopeoptions"] = {"mode": mode}  # type: ignore[assignment]
    message = ce_message("t", dataschemaformat="JsonSchema/draft-07", dataschema=SCHEMA)
    loaded = load_doc(tmp_path, registry(protocol, {"m": message}, endpoint_attrs=endpoint_attrs))
    assert loaded.errors == []
    return loaded


def _event(data: Any = None, **attrs: Any) -> str:
    event: dict[str, Any] = {**ATTRS, **attrs}
    if data is not None:
        event["data"] = data
    return json.dumps(event)


# --- binary mode per protocol ---------------------------------------------------------------------------


def _binary(protocol: str, attrs: dict[str, str], body: str, content_type: str | None = "application/json") -> dict:
    if protocol == "KAFKA":
        headers = {f"ce_{k}": v for k, v in attrs.items()}
        if content_type:
            headers["content-type"] = content_type
        return {"protocol": "KAFKA", "topic": "x", "headers": headers, "body": body}
    if protocol == "MQTT/5.0":
        rec: dict[str, Any] = {"protocol": "MQTT/5.0", "topic_name": "x",
                               "user_properties": [{"name": k, "value": v} for k, v in attrs.items()], "body": body}
        if content_type:
            rec["content_type"] = content_type
        return rec
    if protocol == "AMQP/1.0":
        props = {"subject": "x"}
        if content_type:
            props["content-type"] = content_type
        return {"protocol": "AMQP/1.0", "properties": props,
                "application-properties": {f"cloudEvents_{k}": v for k, v in attrs.items()}, "body": body}
    headers = {f"ce-{k}": v for k, v in attrs.items()}
    if content_type:
        headers["Content-Type"] = content_type
    rec = {"protocol": protocol, "headers": headers, "body": body}
    rec.update({"subject": "x"} if protocol == "NATS" else {"method": "POST", "path": "/x"})
    return rec


BINARY_PROTOCOLS = ["KAFKA", "MQTT/5.0", "AMQP/1.0", "NATS", "HTTP"]


@pytest.mark.parametrize("protocol", BINARY_PROTOCOLS)
def test_binary_mode_reads_attributes_and_body(tmp_path: Path, protocol: str) -> None:
    loaded = _load(tmp_path, protocol)
    assert shape(loaded.judge(_binary(protocol, ATTRS, '{"temp": 21.5}'))) == ok("g", "m")
    assert shape(loaded.judge(_binary(protocol, {**ATTRS, "id": ""}, '{"temp": 21.5}'))) == \
        bad("g", "m", ("envelopemetadata.id", "required"))
    assert shape(loaded.judge(_binary(protocol, ATTRS, '{"temp": "warm"}'))) == \
        bad("g", "m", ("dataschema:/temp", "schema"))


@pytest.mark.parametrize("protocol", ["KAFKA", "MQTT/5.0", "AMQP/1.0", "HTTP"])
def test_binary_mode_protocol_content_type_is_datacontenttype(tmp_path: Path, protocol: str) -> None:
    loaded = _load(tmp_path, protocol)
    assert shape(loaded.judge(_binary(protocol, ATTRS, '{"temp": 1}', "text/plain"))) == \
        bad("g", "m", ("envelopemetadata.datacontenttype", "content-type"))


def test_nats_binary_content_type_comes_from_ce_header(tmp_path: Path) -> None:
    # the NATS binding maps datacontenttype to `ce-datacontenttype`, not to `Content-Type`
    loaded = _load(tmp_path, "NATS")
    assert shape(loaded.judge(_binary("NATS", ATTRS, '{"temp": 1}', "text/plain"))) == ok("g", "m")
    assert shape(loaded.judge(_binary("NATS", {**ATTRS, "datacontenttype": "text/plain"}, '{"temp": 1}'))) == \
        bad("g", "m", ("envelopemetadata.datacontenttype", "content-type"))


@pytest.mark.parametrize("protocol", ["NATS", "HTTP"])
def test_ce_header_prefix_is_case_insensitive(tmp_path: Path, protocol: str) -> None:
    loaded = _load(tmp_path, protocol)
    rec = _binary(protocol, {}, '{"temp": 1}')
    rec["headers"].update({"CE-SpecVersion": "1.0", "Ce-Id": "1", "ce-SOURCE": "/s", "cE-Type": "t"})
    assert shape(loaded.judge(rec)) == ok("g", "m")


def test_kafka_ce_prefix_is_exact_for_attribute_names(tmp_path: Path) -> None:
    # `ce_` is the Kafka prefix; an upper-case attribute name after it is an attribute-name violation
    loaded = _load(tmp_path, "KAFKA")
    rec = _binary("KAFKA", {**ATTRS, "Ext": "1"}, '{"temp": 1}')
    assert shape(loaded.judge(rec)) == bad("g", "m", ("envelopemetadata.Ext", "attribute-name"))


def test_amqp_colon_prefix_and_typed_values(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "AMQP/1.0")
    rec = _binary("AMQP/1.0", {}, '{"temp": 1}')
    rec["application-properties"] = {f"cloudEvents:{k}": v for k, v in ATTRS.items()}
    assert shape(loaded.judge(rec)) == ok("g", "m")
    # AMQP keeps types: an integer `id` is not a string
    rec["application-properties"]["cloudEvents:id"] = 7
    assert shape(loaded.judge(rec)) == bad("g", "m", ("envelopemetadata.id", "type"))


def test_amqp_unprefixed_application_properties_are_not_attributes(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "AMQP/1.0")
    rec = _binary("AMQP/1.0", {}, '{"temp": 1}')
    rec["application-properties"] = {**ATTRS}
    verdict = loaded.judge(rec)
    assert (verdict.outcome.value, verdict.messagegroupid) == ("nonconformant", None)
    assert [v.rule.value for v in verdict.violations] == ["no-match"]


def test_mqtt5_user_property_names_are_unprefixed(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "MQTT/5.0")
    rec = _binary("MQTT/5.0", {f"ce_{k}": v for k, v in ATTRS.items()}, '{"temp": 1}')
    verdict = loaded.judge(rec)
    assert [v.rule.value for v in verdict.violations] == ["no-match"]


# --- structured mode --------------------------------------------------------------------------------------


def _structured(protocol: str, body: str, content_type: str = "application/cloudevents+json") -> dict:
    if protocol == "KAFKA":
        return {"protocol": "KAFKA", "topic": "x", "headers": {"content-type": content_type}, "body": body}
    if protocol == "MQTT/5.0":
        return {"protocol": "MQTT/5.0", "topic_name": "x", "content_type": content_type, "body": body}
    if protocol == "MQTT/3.1.1":
        return {"protocol": "MQTT/3.1.1", "topic_name": "x", "body": body}
    if protocol == "AMQP/1.0":
        return {"protocol": "AMQP/1.0", "properties": {"subject": "x", "content-type": content_type}, "body": body}
    rec = {"protocol": protocol, "headers": {"Content-Type": content_type}, "body": body}
    rec.update({"subject": "x"} if protocol == "NATS" else {"method": "POST", "path": "/x"})
    return rec


STRUCTURED_PROTOCOLS = ["KAFKA", "MQTT/5.0", "MQTT/3.1.1", "AMQP/1.0", "NATS", "HTTP"]


@pytest.mark.parametrize("protocol", STRUCTURED_PROTOCOLS)
def test_structured_mode_reads_the_event_and_its_data(tmp_path: Path, protocol: str) -> None:
    loaded = _load(tmp_path, protocol)
    assert shape(loaded.judge(_structured(protocol, _event({"temp": 3})))) == ok("g", "m")
    assert shape(loaded.judge(_structured(protocol, _event({"temp": "x"})))) == \
        bad("g", "m", ("dataschema:/temp", "schema"))
    assert shape(loaded.judge(_structured(protocol, _event({"temp": 3}, specversion="0.3")))) == \
        bad("g", "m", ("envelopemetadata.specversion", "specversion"))
    assert shape(loaded.judge(_structured(protocol, "{oops"))) == bad(None, None, ("body", "decode"))


def test_structured_data_base64(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "HTTP")
    event = {**ATTRS, "data_base64": b64(b'{"temp": 4}')}
    assert shape(loaded.judge(_structured("HTTP", json.dumps(event)))) == ok("g", "m")
    event = {**ATTRS, "data_base64": b64(b'{"temp": "x"}')}
    assert shape(loaded.judge(_structured("HTTP", json.dumps(event)))) == bad("g", "m", ("dataschema:/temp", "schema"))


def test_structured_event_without_data_is_not_payload_checked(tmp_path: Path) -> None:
    # silent point (assumed): an event that carries no `data` has no payload to validate
    loaded = _load(tmp_path, "HTTP")
    assert shape(loaded.judge(_structured("HTTP", _event()))) == ok("g", "m")


def test_structured_marker_parameters_and_case(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "HTTP")
    rec = _structured("HTTP", _event({"temp": 1}), "Application/CloudEvents+JSON; charset=UTF-8")
    assert shape(loaded.judge(rec)) == ok("g", "m")


def test_http_batch_each_event_on_its_own(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "HTTP")
    good = [json.loads(_event({"temp": 1}, id="a")), json.loads(_event({"temp": 2}, id="b"))]
    verdict = loaded.judge(_structured("HTTP", json.dumps(good), "application/cloudevents-batch+json"))
    assert shape(verdict) == ok("g", "m")
    assert verdict.events is not None and [shape(e) for e in verdict.events] == [ok("g", "m"), ok("g", "m")]
    mixed = [good[0], json.loads(_event({"temp": 2}, id=""))]
    verdict = loaded.judge(_structured("HTTP", json.dumps(mixed), "application/cloudevents-batch+json"))
    assert shape(verdict) == bad("g", "m", ("envelopemetadata.id", "required"))
    assert verdict.events is not None
    assert [e.conformant for e in verdict.events] == [True, False]


def test_http_batch_that_is_not_an_array(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "HTTP")
    verdict = loaded.judge(_structured("HTTP", _event({"temp": 1}), "application/cloudevents-batch+json"))
    assert not verdict.conformant
    assert [v.rule.value for v in verdict.violations] == ["decode"]


# --- the endpoint narrows the mode (section 3) -------------------------------------------------------


def test_endpoint_mode_binary_does_not_read_structured(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "HTTP", mode="binary")
    assert shape(loaded.judge(_binary("HTTP", ATTRS, '{"temp": 1}'))) == ok("g", "m")
    verdict = loaded.judge(_structured("HTTP", _event({"temp": 1})))
    assert (verdict.outcome.value, verdict.messagegroupid, verdict.messageid) == ("nonconformant", None, None)
    assert [v.rule.value for v in verdict.violations] == ["no-match"]


def test_endpoint_mode_structured_does_not_read_binary(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "KAFKA", mode="structured")
    assert shape(loaded.judge(_structured("KAFKA", _event({"temp": 1})))) == ok("g", "m")
    # the body is parsed as the event: {"temp": 1} has no `type`, so nothing applies
    verdict = loaded.judge(_binary("KAFKA", ATTRS, '{"temp": 1}'))
    assert [v.rule.value for v in verdict.violations] == ["no-match"]
    assert (verdict.messagegroupid, verdict.messageid) == (None, None)


def test_without_endpoint_mode_both_modes_are_accepted(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "KAFKA")
    assert loaded.judge(_binary("KAFKA", ATTRS, '{"temp": 1}')).conformant
    assert loaded.judge(_structured("KAFKA", _event({"temp": 1}))).conformant
