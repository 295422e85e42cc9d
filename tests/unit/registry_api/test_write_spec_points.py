"""Issue 34, items 3 and 4, each against the core spec's text: a child added moves its parent's `modifiedat`
(core/spec.md `modifiedat` Attribute: "adding or removing an entity from a nested xRegistry collection MUST
update the modifiedat value of the parent entity"); a request's `createdat`/`modifiedat` are used
(`createdat` Attribute: "If present in a write operation request, the value MUST override any existing value,
however a value of null MUST use the current date/time"; `modifiedat`: "If the request value is different
than the existing value, then the request value MUST be used"); metadata in the body with an `xRegistry-`
header is refused (http.md "Creating or Updating Entities": extra_xregistry_header)."""

from __future__ import annotations

from pathlib import Path

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
