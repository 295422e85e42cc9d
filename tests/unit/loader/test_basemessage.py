"""validation rule 2: `basemessage` / `basemessageurl` / `basemessageuri` chains are followed to their root and
deep-merged back down (objects key by key, a scalar replaces a complex value); a cycle is an error for every
message on it and they are left out; a dangling base is a warning and the message is used as written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.errors import Severity
from gateway.loader.merge import deep_merge
from tests.unit.builders import CE, bad, kafka_ce, load_doc, load_files, ok, registry, shape


def test_deep_merge_rules() -> None:
    base = {"a": {"x": 1, "y": {"z": 2}}, "b": {"k": 1}, "c": 1, "keep": True}
    overlay = {"a": {"y": {"w": 3}}, "b": "scalar", "c": {"now": "object"}}
    assert deep_merge(base, overlay) == {"a": {"x": 1, "y": {"z": 2, "w": 3}}, "b": "scalar",
                                         "c": {"now": "object"}, "keep": True}
    assert deep_merge({"l": [1, 2]}, {"l": [3]}) == {"l": [3]}


BASE = {"envelope": CE, "envelopemetadata": {
    "type": {"value": "t", "required": True},
    "source": {"type": "uritemplate", "value": "/devices/{device}", "required": True},
    "region": {"type": "string", "value": "eu", "required": True}},
    "protocol": "KAFKA", "protocoloptions": {"topic": "telemetry", "key": {"type": "string", "required": True},
                                             "headers": {"tenant": {"value": "acme", "required": True}}}}


def _record(**headers: Any) -> dict[str, Any]:
    extra = {"ce_source": "/devices/d1", "ce_region": "eu", "tenant": "acme"}
    extra.update(headers)
    fields = {"topic": "telemetry", "key": "k1"}
    return kafka_ce("t", extra_headers={k: v for k, v in extra.items() if v is not None}, **fields)


@pytest.mark.parametrize(("key", "ref"), [
    ("basemessage", "/messagegroups/g/messages/base"),
    ("basemessageurl", "#/messagegroups/g/messages/base"),
    ("basemessageuri", "/messagegroups/g/messages/base"),
])
def test_every_basemessage_spelling_inherits(tmp_path: Path, key: str, ref: str) -> None:
    # the derived message says nothing itself but its type (in an endpoint of its own, so the base is not a candidate)
    derived = {key: ref}
    doc = registry("KAFKA", {"base": BASE}, endpoint="all")
    doc["endpoints"]["ep"] = {"protocol": "KAFKA", "messages": {"derived": derived}}
    loaded = load_doc(tmp_path, doc)
    assert loaded.errors == []
    assert shape(loaded.judge(_record(), "ep")) == ok("ep", "derived")
    assert shape(loaded.judge(_record(ce_region="us"), "ep")) == bad("ep", "derived", ("envelopemetadata.region", "value"))
    assert shape(loaded.judge(_record(tenant=None), "ep")) == \
        bad("ep", "derived", ("protocoloptions.headers.tenant", "required"))


def test_object_merge_keeps_the_base_keys(tmp_path: Path) -> None:
    # derived changes only the value of `region`; `required` and `type` of the base stay
    derived = {"basemessage": "/messagegroups/g/messages/base",
               "envelopemetadata": {"type": {"value": "d"}, "region": {"value": "us"}}}
    loaded = load_doc(tmp_path, registry("KAFKA", {"base": BASE, "derived": derived}))
    assert loaded.errors == []
    good = _record(ce_region="us")
    good["headers"]["ce_type"] = "d"
    assert shape(loaded.judge(good)) == ok("g", "derived")
    good["headers"].pop("ce_region")
    assert shape(loaded.judge(good)) == bad("g", "derived", ("envelopemetadata.region", "required"))
    # the base itself is unchanged
    assert shape(loaded.judge(_record())) == ok("g", "base")


def test_scalar_replaces_a_complex_value(tmp_path: Path) -> None:
    derived = {"basemessage": "/messagegroups/g/messages/base",
               "envelopemetadata": {"type": {"value": "d"}},
               "protocoloptions": {"key": "fixed-key", "headers": {"tenant": {"value": "other"}}}}
    loaded = load_doc(tmp_path, registry("KAFKA", {"base": BASE, "derived": derived}))
    record = _record(tenant="other")
    record["headers"]["ce_type"] = "d"
    record["key"] = "fixed-key"
    assert shape(loaded.judge(record)) == ok("g", "derived")
    record["key"] = "k1"
    assert shape(loaded.judge(record)) == bad("g", "derived", ("protocoloptions.key", "value"))


def test_complex_value_replaces_a_scalar(tmp_path: Path) -> None:
    # base: plain `topic` (required, must match); derived: an object without `required`
    derived = {"basemessage": "/messagegroups/g/messages/base", "envelopemetadata": {"type": {"value": "d"}},
               "protocoloptions": {"topic": {"value": "other"}}}
    loaded = load_doc(tmp_path, registry("KAFKA", {"base": BASE, "derived": derived}))
    record = _record()
    record["headers"]["ce_type"] = "d"
    del record["topic"]
    assert shape(loaded.judge(record)) == ok("g", "derived")
    record["topic"] = "telemetry"
    assert shape(loaded.judge(record)) == bad("g", "derived", ("protocoloptions.topic", "value"))


def test_chain_is_followed_to_its_root(tmp_path: Path) -> None:
    root = {"envelope": CE, "envelopemetadata": {"type": {"value": "root"}, "a": {"value": "1", "required": True}}}
    middle = {"basemessage": "/messagegroups/g/messages/root",
              "envelopemetadata": {"type": {"value": "middle"}, "b": {"value": "2", "required": True}}}
    leaf = {"basemessage": "/messagegroups/g/messages/middle",
            "envelopemetadata": {"type": {"value": "leaf"}, "a": {"value": "9"}}}
    loaded = load_doc(tmp_path, registry("KAFKA", {"root": root, "middle": middle, "leaf": leaf}))
    assert loaded.errors == []
    assert shape(loaded.judge(kafka_ce("leaf", extra_headers={"ce_a": "9", "ce_b": "2"}))) == ok("g", "leaf")
    assert shape(loaded.judge(kafka_ce("leaf", extra_headers={"ce_a": "1", "ce_b": "2"}))) == \
        bad("g", "leaf", ("envelopemetadata.a", "value"))
    assert shape(loaded.judge(kafka_ce("leaf", extra_headers={"ce_a": "9"}))) == \
        bad("g", "leaf", ("envelopemetadata.b", "required"))
    assert shape(loaded.judge(kafka_ce("middle", extra_headers={"ce_a": "1", "ce_b": "2"}))) == ok("g", "middle")


def test_base_in_another_file(tmp_path: Path) -> None:
    base = {"messagegroups": {"bases": {"messages": {"base": BASE}}}}
    derived = registry("KAFKA", {"derived": {"basemessageuri": "../common/base.json#/messagegroups/bases/messages/base",
                                             "envelopemetadata": {"type": {"value": "d"}}}})
    loaded = load_files(tmp_path, {"common/base.json": base, "app/registry.xreg.json": derived})
    assert loaded.errors == [] and loaded.warnings == []
    record = _record()
    record["headers"]["ce_type"] = "d"
    assert shape(loaded.judge(record)) == ok("g", "derived")
    record["headers"]["ce_region"] = "us"
    assert shape(loaded.judge(record)) == bad("g", "derived", ("envelopemetadata.region", "value"))


def test_base_file_outside_the_loaded_roots_is_not_read(tmp_path: Path) -> None:
    # silent point (assumed): a relative reference is only followed inside the directories given to the
    # loader; `../common/base.json` from a loaded `app/` is then a dangling base (a warning)
    base = {"messagegroups": {"bases": {"messages": {"base": BASE}}}}
    derived = registry("KAFKA", {"derived": {"basemessageuri": "../common/base.json#/messagegroups/bases/messages/base",
                                             "envelopemetadata": {"type": {"value": "d"}}}})
    loaded = load_files(tmp_path, {"common/base.json": base, "app/registry.xreg.json": derived}, ["app"])
    assert loaded.errors == []
    assert [d.code for d in loaded.warnings] == ["dangling-basemessage"]
    assert shape(loaded.judge(kafka_ce("d"))) == ok("g", "derived")


def test_base_schema_link_is_inherited(tmp_path: Path) -> None:
    schema_doc = {"sg": {"schemas": {"s": {"format": "JsonSchema/draft-07",
                                           "versions": {"1": {"schema": {"type": "array"}}}}}}}
    base = {"envelope": CE, "envelopemetadata": {"type": {"value": "b"}}, "dataschemaformat": "JsonSchema/draft-07",
            "dataschemauri": "#/schemagroups/sg/schemas/s"}
    derived = {"basemessage": "#/messagegroups/g/messages/base", "envelopemetadata": {"type": {"value": "d"}}}
    loaded = load_doc(tmp_path, registry("KAFKA", {"base": base, "derived": derived}, schemagroups=schema_doc))
    assert loaded.errors == []
    assert shape(loaded.judge(kafka_ce("d", body="[]"))) == ok("g", "derived")
    assert shape(loaded.judge(kafka_ce("d", body="{}"))) == bad("g", "derived", ("dataschema:", "schema"))


# --- cycles -------------------------------------------------------------------------------------------


def test_cycle_is_an_error_for_every_message_on_it(tmp_path: Path) -> None:
    messages = {
        "a": {"basemessage": "/messagegroups/g/messages/b", "envelope": CE, "envelopemetadata": {"type": {"value": "a"}}},
        "b": {"basemessage": "/messagegroups/g/messages/a", "envelope": CE, "envelopemetadata": {"type": {"value": "b"}}},
        "self": {"basemessage": "#/messagegroups/g/messages/self", "envelope": CE,
                 "envelopemetadata": {"type": {"value": "self"}}},
        "fine": {"envelope": CE, "envelopemetadata": {"type": {"value": "fine"}}},
    }
    loaded = load_doc(tmp_path, registry("KAFKA", messages))
    cycles = [d for d in loaded.snapshot.errors if d.code == "basemessage-cycle"]
    assert sorted(d.pointer for d in cycles) == ["/messagegroups/g/messages/a/basemessage",
                                                 "/messagegroups/g/messages/b/basemessage",
                                                 "/messagegroups/g/messages/self/basemessage"]
    # the messages on the cycle are left out; the others load
    assert sorted(m for _, m in loaded.snapshot.registry.messages) == ["fine"]
    for type_value in ("a", "b", "self"):
        assert [v.rule.value for v in loaded.judge(kafka_ce(type_value)).violations] == ["no-match"]
    assert shape(loaded.judge(kafka_ce("fine"))) == ok("g", "fine")


def test_message_leading_into_a_cycle_is_left_out(tmp_path: Path) -> None:
    # silent point (assumed): a message whose chain runs into a cycle (not on it) has no root either
    messages = {
        "a": {"basemessage": "/messagegroups/g/messages/b", "envelope": CE, "envelopemetadata": {"type": {"value": "a"}}},
        "b": {"basemessage": "/messagegroups/g/messages/a", "envelope": CE, "envelopemetadata": {"type": {"value": "b"}}},
        "c": {"basemessage": "/messagegroups/g/messages/a", "envelope": CE, "envelopemetadata": {"type": {"value": "c"}}},
    }
    loaded = load_doc(tmp_path, registry("KAFKA", messages))
    assert "/messagegroups/g/messages/c/basemessage" in [d.pointer for d in loaded.snapshot.errors]
    assert not loaded.snapshot.registry.messages


# --- dangling bases -------------------------------------------------------------------------------------


@pytest.mark.parametrize("ref", ["/messagegroups/g/messages/nope", "#/messagegroups/missing/messages/x",
                                 "other.json#/messagegroups/g/messages/base", "https://example.com/base.json"])
def test_dangling_base_is_a_warning_and_the_message_is_used_as_written(tmp_path: Path, ref: str) -> None:
    derived = {"basemessage": ref, "envelope": CE, "envelopemetadata": {"type": {"value": "t"},
                                                                        "x": {"required": True}}}
    loaded = load_doc(tmp_path, registry("KAFKA", {"derived": derived}))
    assert loaded.errors == []
    warnings = [d for d in loaded.warnings if d.code == "dangling-basemessage"]
    assert len(warnings) == 1 and warnings[0].severity is Severity.WARNING
    assert warnings[0].pointer == "/messagegroups/g/messages/derived/basemessage"
    assert shape(loaded.judge(kafka_ce("t", extra_headers={"ce_x": "1"}))) == ok("g", "derived")
    assert shape(loaded.judge(kafka_ce("t"))) == bad("g", "derived", ("envelopemetadata.x", "required"))
