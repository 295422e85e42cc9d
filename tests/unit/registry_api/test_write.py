"""The write API (core/http.md): each method on each entity kind, and the refusals (a bad document, a wrong
epoch, no credentials, a read-only origin). A real server on 127.0.0.1, the reloader of `xgate run` without
routes: an answer comes after the new registry was swapped in."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from gateway.envelope import Envelope
from gateway.sections.registry import WriteSettings
from gateway.verdict import Outcome
from tests.unit.registry_api.support import run
from tests.unit.registry_api.writing import KEY, SPEC, Gateway, basic, gateway, message, operator_files

# the endpoints these tests write name 127.0.0.1 (issue 35, item 7: off by default, loopback refused unless listed)
ENDPOINTS_ON = WriteSettings(apikey=KEY, endpoints=True, addresses=("127.0.0.1",))


def files(config: Path) -> list[str]:
    return sorted(p.relative_to(config).as_posix() for p in (config / "registry-api").rglob("*.xreg.json"))


def scenario(tmp_path: Path, steps: Any, write: WriteSettings | None = None) -> Any:
    config = operator_files(tmp_path / "config")

    async def main() -> Any:
        async with gateway(config, write) as gw:
            return await steps(gw)
    return run(main)


# -- groups ---------------------------------------------------------------------------------------------------

def test_put_creates_a_group_as_one_predictably_named_file_and_answers_201_with_its_epoch(tmp_path: Path) -> None:
    async def steps(gw: Gateway) -> None:
        status, headers, body = await gw.call("PUT", "/messagegroups/shop",
                                              {"envelope": "CloudEvents/1.0", "description": "Shop",
                                               "messages": {"placed": message("com.example.placed")}})
        assert status == 201, body
        assert headers["Location"] == f"{gw.base}/messagegroups/shop" == body["self"]
        assert body["epoch"] == 1 and body["messagescount"] == 1 and body["description"] == "Shop"
        assert headers["xRegistry-xregcorrelationid"]
        assert files(gw.config) == ["registry-api/messagegroups/shop.xreg.json"]
        stored = json.loads((gw.config / "registry-api/messagegroups/shop.xreg.json").read_text())
        assert stored["messagegroups"]["shop"]["messages"]["placed"]["envelopemetadata"]["type"]["value"] == \
            "com.example.placed"
        # the reloader swapped it in before the answer: the ruleset in force knows the message
        assert ("shop", "placed") in gw.reloader.snapshot.registry.messages
        status, _, again = await gw.call("PATCH", "/messagegroups/shop", {"description": "Shop events", "epoch": 1})
        assert status == 200 and again["epoch"] == 2 and again["description"] == "Shop events"
        assert again["envelope"] == "CloudEvents/1.0"  # PATCH keeps what it does not name
        status, _, put = await gw.call("PUT", "/messagegroups/shop", {"envelope": "CloudEvents/1.0"})
        assert status == 200 and "description" not in put and put["messagescount"] == 1  # collections stay
    scenario(tmp_path, steps)


def test_collections_take_maps_and_delete_removes_the_file(tmp_path: Path) -> None:
    async def steps(gw: Gateway) -> None:
        status, _, body = await gw.call("POST", "/messagegroups", {"a": {"envelope": "CloudEvents/1.0"},
                                                                   "b": {"description": "B"}})
        assert status == 200 and sorted(body) == ["a", "b"] and body["b"]["description"] == "B"
        status, _, body = await gw.call("PATCH", "/messagegroups", {"a": {"description": "A"}})
        assert status == 200 and list(body) == ["a"] and body["a"]["envelope"] == "CloudEvents/1.0"
        status, _, _ = await gw.call("DELETE", "/messagegroups/a?epoch=2")
        assert status == 204
        assert files(gw.config) == ["registry-api/messagegroups/b.xreg.json"]
        status, _, _ = await gw.call("DELETE", "/messagegroups", {"b": {"epoch": 1}})
        assert status == 204 and files(gw.config) == []
        status, _, body = await gw.call("DELETE", "/messagegroups/a")
        assert status == 404 and body["type"] == SPEC + "not_found"
    scenario(tmp_path, steps)


def test_endpoint_groups_with_inline_messages_and_group_references(tmp_path: Path) -> None:
    async def steps(gw: Gateway) -> None:
        endpoint = {"usage": ["producer"], "protocol": "KAFKA", "envelope": "CloudEvents/1.0",
                    "protocoloptions": {"topic": "t", "endpoints": [{"bootstrap.servers": ["127.0.0.1:9092"]}]},
                    "messagegroups": ["/messagegroups/ops"], "messages": {"own": message("com.example.own")}}
        status, _, body = await gw.call("PUT", "/endpoints/e1", endpoint)
        assert status == 201, body
        assert body["messagegroups"] == ["/messagegroups/ops"] and body["messagescount"] == 1
        status, _, body = await gw.call("POST", "/endpoints/e1", {"messages": {"two": message("com.example.two")}})
        assert status == 200 and list(body["messages"]) == ["two"]
        status, _, body = await gw.call("POST", "/endpoints/e1", {"description": "x"})
        assert status == 400 and body["type"] == SPEC + "resources_only"
        assert sorted(gw.view.state.root.collections["endpoints"]["e1"].collections["messages"]) == ["own", "two"]
    scenario(tmp_path, steps, ENDPOINTS_ON)


def test_endpoints_are_written_only_with_their_own_permission(tmp_path: Path) -> None:
    """Issue 35, item 7: the write key alone does not let a client add a listener or a relay."""
    async def steps(gw: Gateway) -> None:
        relay = {"usage": ["producer"], "protocol": "HTTP",
                 "protocoloptions": {"endpoints": [{"uri": "https://hooks.example.com/in"}]}}
        status, headers, body = await gw.call("PUT", "/endpoints/relay", relay)
        assert status == 405 and body["type"] == SPEC + "action_not_supported", body
        assert "registry.write.endpoints" in json.dumps(body)
        status, _, body = await gw.call("POST", "/", {"endpoints": {"relay": relay}})
        assert status == 405, body
        assert files(gw.config) == []
    scenario(tmp_path, steps)


@pytest.mark.parametrize(("address", "allowed"), [
    ("http://0.0.0.0:8080/in", False),                    # a listener on every interface
    ("http://127.0.0.1:9464/metadata", False),            # loopback
    ("http://[::1]:80/x", False),
    ("http://169.254.169.254/latest/meta-data", False),   # link-local: cloud metadata
    ("http://LOCALHOST:80/", False),
    ("http://api.localhost/", False),
    ("https://hooks.example.com/in", True),               # a name: not resolved, allowed
    ("http://10.1.2.3:80/in", True),                      # private, not loopback: allowed
])
def test_an_endpoint_may_not_name_loopback_link_local_or_unspecified_addresses(
        tmp_path: Path, address: str, allowed: bool) -> None:
    async def steps(gw: Gateway) -> None:
        endpoint = {"usage": ["producer"], "protocol": "HTTP", "protocoloptions": {"endpoints": [{"uri": address}]}}
        status, _, body = await gw.call("PUT", "/endpoints/e", endpoint)
        if allowed:
            assert status == 201, body
        else:
            assert status == 400 and body["type"] == SPEC + "invalid_attribute", body
    scenario(tmp_path, steps, WriteSettings(apikey=KEY, endpoints=True))


def test_listed_addresses_are_allowed(tmp_path: Path) -> None:
    async def steps(gw: Gateway) -> None:
        kafka = {"usage": ["producer"], "protocol": "KAFKA",
                 "protocoloptions": {"topic": "t", "endpoints": [{"bootstrap.servers": ["127.0.0.1:9092"]}]}}
        assert (await gw.call("PUT", "/endpoints/k", kafka))[0] == 201
        kafka["protocoloptions"]["endpoints"] = [{"bootstrap.servers": ["127.0.0.2:9092", "[::1]:9092"]}]
        status, _, body = await gw.call("PUT", "/endpoints/k", kafka)
        assert status == 400 and "::1" in json.dumps(body), body
    scenario(tmp_path, steps, WriteSettings(apikey=KEY, endpoints=True, addresses=("127.0.0.0/8",)))


# -- messages -------------------------------------------------------------------------------------------------

def test_messages_put_patch_post_and_delete(tmp_path: Path) -> None:
    async def steps(gw: Gateway) -> None:
        status, headers, body = await gw.call("PUT", "/messagegroups/g/messages/m", message("com.example.m"))
        assert status == 201 and headers["Location"] == body["self"] and body["versionid"] == "1"
        status, _, body = await gw.call("PATCH", "/messagegroups/g/messages/m", {"description": "M", "epoch": 1})
        assert status == 200 and body["epoch"] == 2 and body["description"] == "M"
        assert body["envelopemetadata"]["type"]["value"] == "com.example.m"
        status, _, body = await gw.call("POST", "/messagegroups/g/messages", {"n": message("com.example.n")})
        assert status == 200 and list(body) == ["n"]
        status, _, body = await gw.call("PUT", "/messagegroups/g/messages/m/versions/1", message("com.example.m2"))
        assert status == 200 and body["envelopemetadata"]["type"]["value"] == "com.example.m2"
        status, _, body = await gw.call("PUT", "/messagegroups/g/messages/m/versions/2", message("com.example.m2"))
        assert status == 400 and body["type"] == SPEC + "bad_request"  # maxversions 1
        status, _, body = await gw.call("DELETE", "/messagegroups/g/messages", {"n": {"epoch": 1}})
        assert status == 400 and body["type"] == SPEC + "misplaced_epoch"
        status, _, _ = await gw.call("DELETE", "/messagegroups/g/messages", {"n": {"meta": {"epoch": 1}}})
        assert status == 204
        status, _, _ = await gw.call("DELETE", "/messagegroups/g/messages/m")
        assert status == 204
        assert gw.view.state.root.collections["messagegroups"]["g"].collections["messages"] == {}
    scenario(tmp_path, steps)


# -- schemas and their versions -------------------------------------------------------------------------------

def test_schemas_versions_meta_and_the_document_form(tmp_path: Path) -> None:
    async def steps(gw: Gateway) -> None:
        path = "/schemagroups/sg/schemas/s"
        status, headers, body = await gw.call("PUT", path + "$details", {"format": "JsonSchema/draft-07",
                                                                        "schema": {"type": "object"}})
        assert status == 201 and body["versionid"] == "1"
        assert headers["Content-Location"] == f"{gw.base}{path}/versions/1$details"
        status, headers, body = await gw.call("POST", path + "$details", {"format": "JsonSchema/draft-07",
                                                                         "schema": {"type": "string"}})
        assert status == 201 and body["versionid"] == "2" and body["isdefault"] is True
        assert headers["Location"] == headers["Content-Location"] == f"{gw.base}{path}/versions/2$details"
        status, _, meta = await gw.call("PATCH", path + "/meta", {"defaultversionid": "1"})
        assert status == 200 and meta["defaultversionid"] == "1" and meta["defaultversionsticky"] is True
        status, _, body = await gw.call("PATCH", path + "/versions/2$details", {"description": "two"})
        assert status == 200 and body["description"] == "two" and body["isdefault"] is False
        # the document form: the schema is the body, its metadata in xRegistry- headers
        status, headers, document = await gw.call("PUT", path + "/versions/3", raw=b'{"type": "integer"}',
                                                  headers={"Content-Type": "application/json",
                                                           "xRegistry-format": "JsonSchema/draft-07"})
        assert status == 201 and document == {"type": "integer"}
        assert headers["xRegistry-versionid"] == "3"
        status, _, body = await gw.call("PATCH", path + "/versions/3", {"description": "x"})
        assert status == 405 and body["type"].endswith("http.md#details_required")  # http.md: 405
        status, _, _ = await gw.call("DELETE", path + "/versions/1")
        assert status == 204
        status, _, meta = await gw.call("GET", path + "/meta")
        assert meta["defaultversionid"] == "3" and meta["defaultversionsticky"] is False  # the newest again
        status, _, body = await gw.call("PATCH", path + "/meta", {"defaultversionid": "9"})
        assert status == 400 and body["type"] == SPEC + "bad_defaultversionid"
    scenario(tmp_path, steps)


# -- the whole document at the root ---------------------------------------------------------------------------

def test_put_and_post_of_a_whole_document_split_it_into_one_file_per_group(tmp_path: Path) -> None:
    document = {"specversion": "1.0-rc4", "registryid": "xgate",
                "messagegroups": {"shop": {"envelope": "CloudEvents/1.0", "messages": {
                    "placed": {**message("com.example.placed"), "dataschema": None,
                               "dataschemauri": "#/schemagroups/shop.schemas/schemas/order"}}}},
                "schemagroups": {"shop.schemas": {"schemas": {"order": {"format": "JsonSchema/draft-07", "versions": {
                    "1": {"schema": {"type": "object", "required": ["id"]}}}}}}}}

    async def steps(gw: Gateway) -> None:
        status, _, body = await gw.call("PUT", "", document)
        assert status == 200, body
        assert body["xid"] == "/" and body["messagegroupscount"] == 2
        assert files(gw.config) == ["registry-api/messagegroups/shop.xreg.json",
                                    "registry-api/schemagroups/shop.schemas.xreg.json"]
        # the in-document reference became an xid, which resolves across the files
        definition = gw.reloader.snapshot.registry.messages[("shop", "placed")]
        assert definition.payload is not None
        status, _, body = await gw.call("POST", "", {"endpoints": {}, "messagegroups": {"more": {}}})
        assert status == 200 and list(body["messagegroups"]) == ["more"]
        status, _, body = await gw.call("POST", "", {"name": "x"})
        assert status == 400 and body["type"] == SPEC + "groups_only"
        status, _, body = await gw.call("PUT", "", {"name": "x"})
        assert status == 400 and body["type"] == SPEC + "invalid_attribute"
    scenario(tmp_path, steps)


# -- refusals -------------------------------------------------------------------------------------------------

def test_a_document_that_would_not_compile_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    async def steps(gw: Gateway) -> None:
        await gw.call("PUT", "/messagegroups/g", {"messages": {"m": message("com.example.m")}})
        before = (gw.config / "registry-api/messagegroups/g.xreg.json").read_bytes()
        digest = gw.reloader.snapshot.digest
        broken = {**message("com.example.m"), "dataschema": {"type": 12}}
        status, _, body = await gw.call("PUT", "/messagegroups/g/messages/m", broken)
        assert status == 400 and body["type"] == SPEC + "bad_request"
        # named relative to the config directory: a client does not learn the server's layout (issue 34, item 5)
        assert body["errors"][0]["file"] == "registry-api/messagegroups/g.xreg.json"
        assert str(gw.config.resolve()) not in json.dumps(body)
        assert body["errors"][0]["pointer"].startswith("/messagegroups/g/messages/m/dataschema")
        assert (gw.config / "registry-api/messagegroups/g.xreg.json").read_bytes() == before
        assert gw.reloader.snapshot.digest == digest
        assert not list((gw.config / "registry-api").rglob("*.tmp"))  # the staged file went too
        # a reference the registry cannot resolve is refused the same way
        status, _, body = await gw.call("PUT", "/endpoints/e", {"protocol": "KAFKA", "messagegroups": ["/messagegroups/none"]})
        assert status == 400 and "none" in json.dumps(body["errors"])
        status, _, body = await gw.call("PUT", "/messagegroups/g", raw=b"{not json")
        assert status == 400 and body["type"] == SPEC + "parsing_data"
        status, _, body = await gw.call("PUT", "/messagegroups/g", raw=b"")
        assert status == 400 and body["type"].endswith("http.md#missing_body")
        # nested past Python's recursion limit: a 400 like any unreadable body, never a 500 (issue 35, item 11)
        status, _, body = await gw.call("PUT", "/messagegroups/g", raw=b"[" * 100_000 + b"]" * 100_000)
        assert status == 400 and body["type"] == SPEC + "parsing_data"
        status, _, body = await gw.call("PUT", "/schemagroups/s/schemas/x/versions/1",
                                        raw=b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
                                        headers={"Content-Type": "application/json"})
        assert status == 400 and body["type"] == SPEC + "parsing_data"
        status, _, body = await gw.call("PUT", "/messagegroups/-bad", {})
        assert status == 400 and body["type"] == SPEC + "malformed_id"
        status, _, body = await gw.call("PUT", "/messagegroups/g", {"messagegroupid": "h"})
        assert status == 400 and body["type"] == SPEC + "mismatched_id"
    scenario(tmp_path, steps, ENDPOINTS_ON)


def test_ids_differing_only_in_case_are_refused(tmp_path: Path) -> None:
    """core/spec.md `<SINGULAR>id`: unique case-insensitively within the parent (issue 35, item 11)."""
    async def steps(gw: Gateway) -> None:
        status, _, _ = await gw.call("PUT", "/messagegroups/w.g", {"messages": {"m": message("com.example.m")}})
        assert status == 201
        for path, body in (("/messagegroups/W.G", {}),                                   # a group
                           ("/messagegroups/OPS", {}),                                    # beside an operator's
                           ("/messagegroups/w.g/messages/M", message("com.example.n")),   # a resource
                           ("/messagegroups/W.g/messages/x", message("com.example.x"))):  # a group made implicitly
            status, _, answer = await gw.call("PUT", path, body)
            assert status == 400 and answer["type"] == SPEC + "mismatched_id", (path, answer)
        status, _, answer = await gw.call("POST", "/messagegroups", {"a.b": {}, "A.B": {}})  # within one request
        assert status == 400 and answer["type"] == SPEC + "mismatched_id"
        await gw.call("PUT", "/schemagroups/s/schemas/x/versions/v1", {"schema": {"type": "object"}})
        status, _, answer = await gw.call("PUT", "/schemagroups/s/schemas/x/versions/V1", {"schema": {}})
        assert status == 400 and answer["type"] == SPEC + "mismatched_id"
        assert files(gw.config) == ["registry-api/messagegroups/w.g.xreg.json", "registry-api/schemagroups/s.xreg.json"]
    scenario(tmp_path, steps)


def test_a_wrong_epoch_is_refused_with_mismatched_epoch(tmp_path: Path) -> None:
    async def steps(gw: Gateway) -> None:
        await gw.call("PUT", "/messagegroups/g", {"messages": {"m": message("com.example.m")}})
        status, _, body = await gw.call("PATCH", "/messagegroups/g", {"description": "x", "epoch": 5})
        assert status == 400 and body["type"] == SPEC + "mismatched_epoch"
        assert body["args"] == {"bad_epoch": "5", "epoch": "1"} and body["subject"] == "/messagegroups/g"
        status, _, body = await gw.call("DELETE", "/messagegroups/g?epoch=4")
        assert status == 400 and body["type"] == SPEC + "mismatched_epoch"
        status, _, body = await gw.call("PATCH", "/messagegroups/g", {"description": "x", "epoch": None})
        assert status == 200  # null: no check (spec.md "epoch Attribute")
    scenario(tmp_path, steps)


@pytest.mark.parametrize("headers", [{}, {"X-API-Key": "wrong"}, {"Authorization": "Bearer wrong"},
                                     basic("ci", "wrong")])
def test_a_write_without_the_credentials_is_refused_401(tmp_path: Path, headers: dict[str, str]) -> None:
    async def steps(gw: Gateway) -> None:
        status, answer, body = await gw.call("PUT", "/messagegroups/g", {}, headers=headers, auth=False)
        assert status == 401 and "WWW-Authenticate" in answer and body["subject"] == "/registry/messagegroups/g"
        # no xRegistry error type names this (the spec has no such anchor): RFC 9457's about:blank
        assert body["type"] == "about:blank"
        assert not (gw.config / "registry-api").exists()
        status, _, _ = await gw.call("GET", "/messagegroups", auth=False)
        assert status == 200  # reading needs nothing more than before
    scenario(tmp_path, steps, WriteSettings(apikey="k", username="ci", password="pw"))


def test_api_key_as_bearer_and_basic_auth_are_accepted(tmp_path: Path) -> None:
    async def steps(gw: Gateway) -> list[int]:
        return [(await gw.call("PUT", f"/messagegroups/g{i}", {}, headers=h, auth=False))[0]
                for i, h in enumerate([{"X-API-Key": "k"}, {"Authorization": "Bearer k"}, basic("ci", "pw")])]
    assert scenario(tmp_path, steps, WriteSettings(apikey="k", username="ci", password="pw")) == [201, 201, 201]


def test_entities_from_operator_files_are_read_only_and_say_why(tmp_path: Path) -> None:
    async def steps(gw: Gateway) -> None:
        for method, path, body in [("PATCH", "/messagegroups/ops", {"description": "x"}),
                                   ("PUT", "/messagegroups/ops/messages/ping", message("com.example.ping")),
                                   ("DELETE", "/messagegroups/ops", None),
                                   ("POST", "/schemagroups/ops.schemas/schemas/s$details", {"format": "JSON"})]:
            status, headers, answer = await gw.call(method, path, body)
            assert status == 405, (method, path, answer)
            assert answer["type"] == SPEC + "action_not_supported" and headers["Allow"] == "GET, HEAD, OPTIONS"
            assert "operator.xreg.json" in answer["detail"] and "read-only" in answer["detail"]
        assert not list((gw.config / "registry-api").rglob("*.xreg.json"))
    scenario(tmp_path, steps)


def test_writes_are_off_without_registry_write(tmp_path: Path) -> None:
    from gateway.loader import load_snapshot
    from gateway.registry_api import RegistryView
    from tests.unit.registry_api.support import http, serving

    view = RegistryView(load_snapshot([operator_files(tmp_path / "c")]))

    async def main() -> tuple[int, dict[str, str]]:
        async with serving(view) as server:
            status, headers, _ = await http(server, "PUT", "/registry/messagegroups/g")
            options = await http(server, "OPTIONS", "/registry/messagegroups")
            return status, {**headers, "options": options[1]["Allow"]}
    status, headers = run(main)
    assert status == 405 and headers["options"] == "GET, HEAD, OPTIONS"


# -- the pipeline judges with what was written ------------------------------------------------------------------

def test_the_ruleset_in_force_judges_with_the_new_definition_when_the_answer_arrives(tmp_path: Path) -> None:
    event = {"specversion": "1.0", "id": "1", "source": "/x", "type": "com.example.m", "data": {"v": 1}}
    envelope = Envelope("HTTP", {"method": "POST", "path": "/", "headers": [
        ("Content-Type", "application/cloudevents+json")]}, json.dumps(event).encode())

    async def steps(gw: Gateway) -> list[tuple[Outcome, str | None]]:
        def judged() -> tuple[Outcome, str | None]:
            verdict = gw.engine.ref.ruleset.classify(envelope)
            return verdict.outcome, verdict.messageid
        outcomes = [judged()]
        await gw.call("PUT", "/messagegroups/g/messages/m", message("com.example.m"))
        outcomes.append(judged())
        await gw.call("PUT", "/messagegroups/g/messages/m", message("com.example.m", required="w"))
        outcomes.append(judged())
        return outcomes
    assert scenario(tmp_path, steps) == [(Outcome.NONCONFORMANT, None), (Outcome.CONFORMANT, "m"),
                                         (Outcome.NONCONFORMANT, "m")]


def test_concurrent_writers_are_serialized_and_lose_nothing(tmp_path: Path) -> None:
    async def steps(gw: Gateway) -> tuple[list[int], list[str], int]:
        await gw.call("PUT", "/messagegroups/g", {})
        # each writes the same group file: without serialization, read-modify-write would drop messages
        answers = await asyncio.gather(*(gw.call("PUT", f"/messagegroups/g/messages/m{i}", message(f"t{i}"))
                                         for i in range(4)))
        # two racing PATCHes that both read the same epoch: exactly one wins, the other is refused
        epoch = (await gw.call("GET", "/messagegroups/g"))[2]["epoch"]
        first, second = await asyncio.gather(*(gw.call("PATCH", "/messagegroups/g", {"description": d, "epoch": epoch})
                                              for d in ("a", "b")))
        stored = json.loads((gw.config / "registry-api/messagegroups/g.xreg.json").read_text())
        return [a[0] for a in answers], sorted(stored["messagegroups"]["g"]["messages"]), first[0] + second[0]
    statuses, stored, both = scenario(tmp_path, steps)
    assert statuses == [201] * 4 and stored == [f"m{i}" for i in range(4)]
    assert both == 200 + 400
