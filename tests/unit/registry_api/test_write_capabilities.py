"""With writes on, the registry says so (issue 34, item 1): core/spec.md "Registry Capabilities" (`available`:
"a nested `mutable` boolean attribute indicating whether or not the corresponding data is user-editable";
the `mutable` list), the meta entity's `readonly` ("Meta Entity": true when the Resource cannot be
edited through the API), and OPTIONS (http.md): a group the operator owns offers no write."""

from __future__ import annotations

from pathlib import Path

from tests.unit.registry_api.writing import Gateway, with_gateway


def test_capabilities_say_the_entities_are_mutable(tmp_path: Path) -> None:
    async def steps(gw: Gateway) -> None:
        status, _, body = await gw.call("GET", "/capabilities")
        assert status == 200
        assert body["available"]["entities"] == {"mutable": True} and body["mutable"] == ["entities"]
        assert body["available"]["model"] == {"mutable": False}  # "MUST have a mutable value of false"
        status, _, root = await gw.call("GET", "?inline=capabilities")
        assert root["capabilities"]["mutable"] == ["entities"]
    with_gateway(tmp_path, steps)


def test_meta_readonly_is_false_only_where_writes_reach(tmp_path: Path) -> None:
    async def steps(gw: Gateway) -> None:
        status, _, _ = await gw.call("PUT", "/schemagroups/mine/schemas/s$details",
                                     {"format": "JsonSchema/draft-07", "schema": {"type": "object"}})
        assert status == 201
        _, _, mine = await gw.call("GET", "/schemagroups/mine/schemas/s/meta")
        _, _, operators = await gw.call("GET", "/schemagroups/ops.schemas/schemas/s/meta")
        assert (mine["readonly"], operators["readonly"]) == (False, True)
    with_gateway(tmp_path, steps)


def test_options_offers_writes_only_where_they_are_taken(tmp_path: Path) -> None:
    async def steps(gw: Gateway) -> None:
        _, operators, _ = await gw.call("OPTIONS", "/messagegroups/ops")
        _, new, _ = await gw.call("OPTIONS", "/messagegroups/not-yet")
        _, root, _ = await gw.call("OPTIONS", "")
        assert operators["Allow"] == "GET, HEAD, OPTIONS"
        assert "PUT" in new["Allow"] and "DELETE" in new["Allow"] and "PUT" in root["Allow"]
        status, _, _ = await gw.call("PUT", "/messagegroups/ops", {"description": "x"})
        assert status == 405  # what OPTIONS said
    with_gateway(tmp_path, steps)
