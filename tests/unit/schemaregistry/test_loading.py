"""Definitions whose schemas come from a Confluent-compatible registry: loaded through the real loader,
fetcher (policy, cache, credentials) and compiler, judged with judge_record. The registry is the stand-in
of standin.py served to the fetcher in place of the network."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.compiler import compile_registry
from gateway.errors import Severity
from gateway.loader import load_snapshot
from gateway.loader.fetch import RemoteFetcher
from gateway.registry_api.document import registry_document
from gateway.schemaregistry import SchemaRegistrySettings, registry_schemas
from gateway.schemaregistry.model import RegistryPayloadSchema
from tests.unit.builders import Loaded, b64, bad, ce_message, kafka_ce, ok, registry, shape, write_doc
from tests.unit.schemaregistry.standin import (
    ORDERS_PROTO,
    OTHER,
    READING_V1,
    READING_V2,
    StandInFetcher,
    StandInRegistry,
    avro_payload,
    encode,
    example_registry,
    header,
    json_payload,
    proto_classes,
    protobuf_payload,
)

URL = "http://registry.test:8081"
MAIN = SchemaRegistrySettings("main", URL, "xgate", "pw", ())
DECODE = ("dataschema:", "decode")
SCHEMA = ("dataschema:", "schema")
MESSAGES = {
    "reading": "confluent://main/subjects/readings-value/versions/latest",
    "reading-v1": "confluent://main/subjects/readings-value/versions/1",
    "order": "confluent://main/subjects/orders-value/versions/1",
    "refund": "confluent://main/subjects/orders-value/versions/latest:com.example.Refund",
    "event": f"{URL}/subjects/events-value/versions/1",
    "by-id": "confluent://main/schemas/ids/1",
}


def _load(tmp_path: Path, messages: dict[str, str], fetcher: RemoteFetcher | None,
          registries: dict[str, SchemaRegistrySettings] | None = None, **extra: Any) -> Loaded:
    doc = registry("KAFKA", {mid: ce_message(mid, dataschemauri=uri, **extra) for mid, uri in messages.items()})
    write_doc(tmp_path, "registry.json", doc)
    snapshot = load_snapshot([tmp_path / "registry.json"], fetcher=fetcher,
                             schemas=registry_schemas({"main": MAIN} if registries is None else registries))
    return Loaded(snapshot, compile_registry(snapshot.registry, snapshot.digest))


def _record(type_value: str, body: bytes) -> dict[str, Any]:
    return kafka_ce(type_value, body_base64=b64(body))


@pytest.fixture
def stand_in() -> tuple[StandInRegistry, dict[str, int]]:
    return example_registry(username="xgate", password="pw")


@pytest.fixture
def loaded(tmp_path: Path, stand_in: tuple[StandInRegistry, dict[str, int]]) -> Loaded:
    found = _load(tmp_path, MESSAGES, StandInFetcher(stand_in[0]))
    assert found.errors == [] and found.warnings == []
    return found


def test_avro_payloads_of_every_version_of_a_latest_subject_pass(loaded: Loaded, stand_in: Any) -> None:
    ids = stand_in[1]
    v2 = avro_payload(ids["reading_v2"], READING_V2, {"device": "d1", "temperature": 21.5, "unit": "C"})
    v1 = avro_payload(ids["reading_v1"], READING_V1, {"device": "d1", "temperature": 21.5})
    assert shape(loaded.judge(_record("reading", v2))) == ok("g", "reading")
    assert shape(loaded.judge(_record("reading", v1))) == ok("g", "reading")
    # a numbered version allows that version's id only
    assert shape(loaded.judge(_record("reading-v1", v1))) == ok("g", "reading-v1")
    verdict = loaded.judge(_record("reading-v1", v2))
    assert shape(verdict) == bad("g", "reading-v1", SCHEMA)
    assert verdict.violations[0].actual == ids["reading_v2"]
    assert "is not one this definition allows" in verdict.violations[0].message
    assert "subject readings-value version 2" in verdict.violations[0].message


def test_an_id_of_another_subject_is_not_allowed_and_an_unseen_id_is_unknown(loaded: Loaded, stand_in: Any) -> None:
    ids = stand_in[1]
    orders = loaded.judge(_record("reading", avro_payload(ids["orders"], OTHER, {"x": 1})))
    assert shape(orders) == bad("g", "reading", SCHEMA)
    assert "subject orders-value version 1" in orders.violations[0].message  # fetched for another definition
    unknown = loaded.judge(_record("reading", avro_payload(4242, READING_V1, {"device": "d", "temperature": 1.0})))
    assert shape(unknown) == bad("g", "reading", SCHEMA)
    assert unknown.violations[0].message.startswith("schema id 4242 is unknown")
    assert unknown.violations[0].actual == 4242


def test_broken_headers_are_decode_violations(loaded: Loaded, stand_in: Any) -> None:
    ids = stand_in[1]
    plain = avro_payload(ids["reading_v1"], READING_V1, {"device": "d1", "temperature": 21.5})[5:]
    cases = {b"": "payload is empty", plain: "payload starts with 0x04, not the Confluent wire-format magic byte",
             b"\x00\x00\x00": "payload is 3 bytes, shorter than the 5-byte", b"\x01" + plain: "starts with 0x01"}
    for body, message in cases.items():
        verdict = loaded.judge(_record("reading", body))
        assert shape(verdict) == bad("g", "reading", DECODE), body
        assert message in verdict.violations[0].message


def test_avro_that_does_not_fit_its_writer_schema_is_a_decode_violation(loaded: Loaded, stand_in: Any) -> None:
    ids = stand_in[1]
    # written with version 1 but labelled version 2: the reader runs out of bytes
    mislabelled = avro_payload(ids["reading_v2"], READING_V1, {"device": "d1", "temperature": 21.5})
    verdict = loaded.judge(_record("reading", mislabelled))
    assert shape(verdict) == bad("g", "reading", DECODE)
    leftover = avro_payload(ids["reading_v1"], READING_V1, {"device": "d1", "temperature": 21.5}) + b"\x00"
    assert "left over" in loaded.judge(_record("reading", leftover)).violations[0].message


def test_protobuf_message_indexes_select_the_message_type(loaded: Loaded, stand_in: Any) -> None:
    ids = stand_in[1]
    classes = proto_classes(ORDERS_PROTO)
    order = classes["com.example.Order"](id="o-1", quantity=2)
    refund = classes["com.example.Refund"](order_id="o-1", cents=250)
    refund.lines.add(sku="s-1")
    line = classes["com.example.Refund.Line"](sku="s-1")
    assert shape(loaded.judge(_record("order", protobuf_payload(ids["orders"], order, [0])))) == ok("g", "order")
    # without a selector any message type of the file passes, a nested one too
    assert shape(loaded.judge(_record("order", protobuf_payload(ids["orders"], refund, [1])))) == ok("g", "order")
    assert shape(loaded.judge(_record("order", protobuf_payload(ids["orders"], line, [1, 0])))) == ok("g", "order")
    # with `:com.example.Refund`, only the indexes [1]
    assert shape(loaded.judge(_record("refund", protobuf_payload(ids["orders"], refund, [1])))) == ok("g", "refund")
    wrong = loaded.judge(_record("refund", protobuf_payload(ids["orders"], order, [0])))
    assert shape(wrong) == bad("g", "refund", SCHEMA)
    assert wrong.violations[0].message == "message indexes [0] select com.example.Order; the definition names " \
                                          "com.example.Refund"


@pytest.mark.parametrize(("tail", "message"), [
    (b"\x02\x0a", "message indexes [5] name no message type"),
    (b"\x02", "message indexes are truncated after 0 of 1"),
    (b"\x02\x02\xff\xff", "payload does not parse as com.example.Refund"),
])
def test_broken_protobuf_payloads_are_decode_violations(loaded: Loaded, stand_in: Any, tail: bytes,
                                                        message: str) -> None:
    verdict = loaded.judge(_record("order", header(stand_in[1]["orders"]) + tail))
    assert shape(verdict) == bad("g", "order", DECODE)
    assert message in verdict.violations[0].message


def test_json_payloads_and_the_registry_url_form(loaded: Loaded, stand_in: Any) -> None:
    schema_id = stand_in[1]["event"]
    assert shape(loaded.judge(_record("event", json_payload(schema_id, {"kind": "a", "count": 1})))) == ok("g", "event")
    assert shape(loaded.judge(_record("event", json_payload(schema_id, {"kind": "a", "count": -1})))) == \
        bad("g", "event", ("dataschema:/count", "schema"))
    assert shape(loaded.judge(_record("event", encode(schema_id, b"{nope")))) == bad("g", "event", DECODE)


def test_a_schema_named_by_id(loaded: Loaded, stand_in: Any) -> None:
    v1 = avro_payload(stand_in[1]["reading_v1"], READING_V1, {"device": "d", "temperature": 1.0})
    assert shape(loaded.judge(_record("by-id", v1))) == ok("g", "by-id")


def test_structured_json_data_is_judged_by_the_default_schema(tmp_path: Path, stand_in: Any) -> None:
    found = _load(tmp_path, {"event": MESSAGES["event"]}, StandInFetcher(stand_in[0]))
    event = {"specversion": "1.0", "id": "1", "source": "/s", "type": "event", "datacontenttype": "application/json"}
    record = {"protocol": "KAFKA", "topic": "t", "headers": {"content-type": "application/cloudevents+json"}}
    good = found.judge({**record, "body": json.dumps({**event, "data": {"kind": "a"}})})
    assert shape(good) == ok("g", "event")
    wrong = found.judge({**record, "body": json.dumps({**event, "data": {"count": 1}})})
    assert shape(wrong) == bad("g", "event", ("dataschema:", "schema"))


def test_credentials_go_to_the_configured_registry_only(tmp_path: Path, stand_in: Any) -> None:
    fetcher = StandInFetcher(stand_in[0], allow=("registry.test", "other.test"))
    _load(tmp_path, {"a": MESSAGES["order"], "b": "http://other.test/subjects/orders-value/versions/1"}, fetcher)
    sent = {url: headers.get("Authorization") for url, headers in fetcher.sent}
    assert sent[f"{URL}/subjects/orders-value/versions/1"] == "Basic eGdhdGU6cHc="
    assert sent["http://other.test/subjects/orders-value/versions/1"] is None


def test_wrong_credentials_are_an_error_and_the_message_is_left_out(tmp_path: Path, stand_in: Any) -> None:
    wrong = SchemaRegistrySettings("main", URL, "xgate", "wrong")
    found = _load(tmp_path, {"order": MESSAGES["order"]}, StandInFetcher(stand_in[0]), {"main": wrong})
    assert [d.code for d in found.errors] == ["schema-registry", "message-left-out"]
    assert "HTTP status 401" in found.errors[0].message
    assert ("g", "order") not in found.snapshot.registry.messages


@pytest.mark.parametrize(("uri", "message"), [
    ("confluent://main/subjects/missing-value/versions/1", "HTTP status 404"),
    ("confluent://main/subjects/readings-value/versions/9", "HTTP status 404"),
    ("confluent://main/schemas/ids/999", "HTTP status 404"),
    ("confluent://nope/subjects/readings-value/versions/1", "which gateway.yaml `schemaregistries` does not configure"),
    ("confluent://main/subjects/readings-value/versions/x", "expected a number from 1 or `latest`"),
])
def test_unresolvable_registry_references_are_errors(tmp_path: Path, stand_in: Any, uri: str, message: str) -> None:
    found = _load(tmp_path, {"m": uri}, StandInFetcher(stand_in[0]))
    assert [d.code for d in found.errors] == ["schema-registry", "message-left-out"]
    assert message in found.errors[0].message
    assert found.errors[0].pointer == "/messagegroups/g/messages/m/dataschemauri"


def test_subjects_outside_the_configured_list_are_refused(tmp_path: Path, stand_in: Any) -> None:
    limited = SchemaRegistrySettings("main", URL, "xgate", "pw", ("orders-value", "other-value"))
    fetcher = StandInFetcher(stand_in[0])
    found = _load(tmp_path, {"order": MESSAGES["order"], "reading": MESSAGES["reading"]}, fetcher, {"main": limited})
    assert [d.code for d in found.errors] == ["schema-registry", "message-left-out"]
    assert "subject 'readings-value' is not one of schemaregistries.main.subjects" in found.errors[0].message
    assert not any("readings-value" in url for url, _ in fetcher.sent)
    # the listed subjects were fetched at load: an id of other-value is known, so it reads "not allowed"
    verdict = found.judge(_record("order", avro_payload(stand_in[1]["other"], OTHER, {"x": 1})))
    assert "subject other-value version 1" in verdict.violations[0].message


def test_policy_keeps_the_registry_unasked_with_a_warning(tmp_path: Path, stand_in: Any) -> None:
    off = _load(tmp_path, {"order": MESSAGES["order"]}, None)
    assert off.errors == [] and [d.code for d in off.warnings] == ["remote-schema"]
    assert "remote fetching is off" in off.warnings[0].message
    fetcher = StandInFetcher(stand_in[0], allow=("elsewhere.test",))
    other = _load(tmp_path, {"order": MESSAGES["order"]}, fetcher)
    assert "host registry.test:8081 is not on gateway.yaml `remote.allow`" in other.warnings[0].message
    assert fetcher.sent == []
    # the payload is not checked, everything else is (DESIGN: remote schemas not fetched)
    assert shape(other.judge(_record("order", b"anything"))) == ok("g", "order")


def test_a_declared_format_must_match_the_registrys(tmp_path: Path, stand_in: Any) -> None:
    found = _load(tmp_path, {"order": MESSAGES["order"]}, StandInFetcher(stand_in[0]), dataschemaformat="Avro/1.11")
    assert [d.code for d in found.errors] == ["schema-registry", "message-left-out"]
    assert "which the registry holds as PROTOBUF" in found.errors[0].message
    same = _load(tmp_path, {"order": MESSAGES["order"]}, StandInFetcher(stand_in[0]), dataschemaformat="Protobuf/3")
    assert same.errors == []


def test_a_schema_that_does_not_compile_is_a_load_error(tmp_path: Path) -> None:
    registry_ = StandInRegistry()
    registry_.register("broken-value", {"type": "record", "name": "X"})  # no fields
    found = _load(tmp_path, {"m": "confluent://main/subjects/broken-value/versions/1"}, StandInFetcher(registry_),
                  {"main": SchemaRegistrySettings("main", URL)})
    assert [d.code for d in found.errors] == ["schema-compile"]
    assert "confluent://main/subjects/broken-value/versions/1" in found.errors[0].message
    assert found.errors[0].file == str(tmp_path / "registry.json")


def test_schema_references_are_refused(tmp_path: Path) -> None:
    registry_ = StandInRegistry()
    registry_.register("r-value", READING_V1)
    fetcher = StandInFetcher(registry_)
    original = registry_.answer

    def with_references(path: str, authorization: str | None) -> Any:
        status, body = original(path, authorization)
        return status, {**body, "references": [{"name": "x", "subject": "y", "version": 1}]} \
            if isinstance(body, dict) and status == 200 else body
    registry_.answer = with_references  # type: ignore[method-assign]
    found = _load(tmp_path, {"m": "confluent://main/subjects/r-value/versions/1"}, fetcher,
                  {"main": SchemaRegistrySettings("main", URL)})
    assert "`references` to other subjects" in found.errors[0].message


def test_a_new_version_changes_the_digest_and_is_allowed_after_loading_again(tmp_path: Path, stand_in: Any) -> None:
    registry_ = stand_in[0]
    fetcher = StandInFetcher(registry_)
    first = _load(tmp_path, {"reading": MESSAGES["reading"]}, fetcher)
    v3_schema = {**READING_V2, "fields": [*READING_V2["fields"], {"name": "site", "type": "string", "default": ""}]}
    v3 = registry_.register("readings-value", v3_schema)
    payload = avro_payload(v3, v3_schema, {"device": "d", "temperature": 1.0, "unit": "C", "site": "b"})
    assert shape(first.judge(_record("reading", payload))) == bad("g", "reading", SCHEMA)
    asked = len(fetcher.sent)
    again = _load(tmp_path, {"reading": MESSAGES["reading"]}, fetcher)  # a reload: the same fetcher and cache
    assert again.snapshot.digest != first.snapshot.digest
    assert shape(again.judge(_record("reading", payload))) == ok("g", "reading")
    # the list of versions is asked again, versions already fetched come from the cache
    assert [url for url, _ in fetcher.sent[asked:]] == [f"{URL}/subjects/readings-value/versions",
                                                        f"{URL}/subjects/readings-value/versions/3"]


def test_export_keeps_the_registry_reference(tmp_path: Path, loaded: Loaded) -> None:
    payload = loaded.snapshot.registry.messages[("g", "order")].payload
    assert isinstance(payload, RegistryPayloadSchema) and payload.default_id and payload.format == "Protobuf"
    document = registry_document(loaded.snapshot, resolved=True)
    message = document["messagegroups"]["g"]["messages"]["order"]
    assert message["dataschemauri"] == MESSAGES["order"] and "dataschema" not in message


def test_the_loader_reports_a_failed_reasking_and_uses_what_it_had(tmp_path: Path, stand_in: Any) -> None:
    fetcher = StandInFetcher(stand_in[0])
    _load(tmp_path, {"reading": MESSAGES["reading"]}, fetcher)
    stand_in[0].username = "changed"  # every request now fails with 401
    again = _load(tmp_path, {"reading": MESSAGES["reading"]}, fetcher)
    assert again.errors == []
    assert [d.code for d in again.warnings] == ["remote-stale"]
    assert any(d.severity is Severity.WARNING and "answer fetched before is used" in d.message
               for d in again.snapshot.diagnostics)
