"""validation rule 1: every document generation loads into the same model, so an equivalent message definition
written in each generation gives the same verdicts; and the name tolerances of section 1."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from gateway.errors import Severity
from gateway.loader.generations import normalize_document
from tests.unit.builders import CE, bad, ce_message, kafka_ce, load_doc, load_files, ok, registry, shape

TYPE = "com.example.reading"
SCHEMA = {"type": "object", "required": ["temperature"], "properties": {"temperature": {"type": "number"}}}
# the equivalent constraints, as attribute declarations of 1.0
ATTRIBUTES = {"type": {"value": TYPE, "required": True},
              "source": {"type": "uritemplate", "value": "/devices/{device}", "required": True},
              "unit": {"type": "string", "value": "C"}}


def _schemagroups(key: str = "schemagroups") -> dict[str, Any]:
    return {key: {"sg": {"schemas": {"reading": {"format": "JsonSchema/draft-07", "versions": {
        "1": {"format": "JsonSchema/draft-07", "schema": SCHEMA}}}}}}}


def gen_1_0() -> dict[str, Any]:
    return {"specversion": "1.0-rc4",
            "endpoints": {"ep": {"usage": ["consumer"], "protocol": "KAFKA",
                                 "protocoloptions": {"options": {"topic": "telemetry"}},
                                 "envelope": CE, "messagegroups": ["#/messagegroups/g"]}},
            "messagegroups": {"g": {"envelope": CE, "messages": {"m": {
                "envelope": CE, "envelopemetadata": ATTRIBUTES, "protocol": "KAFKA",
                "dataschemaformat": "JsonSchema/draft-07", "dataschemauri": "/schemagroups/sg/schemas/reading"}}}},
            **_schemagroups()}


def gen_1_0_inline_schema_no_specversion() -> dict[str, Any]:
    doc = gen_1_0()
    del doc["specversion"]
    message = doc["messagegroups"]["g"]["messages"]["m"]
    del message["dataschemauri"]
    message["dataschema"] = SCHEMA
    return doc


def gen_0_5_late() -> dict[str, Any]:
    return {"specversion": "0.5-wip",
            "endpoints": {"ep": {"usage": "consumer", "protocol": "KAFKA", "protocoloptions": {"topic": "telemetry"},
                                 "messagegroups": ["#/messagegroups/g"]}},
            "messagegroups": {"g": {"messages": {"m": {
                "envelope": "CloudEvents/1.0", "envelopemetadata": ATTRIBUTES, "protocol": "KAFKA",
                "schemaformat": "JsonSchema/draft-07", "schemauri": "#/schemagroups/sg/schemas/reading"}}}},
            **_schemagroups()}


def gen_0_5_early(wrapped: bool) -> dict[str, Any]:
    metadata: dict[str, Any] = {"attributes": ATTRIBUTES} if wrapped else dict(ATTRIBUTES)
    return {"specversion": "0.5-wip",
            "endpoints": {"ep": {"usage": "consumer", "config": {"protocol": "KAFKA", "endpoints": ["kafka://h:9092"]},
                                 "messagegroups": ["#/messagegroups/g"]}},
            "messagegroups": {"g": {"binding": "KAFKA", "messages": {"m": {
                "format": "CloudEvents/1.0", "binding": "KAFKA", "metadata": metadata,
                "schemaformat": "JsonSchema/draft-07", "schemaurl": "#/schemagroups/sg/schemas/reading"}}}},
            **_schemagroups()}


def _cereg_attributes() -> dict[str, Any]:
    # old documents wrap every attribute as {"value", "required", "type"}; same thing
    return copy.deepcopy(ATTRIBUTES)


def gen_cereg(camel: bool) -> dict[str, Any]:
    groups_key = "definitionGroups" if camel else "definitiongroups"
    schema_key = "schemaGroups" if camel else "schemagroups"
    return {"specversion": "0.5-wip" if camel else "0.4-wip",
            "endpoints": {"ep": {"usage": "consumer",
                                 "config": {"protocol": "KAFKA/3.0", "endpoints": ["kafka://h:9092"],
                                            "options": {"topic": "telemetry"}},
                                 groups_key: [f"#/{groups_key}/g"]}},
            groups_key: {"g": {"type": "definitiongroup", "definitions": {"m": {
                "format": "CloudEvents/1.0", "metadata": {"attributes": _cereg_attributes()},
                "schemaformat": "JsonSchema/draft-07", "schemaurl": f"#/{schema_key}/sg/schemas/reading"}}}},
            **_schemagroups(schema_key)}


def gen_message_catalog() -> dict[str, Any]:
    return {"endpoints": {"ep": {"protocol": "KAFKA", "messagegroups": ["#/messagegroups/g"]}},
            "messagegroups": {"g": {"definitions": {"m": {"format": "CloudEvents", "versions": [
                {"definition": {"attributes": {"type": {"value": "com.example.reading.v0", "required": True}},
                                "dataschema": {"schema": {"type": "string"}, "schematype": "JsonSchema"}}},
                {"definition": {"attributes": ATTRIBUTES,
                                "dataschema": {"schema": SCHEMA, "schematype": "JsonSchema/draft-07"}}}]}}}}}


def gen_discovery() -> dict[str, Any]:
    return {"endpoints": {"ep": {"config": {"protocol": "Kafka"}, "groups": ["#/groups/g"]}},
            "groups": {"g": {"definitions": {"m": {
                "ownergroup": "g", "format": "CloudEvents/1.0", "metadata": {"attributes": ATTRIBUTES},
                "schemaformat": "JsonSchema/draft-07", "schema": SCHEMA}}}}}


GENERATIONS = {
    "1.0": (gen_1_0(), "registry.xreg.json"),
    "1.0 inline, no specversion": (gen_1_0_inline_schema_no_specversion(), "registry.xreg.json"),
    "1.0 yaml": (gen_1_0(), "registry.xreg.yaml"),
    "0.5-wip late": (gen_0_5_late(), "registry.xreg.json"),
    "0.5-wip early flat": (gen_0_5_early(False), "registry.xreg.json"),
    "0.5-wip early attributes": (gen_0_5_early(True), "registry.xreg.json"),
    "0.5 definitionGroups .cereg": (gen_cereg(True), "registry.cereg"),
    "0.4 definitiongroups .cereg.yaml": (gen_cereg(False), "registry.cereg.yaml"),
    "Message Catalog 0.1": (gen_message_catalog(), "catalog.json"),
    "Discovery": (gen_discovery(), "discovery.json"),
}

BODY = '{"temperature": 21.5}'
RECORDS = [
    (kafka_ce(TYPE, extra_headers={"ce_source": "/devices/d1"}, body=BODY), ok("g", "m")),
    (kafka_ce(TYPE, extra_headers={"ce_source": "/devices/d1", "ce_unit": "C"}, body=BODY), ok("g", "m")),
    (kafka_ce(TYPE, extra_headers={"ce_source": "/rooms/d1"}, body=BODY),
     bad("g", "m", ("envelopemetadata.source", "template"))),
    (kafka_ce(TYPE, extra_headers={"ce_source": "/devices/d1", "ce_unit": "F"}, body=BODY),
     bad("g", "m", ("envelopemetadata.unit", "value"))),
    (kafka_ce(TYPE, extra_headers={"ce_source": "/devices/d1"}, body='{"temperature": "hot"}'),
     bad("g", "m", ("dataschema:/temperature", "schema"))),
    (kafka_ce(TYPE, extra_headers={"ce_source": "/devices/d1"}, body='{"temperature"'),
     bad("g", "m", ("dataschema:", "decode"))),
    (kafka_ce(TYPE, omit=["ce_source"], body=BODY), bad("g", "m", ("envelopemetadata.source", "required"))),
    (kafka_ce("com.example.other", extra_headers={"ce_source": "/devices/d1"}, body=BODY),
     ("nonconformant", None, None, [("envelopemetadata.type", "no-match")])),
]


@pytest.mark.parametrize("generation", list(GENERATIONS))
def test_generation_gives_the_same_verdicts(tmp_path: Path, generation: str) -> None:
    doc, name = GENERATIONS[generation]
    loaded = load_doc(tmp_path, doc, name)
    assert loaded.errors == [], [str(d) for d in loaded.errors]
    assert list(loaded.ruleset.endpoints) == ["ep"]
    for record, expected in RECORDS:
        assert shape(loaded.judge(record)) == expected, (generation, record["headers"])


@pytest.mark.parametrize(("generation", "label"), [
    ("1.0", "1.0"), ("0.5-wip early flat", "0.5-wip early"), ("0.5 definitionGroups .cereg", "0.4/0.5"),
    ("Message Catalog 0.1", "Message Catalog 0.1"), ("Discovery", "Discovery")])
def test_the_shape_decides_the_generation(generation: str, label: str) -> None:
    doc, _ = GENERATIONS[generation]
    normalized, problems = normalize_document(copy.deepcopy(doc), "x.json")
    assert problems == []
    assert normalized.generation.startswith(label)


def test_a_wrong_specversion_label_does_not_matter(tmp_path: Path) -> None:
    doc = gen_cereg(True)
    doc["specversion"] = "1.0-rc4"   # as in spec/core/samples/contoso-crm.cereg: labelled 1.0, shaped 0.5
    loaded = load_doc(tmp_path, doc, "contoso.cereg")
    assert loaded.errors == []
    for record, expected in RECORDS[:3]:
        assert shape(loaded.judge(record)) == expected


def test_message_catalog_latest_version_wins_with_a_versions_map(tmp_path: Path) -> None:
    doc = gen_message_catalog()
    versions = doc["messagegroups"]["g"]["definitions"]["m"]["versions"]
    doc["messagegroups"]["g"]["definitions"]["m"]["versions"] = {"10": versions[1], "9": versions[0]}
    loaded = load_doc(tmp_path, doc)
    assert shape(loaded.judge(RECORDS[0][0])) == ok("g", "m")
    assert [v.rule.value for v in loaded.judge(kafka_ce("com.example.reading.v0", body='"x"')).violations] == \
        ["no-match"]


def test_documents_of_different_generations_merge_into_one_registry(tmp_path: Path) -> None:
    # an old .cereg group referenced by a 1.0 endpoint in another file, by xid
    cereg = gen_cereg(True)
    del cereg["endpoints"]
    endpoint = {"endpoints": {"ep": {"protocol": "KAFKA", "messagegroups": ["/messagegroups/g"]}}}
    loaded = load_files(tmp_path, {"a/groups.cereg": cereg, "b/endpoint.xreg.json": endpoint})
    assert loaded.errors == []
    for record, expected in RECORDS:
        assert shape(loaded.judge(record)) == expected


# --- name tolerances ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("written", "record_protocol"), [
    ("KAFKA", "KAFKA"), ("Kafka", "KAFKA"), ("kafka", "KAFKA"), ("KAFKA/3.0", "KAFKA"),
    ("AMQP", "AMQP/1.0"), ("AMQP/1.0", "AMQP/1.0"), ("amqp/1.0", "AMQP/1.0"),
    ("MQTT", "MQTT/5.0"), ("MQTT/5.0", "MQTT/5.0"), ("mqtt/3.1.1", "MQTT/3.1.1"),
    ("NATS", "NATS"), ("NATS/1.0.0", "NATS"), ("nats", "NATS"),
    ("HTTP", "HTTP"), ("HTTP/1.1", "HTTP"), ("http/2", "HTTP"),
])
def test_protocol_spellings(tmp_path: Path, written: str, record_protocol: str) -> None:
    # the message is bound to `written`; a message on another protocol family must not see it
    message = {"envelope": CE, "envelopemetadata": {"type": {"value": "t"}}, "protocol": written}
    loaded = load_doc(tmp_path, registry(written, {"m": message}))
    assert loaded.errors == [] and not [w for w in loaded.warnings if w.code == "protocol"]
    attrs = [["specversion", "1.0"], ["id", "1"], ["source", "/s"], ["type", "t"]]
    records = {
        "KAFKA": {"headers": {f"ce_{k}": v for k, v in attrs}},
        "AMQP/1.0": {"application-properties": {f"cloudEvents_{k}": v for k, v in attrs}},
        "MQTT/5.0": {"user_properties": attrs},
        "MQTT/3.1.1": {"body": '{"specversion": "1.0", "id": "1", "source": "/s", "type": "t"}'},
        "NATS": {"headers": {f"ce-{k}": v for k, v in attrs}},
        "HTTP": {"headers": {f"ce-{k}": v for k, v in attrs}},
    }
    assert shape(loaded.judge({"protocol": record_protocol, **records[record_protocol]})) == ok("g", "m")
    other = "NATS" if record_protocol != "NATS" else "KAFKA"
    verdict = loaded.judge({"protocol": other, **records[other]})
    assert [v.rule.value for v in verdict.violations] == ["no-match"]


# silent point (assumed): `draft-07`/`Draft-07` of section 1 are spellings of the version part; a bare
# `draft-07` as the whole format name is not read as JSON Schema (no document in the wild writes it)
@pytest.mark.parametrize("fmt", ["JsonSchema/draft-07", "JSONSchema/draft-07", "JSONSchema/Draft-07", "JSON",
                                 "JsonSchema", "JSONSchema", "jsonschema/DRAFT-07"])
def test_json_schema_format_aliases(tmp_path: Path, fmt: str) -> None:
    loaded = load_doc(tmp_path, registry("KAFKA", {"m": ce_message("t", dataschemaformat=fmt, dataschema=SCHEMA)}))
    assert loaded.errors == []
    assert not [w for w in loaded.warnings if w.code == "schema-format"], [str(w) for w in loaded.warnings]
    assert shape(loaded.judge(kafka_ce("t", body='{"temperature": "x"}'))) == \
        bad("g", "m", ("dataschema:/temperature", "schema"))


@pytest.mark.parametrize(("fmt", "schema", "good", "wrong"), [
    ("Avro", "avro", b"\x02", b"\x02\x00"),
    ("AVRO/1.11.2", "avro", b"\x02", b"\x02\x00"),
    ("Protobuf/3", "proto", b"\x08\x01", b"\x0a\x05"),
    ("Proto/3", "proto", b"\x08\x01", b"\x0a\x05"),
    ("XSD", "xsd", b"<r/>", b"<r>"),
    ("XMLSchema/1.1", "xsd", b"<r/>", b"<r>"),
])
def test_other_schema_format_aliases(tmp_path: Path, fmt: str, schema: str, good: bytes, wrong: bytes) -> None:
    from tests.unit.builders import b64

    schemas = {"avro": {"type": "record", "name": "R", "fields": [{"name": "b", "type": "boolean"}]},
               "proto": 'syntax = "proto3";\nmessage R { int32 a = 1; }\n',
               "xsd": '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:element name="r"/></xs:schema>'}
    loaded = load_doc(tmp_path, registry("KAFKA", {"m": ce_message("t", dataschemaformat=fmt,
                                                                   dataschema=schemas[schema])}))
    assert loaded.errors == [] and not [w for w in loaded.warnings if w.code == "schema-format"]
    assert shape(loaded.judge(kafka_ce("t", body_base64=b64(good)))) == ok("g", "m")
    assert shape(loaded.judge(kafka_ce("t", body_base64=b64(wrong)))) == bad("g", "m", ("dataschema:", "decode"))


def test_envelopemetadata_with_and_without_attributes_wrapper(tmp_path: Path) -> None:
    flat = {"envelope": CE, "envelopemetadata": {"type": {"value": "t"}, "x": {"required": True}}}
    wrapped = {"envelope": CE, "envelopemetadata": {"attributes": {"type": {"value": "t"}, "x": {"required": True}}}}
    for name, message in (("flat", flat), ("wrapped", wrapped)):
        loaded = load_doc(tmp_path / name, registry("KAFKA", {"m": message}))
        assert shape(loaded.judge(kafka_ce("t", extra_headers={"ce_x": "1"}))) == ok("g", "m"), name
        assert shape(loaded.judge(kafka_ce("t"))) == bad("g", "m", ("envelopemetadata.x", "required")), name


def test_value_required_wrappers_and_plain_values(tmp_path: Path) -> None:
    # old `{"value": .., "required": ..}` wrappers and 1.0 plain values mean the same constraint
    wrapped = {"protocol": "MQTT/5.0", "protocoloptions": {
        "topic-name": {"value": "a/b", "required": True}, "qos": {"value": 1, "required": True},
        "user-properties": [{"name": "k", "value": "v", "required": True}]}}
    plain = {"protocol": "MQTT/5.0", "protocoloptions": {
        "topic_name": "a/b", "qos": 1, "user_properties": [{"name": "k", "value": "v"}]}}
    rec = {"protocol": "MQTT/5.0", "topic_name": "a/b", "qos": 1, "user_properties": [["k", "v"]]}
    for name, message in (("wrapped", wrapped), ("plain", plain)):
        loaded = load_doc(tmp_path / name, registry("MQTT/5.0", {"m": message}))
        assert shape(loaded.judge(rec)) == ok("g", "m"), name
        assert shape(loaded.judge({**rec, "qos": 0})) == bad("g", "m", ("protocoloptions.qos", "value")), name
        assert shape(loaded.judge({**rec, "user_properties": []})) == \
            bad("g", "m", ("protocoloptions.user_properties.k", "required")), name
        assert [v.rule.value for v in loaded.judge({**rec, "topic_name": "a/c"}).violations] == ["no-match"], name


def test_unknown_protocol_is_a_warning_not_an_error(tmp_path: Path) -> None:
    message = {"envelope": CE, "envelopemetadata": {"type": {"value": "t"}}, "protocol": "CARRIER-PIGEON"}
    loaded = load_doc(tmp_path, registry(None, {"m": message}))
    assert loaded.errors == []
    assert "protocol" in loaded.codes(Severity.WARNING)


def test_one_bad_document_does_not_stop_the_others(tmp_path: Path) -> None:
    loaded = load_files(tmp_path, {"good.xreg.json": registry("KAFKA", {"m": ce_message("t")}),
                                   "broken.xreg.json": '{"messagegroups": {,}}'})
    assert [d.code for d in loaded.snapshot.errors] == ["parse"]
    error = loaded.snapshot.errors[0]
    assert error.file.endswith("broken.xreg.json") and error.line == 1 and error.column is not None
    assert shape(loaded.judge(kafka_ce("t"))) == ok("g", "m")


def test_one_bad_message_does_not_stop_the_others(tmp_path: Path) -> None:
    loaded = load_doc(tmp_path, registry("KAFKA", {"bad": "not an object", "m": ce_message("t")}))
    assert [d.code for d in loaded.snapshot.errors] == ["shape"]
    assert loaded.snapshot.errors[0].pointer == "/messagegroups/g/messages/bad"
    assert shape(loaded.judge(kafka_ce("t"))) == ok("g", "m")


def test_discovery_top_level_definitions_with_ownergroup(tmp_path: Path) -> None:
    doc = {"endpoints": {"ep": {"config": {"protocol": "Kafka"}, "groups": ["#/groups/g"]}},
           "groups": {"g": {"id": "g"}},
           "definitions": {"m": {"ownergroup": "g", "format": "CloudEvents/1.0",
                                 "metadata": {"attributes": ATTRIBUTES}, "schemaformat": "JsonSchema/draft-07",
                                 "schema": SCHEMA}}}
    loaded = load_doc(tmp_path, doc, "discovery.json")
    for record, expected in RECORDS:
        assert shape(loaded.judge(record)) == expected


@pytest.mark.parametrize(("key", "metadata"), [
    ("envelopemetadata", {"type": {"value": "t"}}),
    ("envelopemetadata", {"attributes": {"type": {"value": "t"}}}),
    ("envelopemetadata", {"attributes": {"type": {"value": "t", "required": True}, "name": {"type": "string"}}}),
    ("metadata", {"type": {"value": "t"}}),
    ("metadata", {"attributes": {"type": {"value": "t"}}}),
])
def test_wrapper_declaring_only_the_type(tmp_path: Path, key: str, metadata: dict[str, Any]) -> None:
    # a wrapper whose only attribute is `type` must not be mistaken for the definition of an attribute
    # named `attributes` (fixed: the `type` constraint was dropped and every message conformed)
    message = {"envelope" if key == "envelopemetadata" else "format": CE, key: metadata}
    loaded = load_doc(tmp_path, registry("KAFKA", {"m": message}))
    assert shape(loaded.judge(kafka_ce("t"))) == ok("g", "m")
    assert [v.rule.value for v in loaded.judge(kafka_ce("u")).violations] == ["no-match"]


def test_extension_attribute_named_attributes_stays_a_definition(tmp_path: Path) -> None:
    message = {"envelope": CE, "envelopemetadata": {"type": {"value": "t"},
                                                    "attributes": {"type": "string", "required": True}}}
    loaded = load_doc(tmp_path, registry("KAFKA", {"m": message}))
    assert shape(loaded.judge(kafka_ce("t", extra_headers={"ce_attributes": "x"}))) == ok("g", "m")
    assert shape(loaded.judge(kafka_ce("t"))) == bad("g", "m", ("envelopemetadata.attributes", "required"))
