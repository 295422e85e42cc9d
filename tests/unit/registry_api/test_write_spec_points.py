"""Issue 34, items 3 and 4, each against the core spec's text: a child added moves its parent's `modifiedat`
(core/spec.md `modifiedat` Attribute: "adding or removing an entity from a nested xRegistry collection MUST
update the modifiedat value of the parent entity"); a request's `createdat`/`modifiedat` are used
(`createdat` Attribute: "If present in a write operation request, the value MUST override any existing value,
however a value of null MUST use the current date/time"; `modifiedat`: "If the request value is different
than the existing value, then the request value MUST be used"); metadata in the body with an `xRegistry-`
header is refused (http.md "Creating or Updating Entities": extra_xregistry_header); an attribute value of the
wrong type is `invalid_attribute` naming it (core/spec.md "invalid_attribute", model.md "Attribute Types");
one request shows one timestamp (`createdat`: "the same value ... for all entities created in the same
operation")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.unit.registry_api.writing import Gateway, message, with_gateway


def test_adding_a_child_moves_the_parents_modifiedat(tmp_path: Path) -> None:
    async def steps(gw: Gateway) -> None:
        status, _, _ = await gw.call("PUT", "/messagegroups/g", {"description": "G", "modifiedat": "2020-01-01T00:00:00Z"})
        assert status == 201
        _, _, before = await gw.call("GET", "/messagegroups/g")
        assert before["modifiedat"] == "2020-01-01T00:00:00Z"
        status, _, _ = await gw.call("POST", "/messagegroups/g/messages", {"m": message("com.example.m")})
        assert status == 200
        _, _, after = await gw.call("GET", "/messagegroups/g")
        assert after["epoch"] == before["epoch"] + 1 and after["modifiedat"] > before["modifiedat"]
    with_gateway(tmp_path, steps)


def test_the_requests_timestamps_are_used(tmp_path: Path) -> None:
    async def steps(gw: Gateway) -> None:
        status, _, body = await gw.call("PUT", "/messagegroups/t", {"createdat": "2021-02-03T04:05:06Z",
                                                                    "modifiedat": "2022-02-03T04:05:06Z"})
        assert status == 201
        assert (body["createdat"], body["modifiedat"]) == ("2021-02-03T04:05:06Z", "2022-02-03T04:05:06Z")
        status, _, patched = await gw.call("PATCH", "/messagegroups/t", {"description": "x"})
        assert patched["createdat"] == "2021-02-03T04:05:06Z"  # absent: kept
        assert patched["modifiedat"] > "2022-02-03T04:05:06Z"  # absent: now
        status, _, reset = await gw.call("PATCH", "/messagegroups/t", {"createdat": None})
        assert reset["createdat"] > "2021-02-03T04:05:06Z"  # null: now
        status, _, bad = await gw.call("PATCH", "/messagegroups/t", {"createdat": "yesterday"})
        assert status == 400 and bad["type"].endswith("invalid_attribute")
    with_gateway(tmp_path, steps)


def test_metadata_in_the_body_with_an_xregistry_header_is_refused(tmp_path: Path) -> None:
    async def steps(gw: Gateway) -> None:
        status, _, body = await gw.call("PUT", "/schemagroups/sg/schemas/s$details",
                                        {"format": "JsonSchema/draft-07", "schema": {"type": "object"}},
                                        headers={"xRegistry-name": "S"})
        assert status == 400 and body["type"].endswith("http.md#extra_xregistry_header")
        assert body["args"] == {"name": "xRegistry-name", "error_detail": "the metadata is in the body"}
        status, _, _ = await gw.call("GET", "/schemagroups/sg")
        assert status == 404  # nothing was written
    with_gateway(tmp_path, steps)


def test_lint_warns_when_a_message_has_both_dataschema_and_dataschemauri(tmp_path: Path) -> None:
    """message spec `dataschema`: "Mutually exclusive with the `dataschemauri` attribute" (issue 34, item 5)."""
    from tests.unit.builders import ce_message, load_doc, registry

    both = ce_message("t", dataschemaformat="JsonSchema/draft-07", dataschema={"type": "object"},
                      dataschemauri="#/schemagroups/s/schemas/x")
    loaded = load_doc(tmp_path, registry(None, {"m": both}))
    assert "exclusive-attributes" in [w.code for w in loaded.warnings] and not loaded.errors


BAD_VALUES: list[tuple[str, str, Any, str, str]] = [
    # (method, path, body, attribute the error names, where its detail points)
    ("PUT", "/messagegroups/g", {"name": 5}, "name", "name must be a string, found 5"),
    ("PUT", "/messagegroups/g", {"labels": {"team": 1}}, "labels", "labels.team must be a string"),
    ("PUT", "/messagegroups/g", {"deprecated": {"effective": "soon"}}, "deprecated",
     "deprecated.effective must be an RFC 3339 timestamp"),
    ("PUT", "/endpoints/e", {"usage": "producer"}, "usage", "usage must be a JSON array"),
    ("PUT", "/messagegroups/g/messages/m", {**message("com.example.m"), "protocoloptions": "x"},
     "protocoloptions", "protocoloptions must be a JSON object"),
    ("PUT", "/schemagroups/sg/schemas/s/versions/1$details", {"format": ["JsonSchema"], "schema": {}}, "format",
     "format must be a string"),
    ("PATCH", "/schemagroups/sg/schemas/s/meta", {"defaultversionsticky": "yes"}, "defaultversionsticky",
     "defaultversionsticky must be a boolean"),
    ("PUT", "/messagegroups/g", {"modifiedat": 20240101}, "modifiedat", "modifiedat must be an RFC 3339 timestamp"),
]


def test_an_attribute_value_of_the_wrong_type_is_invalid_attribute(tmp_path: Path) -> None:
    async def steps(gw: Gateway) -> None:
        status, _, _ = await gw.call("PUT", "/schemagroups/sg/schemas/s/versions/1$details",
                                     {"format": "JsonSchema/draft-07", "schema": {"type": "object"}})
        assert status == 201
        for method, path, body, name, detail in BAD_VALUES:
            status, _, answer = await gw.call(method, path, body)
            assert status == 400, (path, body, answer)
            assert answer["type"] == "https://github.com/xregistry/spec/blob/main/core/spec.md#invalid_attribute"
            assert answer["args"]["name"] == name and answer["args"]["error_detail"].startswith(detail), answer
            assert answer["title"].startswith(f'The attribute "{name}" for "{answer["subject"]}" is not valid: ')
        for path in ("/messagegroups/g", "/endpoints/e"):
            status, _, _ = await gw.call("GET", path)
            assert status == 404, path  # nothing was written
        _, _, meta = await gw.call("GET", "/schemagroups/sg/schemas/s/meta")
        assert meta["epoch"] == 1
        # extension attributes take any value; a value of the right type is written
        status, _, group = await gw.call("PUT", "/messagegroups/g", {"name": "G", "labels": {"team": "a"},
                                                                     "xcost": 5})
        assert status == 201 and (group["name"], group["labels"], group["xcost"]) == ("G", {"team": "a"}, 5)
    with_gateway(tmp_path, steps)


def test_one_request_shows_one_timestamp(tmp_path: Path) -> None:
    async def steps(gw: Gateway) -> None:
        status, _, _ = await gw.call("PUT", "/schemagroups/sg/schemas/s/versions/1$details",
                                     {"format": "JsonSchema/draft-07", "schema": {"type": "object"}})
        assert status == 201
        _, _, group = await gw.call("GET", "/schemagroups/sg")
        _, _, resource = await gw.call("GET", "/schemagroups/sg/schemas/s$details")
        _, _, meta = await gw.call("GET", "/schemagroups/sg/schemas/s/meta")
        _, _, version = await gw.call("GET", "/schemagroups/sg/schemas/s/versions/1$details")
        times = {(e["xid"], name): e[name] for e in (group, resource, meta, version)
                 for name in ("createdat", "modifiedat")}
        assert len(set(times.values())) == 1, times
    with_gateway(tmp_path, steps)


def test_meta_and_version_rules_of_the_core_spec(tmp_path: Path) -> None:
    """spec.md `defaultversionsticky` (maxversions 1: setdefaultversionsticky_false), "Versions" (a Resource
    keeps at least one), and server attributes a client sends back from a GET are ignored."""
    async def steps(gw: Gateway) -> None:
        status, _, _ = await gw.call("PUT", "/messagegroups/g/messages/m", message("com.example.m"))
        assert status == 201
        status, _, body = await gw.call("PATCH", "/messagegroups/g/messages/m/meta", {"defaultversionsticky": True})
        assert status == 400 and body["type"].endswith("spec.md#setdefaultversionsticky_false")
        status, _, _ = await gw.call("PUT", "/schemagroups/sg/schemas/s/versions/1$details",
                                     {"format": "JsonSchema/draft-07", "schema": {"type": "object"}})
        assert status == 201
        status, _, body = await gw.call("DELETE", "/schemagroups/sg/schemas/s/versions/1")
        assert status == 400 and "at least one Version" in body["title"]
        _, _, group = await gw.call("GET", "/messagegroups/g")
        sent_back = {**group, "self": "http://elsewhere/x", "xid": "/other", "messagesurl": "http://elsewhere/m",
                     "messagescount": 99, "description": "changed"}
        status, _, body = await gw.call("PUT", "/messagegroups/g", sent_back)
        assert status == 200 and body["description"] == "changed" and body["epoch"] == group["epoch"] + 1
        assert (body["self"], body["xid"], body["messagescount"]) == (group["self"], "/messagegroups/g", 1)
    with_gateway(tmp_path, steps)
