"""validation rule 2 and 8: JSON pointer references, relative file references, xids across files, `:TypeName`
selectors, the default schema version, remote references (not fetched) and dangling references."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_writer

from gateway.errors import Severity
from gateway.loader.refs import entity_path, parse_ref, split_selector
from gateway.loader.versions import order_version_ids
from tests.unit.builders import b64, bad, ce_message, kafka_ce, load_doc, load_files, ok, registry, shape

SCHEMA = {"type": "object", "required": ["temperature"], "properties": {"temperature": {"type": "number"}}}
GOOD = '{"temperature": 1}'
WRONG = '{"temperature": "x"}'


def _schema_doc(schema: Any = SCHEMA, fmt: str = "JsonSchema/draft-07") -> dict[str, Any]:
    return {"schemagroups": {"sg": {"schemas": {"s": {"format": fmt, "versions": {"1": {"schema": schema}}}}}}}


def _assert_schema_applies(loaded: Any, type_value: str = "t", group: str = "g", message: str = "m") -> None:
    assert loaded.errors == [], [str(e) for e in loaded.errors]
    assert shape(loaded.judge(kafka_ce(type_value, body=GOOD))) == ok(group, message)
    assert shape(loaded.judge(kafka_ce(type_value, body=WRONG))) == \
        bad(group, message, ("dataschema:/temperature", "schema"))


# --- reference syntax ------------------------------------------------------------------------------


def test_parse_ref_kinds(tmp_path: Path) -> None:
    here = str(tmp_path / "dir" / "doc.json")
    local = parse_ref("#/schemagroups/g/schemas/s", here)
    assert local is not None and (local.kind, local.file, local.pointer) == ("local", here, "/schemagroups/g/schemas/s")
    rel = parse_ref("../other.json#/messagegroups/g", here)
    assert rel is not None and (rel.kind, rel.file, rel.pointer) == \
        ("local", str(tmp_path / "other.json"), "/messagegroups/g")
    xid = parse_ref("/schemagroups/g/schemas/s/versions/2", here)
    assert xid is not None and (xid.kind, xid.pointer) == ("xid", "/schemagroups/g/schemas/s/versions/2")
    remote = parse_ref("https://example.com/s.json", here)
    assert remote is not None and remote.kind == "remote"
    assert parse_ref("", here) is None


@pytest.mark.parametrize(("text", "head", "selector"), [
    ("#/schemagroups/g/schemas/s:Reading", "#/schemagroups/g/schemas/s", "Reading"),
    ("/schemagroups/g/schemas/s/versions/v1.0:ns.Payload", "/schemagroups/g/schemas/s/versions/v1.0", "ns.Payload"),
    ("#/schemagroups/g/schemas/s", "#/schemagroups/g/schemas/s", None),
    ("https://example.com/a:b", "https://example.com/a:b", None),
])
def test_type_name_selector(text: str, head: str, selector: str | None) -> None:
    assert split_selector(text) == (head, selector)


def test_entity_path_in_every_spelling() -> None:
    for pointer in ("/messagegroups/g/messages/m", "/definitionGroups/g/definitions/m", "/groups/g/definitions/m"):
        path = entity_path(pointer)
        assert path is not None and (path.collection, path.group, path.member) == ("messagegroups", "g", "m")
    path = entity_path("/schemagroups/g/schemas/s/versions/3")
    assert path is not None and (path.collection, path.member, path.version) == ("schemagroups", "s", "3")
    assert entity_path("/nothing/here") is None


# --- JSON pointers in the same document --------------------------------------------------------------


def test_json_pointer_schema_reference(tmp_path: Path) -> None:
    doc = registry("KAFKA", {"m": ce_message("t", dataschemaformat="JsonSchema/draft-07",
                                             dataschemauri="#/schemagroups/sg/schemas/s")}, **_kw(_schema_doc()))
    _assert_schema_applies(load_doc(tmp_path, doc))


def test_json_pointer_into_the_schema_document(tmp_path: Path) -> None:
    # the double fragment seen in the wild: `.../schemas/s#/definitions/Reading`
    container = {"definitions": {"Reading": SCHEMA, "Other": {"type": "string"}}}
    doc = registry("KAFKA", {"m": ce_message("t", dataschemaformat="JsonSchema/draft-07",
                                             dataschemauri="#/schemagroups/sg/schemas/s#/definitions/Reading")},
                   **_kw(_schema_doc(container)))
    _assert_schema_applies(load_doc(tmp_path, doc))


def test_version_pinned_reference(tmp_path: Path) -> None:
    schemas = {"schemagroups": {"sg": {"schemas": {"s": {"format": "JsonSchema/draft-07", "versions": {
        "1": {"schema": SCHEMA}, "2": {"schema": {"type": "string"}}}}}}}}
    doc = registry("KAFKA", {"m": ce_message("t", dataschemaformat="JsonSchema/draft-07",
                                             dataschemauri="#/schemagroups/sg/schemas/s/versions/1")}, **_kw(schemas))
    _assert_schema_applies(load_doc(tmp_path, doc))


def test_schema_format_taken_from_the_schema_when_the_message_names_none(tmp_path: Path) -> None:
    doc = registry("KAFKA", {"m": ce_message("t", dataschemauri="#/schemagroups/sg/schemas/s")}, **_kw(_schema_doc()))
    _assert_schema_applies(load_doc(tmp_path, doc))


def _kw(schema_doc: dict[str, Any]) -> dict[str, Any]:
    return {"schemagroups": schema_doc["schemagroups"]}


# --- relative file references ------------------------------------------------------------------------


def test_relative_file_reference(tmp_path: Path) -> None:
    doc = registry("KAFKA", {"m": ce_message("t", dataschemaformat="JsonSchema/draft-07",
                                             dataschemauri="schemas/readings.json#/schemagroups/sg/schemas/s")})
    files = {"main/registry.xreg.json": doc, "main/schemas/readings.json": _schema_doc()}
    _assert_schema_applies(load_files(tmp_path, files))


def test_relative_file_outside_the_load_set_is_loaded_from_within_the_roots(tmp_path: Path) -> None:
    # only the registry is named; the referenced file sits in the same directory tree
    doc = registry("KAFKA", {"m": ce_message("t", dataschemaformat="JsonSchema/draft-07",
                                             dataschemauri="schemas.data#/schemagroups/sg/schemas/s")})
    (tmp_path / "schemas.data").write_text(__import__("json").dumps(_schema_doc()))
    _assert_schema_applies(load_files(tmp_path, {"registry.xreg.json": doc}, ["registry.xreg.json"]))


def test_relative_reference_to_a_plain_schema_file(tmp_path: Path) -> None:
    doc = registry("KAFKA", {"m": ce_message("t", dataschemaformat="JsonSchema/draft-07",
                                             dataschemauri="reading.schema.json")})
    files = {"registry.xreg.json": doc, "reading.schema.json": SCHEMA}
    _assert_schema_applies(load_files(tmp_path, files, ["registry.xreg.json"]))


def test_relative_message_group_reference(tmp_path: Path) -> None:
    endpoint = {"endpoints": {"ep": {"protocol": "KAFKA", "messagegroups": ["../groups/g.json#/messagegroups/g"]}}}
    groups = {"messagegroups": {"g": {"messages": {"m": ce_message("t")}}}}
    loaded = load_files(tmp_path, {"endpoints/ep.json": endpoint, "groups/g.json": groups})
    assert loaded.errors == []
    assert shape(loaded.judge(kafka_ce("t"))) == ok("g", "m")


def test_relative_reference_is_relative_to_the_referring_document(tmp_path: Path) -> None:
    # the same relative name from two directories names two different files
    def message(type_value: str) -> dict[str, Any]:
        return ce_message(type_value, dataschemaformat="JsonSchema/draft-07", dataschemauri="s.json")

    files = {"a/reg.json": {"messagegroups": {"a": {"messages": {"m": message("ta")}}}},
             "a/s.json": SCHEMA,
             "b/reg.json": {"messagegroups": {"b": {"messages": {"m": message("tb")}}}},
             "b/s.json": {"type": "array"}}
    loaded = load_files(tmp_path, files, ["a/reg.json", "b/reg.json"])
    assert loaded.errors == []
    assert shape(loaded.judge(kafka_ce("ta", body=GOOD))) == ok("a", "m")
    assert shape(loaded.judge(kafka_ce("tb", body="[]"))) == ok("b", "m")
    assert shape(loaded.judge(kafka_ce("tb", body=GOOD))) == bad("b", "m", ("dataschema:", "schema"))


# --- xids across the whole registry -----------------------------------------------------------------


def test_xids_across_files(tmp_path: Path) -> None:
    endpoint = {"endpoints": {"ep": {"protocol": "KAFKA", "messagegroups": ["/messagegroups/g"]}}}
    groups = {"messagegroups": {"g": {"messages": {"m": ce_message(
        "t", dataschemaformat="JsonSchema/draft-07", dataschemauri="/schemagroups/sg/schemas/s")}}}}
    loaded = load_files(tmp_path, {"1-endpoint.json": endpoint, "2-groups.json": groups, "3-schemas.json": _schema_doc()})
    _assert_schema_applies(loaded)


def test_dataschemaxid(tmp_path: Path) -> None:
    groups = {"messagegroups": {"g": {"messages": {"m": ce_message(
        "t", dataschemaformat="JsonSchema/draft-07", dataschemaxid="/schemagroups/sg/schemas/s/versions/1")}}}}
    _assert_schema_applies(load_files(tmp_path, {"groups.json": groups, "schemas.json": _schema_doc()}))


def test_groups_with_the_same_id_in_two_files_pool_their_messages(tmp_path: Path) -> None:
    a = {"endpoints": {"ep": {"protocol": "KAFKA", "messagegroups": ["/messagegroups/g"]}},
         "messagegroups": {"g": {"messages": {"m1": ce_message("t1")}}}}
    b = {"messagegroups": {"g": {"messages": {"m2": ce_message("t2")}}}}
    loaded = load_files(tmp_path, {"a.json": a, "b.json": b})
    assert shape(loaded.judge(kafka_ce("t1"))) == ok("g", "m1")
    assert shape(loaded.judge(kafka_ce("t2"))) == ok("g", "m2")


# --- :TypeName selectors ----------------------------------------------------------------------------

AVRO_TYPES = [{"type": "record", "name": "A", "namespace": "ns", "fields": [{"name": "a", "type": "long"}]},
              {"type": "record", "name": "B", "namespace": "ns", "fields": [{"name": "b", "type": "boolean"}]}]


def _avro(schema: Any, datum: Any) -> bytes:
    out = io.BytesIO()
    schemaless_writer(out, parse_schema(schema), datum)
    return out.getvalue()


@pytest.mark.parametrize("ref", ["#/schemagroups/sg/schemas/s:ns.B", "/schemagroups/sg/schemas/s:ns.B",
                                 "/schemagroups/sg/schemas/s/versions/1:ns.B", "types.json#/schemagroups/sg/schemas/s:ns.B"])
def test_avro_type_selector_in_every_reference_style(tmp_path: Path, ref: str) -> None:
    schema_doc = _schema_doc(AVRO_TYPES, "Avro/1.11")
    doc = registry("KAFKA", {"m": ce_message("t", dataschemaformat="Avro/1.11", dataschemauri=ref)},
                   **({} if ref.startswith("types.json") else _kw(schema_doc)))
    files: dict[str, Any] = {"registry.xreg.json": doc}
    if ref.startswith("types.json"):
        files["types.json"] = schema_doc
    loaded = load_files(tmp_path, files)
    assert loaded.errors == []
    assert shape(loaded.judge(kafka_ce("t", body_base64=b64(_avro(AVRO_TYPES[1], {"b": True}))))) == ok("g", "m")
    # a B is one byte (boolean); an A with a multi-byte long leaves bytes over
    assert shape(loaded.judge(kafka_ce("t", body_base64=b64(_avro(AVRO_TYPES[0], {"a": 10**6}))))) == \
        bad("g", "m", ("dataschema:", "decode"))


# --- default version (section 8) ----------------------------------------------------------------------


def _versioned(versions: dict[str, Any], **schema_attrs: Any) -> dict[str, Any]:
    """Each version accepts exactly `{"v": <its id>}`."""
    body = {vid: {**extra, "schema": {"type": "object", "required": ["v"], "properties": {"v": {"const": vid}}}}
            for vid, extra in versions.items()}
    doc = registry("KAFKA", {"m": ce_message("t", dataschemaformat="JsonSchema/draft-07",
                                             dataschemauri="#/schemagroups/sg/schemas/s")})
    doc["schemagroups"] = {"sg": {"schemas": {"s": {"format": "JsonSchema/draft-07", **schema_attrs, "versions": body}}}}
    return doc


def _selected(tmp_path: Path, doc: dict[str, Any], ids: list[str]) -> list[str]:
    loaded = load_doc(tmp_path, doc)
    assert loaded.errors == []
    return [vid for vid in ids if loaded.judge(kafka_ce("t", body=f'{{"v": "{vid}"}}')).conformant]


@pytest.mark.parametrize(("ids", "default"), [
    (["1", "2", "10", "9"], "10"),               # integers compare as integers
    (["007", "10", "8"], "10"),
    (["1.9", "1.10", "1.2"], "1.10"),            # not all integers: lexical after left-padding
    (["v2", "v10", "v9"], "v10"),
    (["b", "aa"], "aa"),
    (["2", "a"], "a"),
])
def test_default_version_is_the_greatest_id(tmp_path: Path, ids: list[str], default: str) -> None:
    assert _selected(tmp_path, _versioned({i: {} for i in ids}), ids) == [default]


def test_order_version_ids() -> None:
    assert order_version_ids(["10", "9", "1"]) == ["1", "9", "10"]
    assert order_version_ids(["1.10", "1.9"]) == ["1.9", "1.10"]


def test_meta_defaultversionid_wins(tmp_path: Path) -> None:
    doc = _versioned({"1": {}, "2": {"isdefault": True}, "3": {}}, meta={"defaultversionid": "1"},
                     defaultversionid="3")
    assert _selected(tmp_path, doc, ["1", "2", "3"]) == ["1"]


def test_isdefault_flag_wins_over_defaultversionid(tmp_path: Path) -> None:
    doc = _versioned({"1": {}, "2": {"isdefault": True}, "3": {}}, defaultversionid="3")
    assert _selected(tmp_path, doc, ["1", "2", "3"]) == ["2"]


def test_defaultversionid_on_the_resource(tmp_path: Path) -> None:
    doc = _versioned({"1": {}, "2": {}, "3": {}}, defaultversionid="2")
    assert _selected(tmp_path, doc, ["1", "2", "3"]) == ["2"]


def test_schema_without_versions_is_its_own_version(tmp_path: Path) -> None:
    doc = registry("KAFKA", {"m": ce_message("t", dataschemaformat="JsonSchema/draft-07",
                                             dataschemauri="#/schemagroups/sg/schemas/s")})
    doc["schemagroups"] = {"sg": {"schemas": {"s": {"format": "JsonSchema/draft-07", "schema": SCHEMA}}}}
    _assert_schema_applies(load_doc(tmp_path, doc))


# --- what cannot be resolved ---------------------------------------------------------------------------


def test_dangling_schema_reference_is_an_error_and_the_message_is_left_out(tmp_path: Path) -> None:
    doc = registry("KAFKA", {"m": ce_message("t", dataschemaformat="JsonSchema/draft-07",
                                             dataschemauri="#/schemagroupsContoso/x/schemas/y"),
                             "ok": ce_message("u")})
    loaded = load_doc(tmp_path, doc)
    errors = loaded.snapshot.errors
    assert {d.code for d in errors} == {"dangling-ref", "message-left-out"}
    assert any(d.pointer == "/messagegroups/g/messages/m/dataschemauri" for d in errors)
    assert [v.rule.value for v in loaded.judge(kafka_ce("t", body=GOOD)).violations] == ["no-match"]
    assert shape(loaded.judge(kafka_ce("u"))) == ok("g", "ok")


def test_dangling_message_group_reference_is_left_out(tmp_path: Path) -> None:
    doc = registry("KAFKA", {"m": ce_message("t")})
    doc["endpoints"]["ep"]["messagegroups"].append("#/messagegroups/mygroup")
    loaded = load_doc(tmp_path, doc)
    assert [(d.code, d.pointer) for d in loaded.snapshot.errors] == [("dangling-ref", "/endpoints/ep/messagegroups/1")]
    assert shape(loaded.judge(kafka_ce("t"))) == ok("g", "m")


def test_missing_version_is_an_error(tmp_path: Path) -> None:
    doc = registry("KAFKA", {"m": ce_message("t", dataschemaformat="JsonSchema/draft-07",
                                             dataschemauri="#/schemagroups/sg/schemas/s/versions/9")},
                   **_kw(_schema_doc()))
    loaded = load_doc(tmp_path, doc)
    assert "dangling-ref" in loaded.codes(Severity.ERROR)


def test_remote_schema_is_not_fetched(tmp_path: Path) -> None:
    # section 2: http(s) references are only fetched when the operator allows it (off by default)
    doc = registry("KAFKA", {"m": ce_message("t", dataschemaformat="JsonSchema/draft-07",
                                             dataschemauri="https://example.com/schemas/reading.json")})
    loaded = load_doc(tmp_path, doc)
    assert loaded.errors == []
    assert "remote-schema" in loaded.codes(Severity.WARNING)
    assert shape(loaded.judge(kafka_ce("t", body=WRONG))) == ok("g", "m")
