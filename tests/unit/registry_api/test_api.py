"""GET /registry: entities, collections, nested Resources and Versions, `?inline`, errors (core/http.md).

Answered in-process (`routes.answer`, no socket) except where the HTTP layer itself is the subject: content
type, methods, the Host header in `self`, and the basic auth of the metrics server, which a real server on
127.0.0.1 answers.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from gateway.compiler import compile_registry
from gateway.loader import Snapshot, load_snapshot
from gateway.registry_api import RegistryView
from gateway.settings import MetricsSettings
from tests.unit.registry_api.registry import PROTO, READING, write_registry
from tests.unit.registry_api.support import BASE, ask, http, ok, run, serving, view_of

SPEC_ERRORS = "https://github.com/xregistry/spec/blob/main/core/spec.md#"


@pytest.fixture()
def view(tmp_path: Path) -> RegistryView:
    return view_of(write_registry(tmp_path))[1]


# -- the registry entity and the collections ------------------------------------------------------------------------

def test_root_names_every_group_collection_with_url_and_count(view: RegistryView) -> None:
    root = ok(view)
    assert root["specversion"] == "1.0-rc4" and root["registryid"] == "xgate"
    assert root["self"] == f"{BASE}/" and root["xid"] == "/" and root["epoch"] == 1
    assert {k: root[k] for k in root if k.endswith(("url", "count"))} == {
        "endpointsurl": f"{BASE}/endpoints", "endpointscount": 2,
        "messagegroupsurl": f"{BASE}/messagegroups", "messagegroupscount": 1,
        "schemagroupsurl": f"{BASE}/schemagroups", "schemagroupscount": 1}
    assert "endpoints" not in root  # not inlined unless asked


def test_collections_are_maps_keyed_by_id(view: RegistryView) -> None:
    endpoints = ok(view, "/endpoints")
    assert list(endpoints) == ["orders.dlq", "orders.in"]  # sorted by id, as the spec recommends
    endpoint = endpoints["orders.in"]
    assert endpoint["endpointid"] == "orders.in" and endpoint["xid"] == "/endpoints/orders.in"
    assert endpoint["self"] == f"{BASE}/endpoints/orders.in"
    assert endpoint["messagesurl"] == f"{BASE}/endpoints/orders.in/messages" and endpoint["messagescount"] == 1
    assert endpoint["messagegroups"] == ["/messagegroups/orders"]
    assert endpoint["protocoloptions"] == {"topic": "orders", "endpoints": [{"uri": "tcp://127.0.0.1:9092"}]}
    assert ok(view, "/endpoints/orders.in") == endpoint
    assert list(ok(view, "/schemagroups")) == ["shop"] and list(ok(view, "/messagegroups")) == ["orders"]


def test_messages_of_groups_and_endpoints_are_resources_with_one_version(view: RegistryView) -> None:
    messages = ok(view, "/messagegroups/orders/messages")
    assert list(messages) == ["cancelled", "placed"]
    placed = ok(view, "/messagegroups/orders/messages/placed")
    assert placed == messages["placed"]
    assert (placed["messageid"], placed["versionid"], placed["isdefault"], placed["ancestorid"]) == \
        ("placed", "1", True, "1")
    assert placed["self"] == f"{BASE}/messagegroups/orders/messages/placed"  # no `$details`: no document
    assert placed["metaurl"] == f"{BASE}/messagegroups/orders/messages/placed/meta"
    assert placed["versionscount"] == 1 and "versions" not in placed
    # resolved, its schema one of the registry's: the reference, not a copy (issue 19 point 9)
    assert placed["dataschemauri"] == "/schemagroups/shop/schemas/reading" and "dataschema" not in placed
    version = ok(view, "/messagegroups/orders/messages/placed/versions/1")
    assert version["xid"] == "/messagegroups/orders/messages/placed/versions/1" and version["messageid"] == "placed"
    assert {k: v for k, v in version.items() if k not in ("self", "xid")} == \
        {k: v for k, v in placed.items() if k not in ("self", "xid", "metaurl", "versionsurl", "versionscount")}
    assert list(ok(view, "/messagegroups/orders/messages/placed/versions")) == ["1"]
    assert list(ok(view, "/endpoints/orders.in/messages")) == ["ping"]
    assert ok(view, "/endpoints/orders.in/messages/ping$details") == ok(view, "/endpoints/orders.in/messages/ping")


def test_basemessage_chains_are_served_materialized(view: RegistryView) -> None:
    cancelled = ok(view, "/messagegroups/orders/messages/cancelled")
    assert "basemessageuri" not in cancelled and "basemessage" not in cancelled
    assert cancelled["envelopemetadata"] == {"type": {"value": "com.example.order.cancelled"},
                                             "source": {"type": "uritemplate", "value": "/shops/{shop}"}}
    assert cancelled["dataschemauri"] == "/schemagroups/shop/schemas/reading"  # inherited from its base


def test_meta_entity(view: RegistryView) -> None:
    meta = ok(view, "/schemagroups/shop/schemas/reading/meta")
    assert meta == {**meta, "schemaid": "reading", "xid": "/schemagroups/shop/schemas/reading/meta",
                    "self": f"{BASE}/schemagroups/shop/schemas/reading/meta", "epoch": 1, "readonly": True,
                    "defaultversionid": "2", "defaultversionsticky": False,
                    "defaultversionurl": f"{BASE}/schemagroups/shop/schemas/reading/versions/2$details"}


def test_schema_versions_down_to_one_version(view: RegistryView) -> None:
    schema = ok(view, "/schemagroups/shop/schemas/reading$details")
    assert schema["self"] == f"{BASE}/schemagroups/shop/schemas/reading$details"
    assert (schema["versionid"], schema["format"], schema["versionscount"]) == ("2", "JsonSchema/draft-07", 2)
    assert "schema" not in schema  # the document only when inlined
    versions = ok(view, "/schemagroups/shop/schemas/reading/versions")
    assert [(v["versionid"], v["isdefault"], v["ancestorid"]) for v in versions.values()] == \
        [("1", False, "1"), ("2", True, "1")]
    one = ok(view, "/schemagroups/shop/schemas/reading/versions/1$details")
    assert one["self"] == f"{BASE}/schemagroups/shop/schemas/reading/versions/1$details"
    assert one["xid"] == "/schemagroups/shop/schemas/reading/versions/1" and one["schemaid"] == "reading"
    assert ok(view, "/schemagroups/shop/schemas/reading/versions/1$details", inline="schema")["schema"] == \
        {"type": "object"}


def test_schema_without_details_is_the_document_with_xregistry_headers(view: RegistryView) -> None:
    from multidict import MultiDict

    from gateway.registry_api.handlers import answer

    response = answer(view.state, BASE, "/schemagroups/shop/schemas/reading", MultiDict())
    assert response.status == 200 and response.content_type == "application/json"
    assert isinstance(response.body, bytes) and json.loads(response.body) == READING
    assert response.headers["xRegistry-schemaid"] == "reading" and response.headers["xRegistry-versionid"] == "2"
    assert response.headers["xRegistry-isdefault"] == "true" and response.headers["xRegistry-epoch"] == "1"
    # http.md: "same as meta.defaultversionurl", the `$details` form (issue 34, item 5)
    assert response.headers["Content-Location"] == f"{BASE}/schemagroups/shop/schemas/reading/versions/2$details"
    text = answer(view.state, BASE, "/schemagroups/shop/schemas/ping/versions/1", MultiDict())
    assert text.content_type == "text/plain" and text.body == PROTO.encode()
    remote = answer(view.state, BASE, "/schemagroups/shop/schemas/remote", MultiDict())
    assert remote.status == 303 and remote.headers["Location"] == "https://schemas.example.com/x.avsc"
    assert ok(view, "/schemagroups/shop/schemas/remote$details")["schemaurl"] == "https://schemas.example.com/x.avsc"


# -- inline ---------------------------------------------------------------------------------------------------------

def test_inline_star_and_no_value_inline_everything_below(view: RegistryView) -> None:
    everything = ok(view, "", inline="*")
    assert ok(view, "", inline="") == everything
    assert "capabilities" not in everything and "model" not in everything  # only when named
    placed = everything["messagegroups"]["orders"]["messages"]["placed"]
    assert placed["meta"]["defaultversionid"] == "1" and list(placed["versions"]) == ["1"]
    reading = everything["schemagroups"]["shop"]["schemas"]["reading"]
    assert reading["schema"] == READING and reading["versions"]["1"]["schema"] == {"type": "object"}
    assert everything["endpoints"]["orders.in"]["messages"]["ping"]["versions"]["1"]["messageid"] == "ping"


def test_inline_paths_inline_just_what_they_name(view: RegistryView) -> None:
    one_level = ok(view, "", inline="endpoints")
    assert set(one_level["endpoints"]) == {"orders.in", "orders.dlq"}
    assert "messages" not in one_level["endpoints"]["orders.in"] and "messagegroups" not in one_level
    deeper = ok(view, "", inline="messagegroups.messages.versions")
    placed = deeper["messagegroups"]["orders"]["messages"]["placed"]
    assert list(placed["versions"]) == ["1"] and "meta" not in placed and "endpoints" not in deeper
    several = ok(view, "", inline=["endpoints.messages", "schemagroups.schemas.versions.schema"])
    assert list(several["endpoints"]["orders.in"]["messages"]) == ["ping"]
    reading = several["schemagroups"]["shop"]["schemas"]["reading"]
    assert "schema" not in reading and reading["versions"]["2"]["schema"] == READING
    assert ok(view, "", inline="schemagroups.*")["schemagroups"]["shop"]["schemas"]["reading"]["schema"] == READING
    assert "messages" in ok(view, "/endpoints", inline="messages")["orders.in"]
    assert "meta" in ok(view, "/messagegroups/orders/messages/placed", inline="meta")


def test_inline_capabilities_and_model(view: RegistryView) -> None:
    root = ok(view, "", inline="capabilities,model")
    assert root["capabilities"]["flags"] == ["filter", "inline"] and root["capabilities"]["mutable"] == []
    assert set(root["model"]["groups"]) == {"endpoints", "messagegroups", "schemagroups"}
    assert ok(view, "/capabilities") == root["capabilities"] and ok(view, "/model") == root["model"]


@pytest.mark.parametrize(("path", "value"), [("", "nope"), ("", "endpoints.nope"), ("", "*.endpoints"),
                                             ("/endpoints", "endpoints"), ("/messagegroups/orders", "versions"),
                                             ("/messagegroups/orders/messages/placed", "message")])
def test_an_unknown_inline_path_is_bad_inline(view: RegistryView, path: str, value: str) -> None:
    status, body = ask(view, path, inline=value)
    assert status == 400 and body["type"] == SPEC_ERRORS + "bad_inline", body
    assert body["subject"] == "/registry" + path and body["args"]["value"] == value


def test_the_inlined_registry_loads_again_as_the_same_registry(view: RegistryView, tmp_path: Path) -> None:
    """What a second xgate following this one (`?inline`) would load."""
    copy = tmp_path / "copy" / "registry.xreg.json"
    copy.parent.mkdir()
    copy.write_text(json.dumps(ok(view, "", inline="")), "utf-8")
    original, again = load_snapshot([tmp_path]), load_snapshot([copy])
    assert not again.errors, again.errors

    def judged(snapshot: Snapshot) -> dict[str, list[tuple[str, str, int]]]:
        ruleset = compile_registry(snapshot.registry, snapshot.digest)
        return {e: sorted((d.groupid, d.messageid, d.specificity) for d in rules.definitions)
                for e, rules in ruleset.endpoints.items()}
    assert judged(again) == judged(original)
    assert {k: d.payload.schema if d.payload else None for k, d in again.registry.messages.items()} == \
        {k: d.payload.schema if d.payload else None for k, d in original.registry.messages.items()}


# -- errors ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "subject"), [
    ("/endpoints/nope", "/endpoints/nope"), ("/messagegroups/orders/messages/nope", "/messagegroups/orders/messages/nope"),
    ("/schemagroups/shop/schemas/reading/versions/9", "/schemagroups/shop/schemas/reading/versions/9"),
    ("/schemagroups/nope/schemas", "/schemagroups/nope"), ("/endpoints/Orders.in", "/endpoints/Orders.in")])
def test_a_missing_entity_is_not_found(view: RegistryView, path: str, subject: str) -> None:
    status, body = ask(view, path)
    assert status == 404
    assert body == {"type": SPEC_ERRORS + "not_found", "title": f"The targeted entity ({subject}) cannot be found.",
                    "subject": subject}


@pytest.mark.parametrize("path", ["/nope", "/endpoints/orders.in/schemas", "/export",
                                  "/schemagroups/shop/schemas/reading/versions/1/more"])
def test_an_unknown_path_is_api_not_found(view: RegistryView, path: str) -> None:
    status, body = ask(view, path)
    assert status == 404 and body["type"] == "https://github.com/xregistry/spec/blob/main/core/http.md#api_not_found"
    assert body["subject"] == "/registry" + path


def test_details_on_a_group_is_bad_details(view: RegistryView) -> None:
    status, body = ask(view, "/endpoints/orders.in$details")
    assert status == 400 and body["type"] == SPEC_ERRORS + "bad_details"


# -- over HTTP ----------------------------------------------------------------------------------------------------------

def test_served_on_the_metrics_server_as_application_json(view: RegistryView) -> None:
    async def scenario() -> list[tuple[int, dict[str, str], bytes]]:
        async with serving(view) as server:
            return [await http(server, "GET", "/registry", {"Host": "gw.example:8443"}),
                    await http(server, "GET", "/registry/endpoints/nope"),
                    await http(server, "DELETE", "/registry/endpoints/orders.in"),
                    await http(server, "OPTIONS", "/registry"),
                    await http(server, "GET", "/metrics"),
                    await http(server, "GET", "/registry/endpoints/orders%2Ein")]
    root, missing, delete, options, metrics, encoded = run(scenario)
    assert root[0] == 200 and root[1]["Content-Type"] == "application/json; charset=utf-8"
    body = json.loads(root[2])
    assert body["self"] == "http://gw.example:8443/registry/"  # from the request's Host
    assert body["endpointsurl"] == "http://gw.example:8443/registry/endpoints"
    assert missing[0] == 404 and missing[1]["Content-Type"] == "application/json; charset=utf-8"
    assert delete[0] == 405 and delete[1]["Allow"] == "GET, HEAD, OPTIONS"
    assert json.loads(delete[2])["type"] == SPEC_ERRORS + "action_not_supported"
    assert json.loads(delete[2])["args"] == {"action": "DELETE"}
    assert options[0] == 200 and options[1]["Allow"] == options[1]["Access-Control-Allow-Methods"]
    assert metrics[0] == 200  # the server's own paths keep working
    assert encoded[0] == 200 and json.loads(encoded[2])["endpointid"] == "orders.in"


def test_basic_auth_of_the_metrics_server_applies_to_the_registry(view: RegistryView) -> None:
    access = MetricsSettings(username="reader", password="s3cret", probes_need_auth=False)
    good = {"Authorization": "Basic " + base64.b64encode(b"reader:s3cret").decode()}
    bad = {"Authorization": "Basic " + base64.b64encode(b"reader:wrong").decode()}

    async def scenario() -> list[int]:
        async with serving(view, access) as server:
            return [(await http(server, "GET", path, headers))[0] for path, headers in (
                ("/registry", {}), ("/registry/endpoints", bad), ("/registry/schemagroups/shop/schemas/reading", {}),
                ("/registry", good), ("/registry/schemagroups/shop/schemas/reading", good), ("/healthz", {}))]
    assert run(scenario) == [401, 401, 401, 200, 200, 200]
