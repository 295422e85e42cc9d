"""The registry API against xRegistry 1.0-rc4 (issue 19, points 7 to 12): the full model, epochs and `createdat`
across restarts, the message and schema attributes, what the documents declare, errors and the root `Link`,
self URLs behind a proxy and the API at the root of an address of its own.

Each test names its point; spec texts are in the shared conformance material (core/spec.md, core/http.md,
core/model.md, message/spec.md).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from gateway.loader import load_snapshot
from gateway.registry_api import RegistryView, registry_document
from gateway.registry_api.state import StateFile, default_state_dir, state_file
from gateway.settings import MetricsSettings, RegistrySettings, load_settings
from tests.conftest import conformance_dir
from tests.unit.builders import write_doc
from tests.unit.registry_api.registry import PROTO, READING, orders_document, write_registry
from tests.unit.registry_api.support import BASE, ask, http, ok, run, serving, view_of

SPEC_ERRORS = "https://github.com/xregistry/spec/blob/main/core/spec.md#"
HTTP_ERRORS = "https://github.com/xregistry/spec/blob/main/core/http.md#"


@pytest.fixture()
def view(tmp_path: Path) -> RegistryView:
    return view_of(write_registry(tmp_path / "config"))[1]


# -- 7. GET /model is the full model (model.md "Retrieving the Registry Model") --------------------------------------

def test_7_the_model_is_the_full_model(view: RegistryView) -> None:
    model = ok(view, "/model")
    registry = model["attributes"]
    for name in ("specversion", "registryid", "self", "xid", "epoch", "createdat", "modifiedat", "labels",
                 "capabilities", "model", "modelsource", "endpointsurl", "endpointscount", "endpoints",
                 "messagegroupsurl", "schemagroupscount"):
        assert registry[name]["name"] == name, name
    for plural, singular, resources in (("endpoints", "endpoint", "messages"),
                                        ("messagegroups", "messagegroup", "messages"),
                                        ("schemagroups", "schemagroup", "schemas")):
        group = model["groups"][plural]
        assert "ximportresources" not in group  # modelsource only (model.md "Reuse of Resource Definitions")
        for name in (f"{singular}id", "self", "xid", "epoch", "createdat", "modifiedat", "name", "labels",
                     f"{resources}url", f"{resources}count", resources):
            assert name in group["attributes"], (plural, name)
        resource = group["resources"][resources]
        for name in ("self", "xid", "metaurl", "meta", "versionsurl", "versionscount", "versions"):
            assert name in resource["resourceattributes"], (plural, name)
        for name in ("epoch", "readonly", "defaultversionid", "defaultversionurl", "defaultversionsticky"):
            assert name in resource["metaattributes"], (plural, name)
        for name in ("versionid", "isdefault", "ancestorid", "epoch", "createdat"):
            assert name in resource["attributes"], (plural, name)
    # endpoints hold messages: the import resolved, with the message spec's attributes
    messages = model["groups"]["endpoints"]["resources"]["messages"]
    assert messages["maxversions"] == 1 and messages["hasdocument"] is False
    assert {"envelopemetadata", "dataschema", "dataschemauri", "dataschemaxid"} <= set(messages["attributes"])
    assert "message" not in messages["attributes"]  # no document attribute where hasdocument is false
    schemas = model["groups"]["schemagroups"]["resources"]["schemas"]["attributes"]
    assert {"schema", "schemabase64", "schemaurl", "format"} <= set(schemas)
    assert ok(view, "", inline="model")["model"] == model


def test_7_the_model_validates_against_the_specs_model_schema(view: RegistryView) -> None:
    # core/model.schema.json lives in the shared conformance material: skipped (and counted) without it
    schema = json.loads((conformance_dir("xregistry", "spec", "core") / "model.schema.json").read_text())
    assert list(jsonschema.Draft7Validator(schema).iter_errors(ok(view, "/model"))) == []


# -- 8. epoch never goes backwards, createdat stable across restarts (core spec `epoch`, `createdat`) ----------------

def _edit(config: Path, source: str) -> None:
    write_doc(config, "orders.xreg.json", orders_document(source))


def test_8_epochs_and_createdat_survive_a_restart(tmp_path: Path) -> None:
    config, state = write_registry(tmp_path / "config"), tmp_path / "state"
    first = RegistryView(load_snapshot([config]), StateFile(state))
    placed = "/messagegroups/orders/messages/placed"
    before = ok(first, placed)
    _edit(config, "/elsewhere/{shop}")
    first.update(load_snapshot([config]))
    edited = ok(first, placed)
    assert edited["epoch"] == 2 and edited["createdat"] == before["createdat"]

    restarted = RegistryView(load_snapshot([config]), StateFile(state))  # a new process: the same state
    again = ok(restarted, placed)
    assert (again["epoch"], again["createdat"], again["modifiedat"]) == \
        (2, before["createdat"], edited["modifiedat"])
    assert ok(restarted)["createdat"] == ok(first)["createdat"]

    _edit(config, "/third/{shop}")  # changed while xgate was down: the next epoch, never 1
    assert ok(RegistryView(load_snapshot([config]), StateFile(state)), placed)["epoch"] == 3


def test_8_a_broken_state_file_is_set_aside_and_never_stops_the_api(tmp_path: Path) -> None:
    config, state = write_registry(tmp_path / "config"), tmp_path / "state"
    state.mkdir()
    (state / "registry-state.json").write_text("{not json")
    assert ok(RegistryView(load_snapshot([config]), StateFile(state)))["epoch"] == 1
    assert (state / "registry-state.broken").read_text() == "{not json"
    assert json.loads((state / "registry-state.json").read_text())["format"] == 2  # stamps and the registry served with them


def test_8_the_state_directory_gateway_yaml_names_else_one_beside_the_config(tmp_path: Path) -> None:
    config = write_registry(tmp_path / "config")
    assert default_state_dir(config) == tmp_path / ".config.xgate-state"
    named = state_file(config, str(tmp_path / "elsewhere"))
    assert named is not None and named.path == tmp_path / "elsewhere" / "registry-state.json"
    (config / "gateway.yaml").write_text(f"registry: {{state_dir: {tmp_path / 'elsewhere'}}}\n")
    settings, problems = load_settings(config)
    assert not problems and settings.registry.state_dir == str(tmp_path / "elsewhere")
    # a parent no directory can be made in (a read-only mount): no state, the API still serves
    assert default_state_dir("/proc/self") is None and state_file("/proc/self", None) is None


# -- 9. message and schema attributes ----------------------------------------------------------------------------------

def test_9_served_messages_carry_dataschema_or_dataschemauri_never_both(tmp_path: Path) -> None:
    """message/spec.md: `dataschema` and `dataschemauri` exclude each other. A schema of this registry is served as
    the reference the document wrote (its schema groups are served too); a schema file is inlined."""
    config = write_registry(tmp_path / "config")
    (config / "reading.json").write_text(json.dumps(READING))
    orders = orders_document()
    orders["messagegroups"]["orders"]["messages"]["filed"] = {
        "envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "com.example.order.filed"}},
        "dataschemaformat": "JsonSchema/draft-07", "dataschemauri": "reading.json"}
    write_doc(config, "orders.xreg.json", orders)
    snapshot, view = view_of(config)
    everything = ok(view, "", inline="")
    messages = [m for plural in ("endpoints", "messagegroups") for g in everything[plural].values()
                for m in g["messages"].values()]
    assert len(messages) == 4 and all(not {"dataschema", "dataschemauri"} <= set(m) for m in messages)
    served = everything["messagegroups"]["orders"]["messages"]
    assert served["placed"]["dataschemauri"] == "/schemagroups/shop/schemas/reading"
    assert served["filed"]["dataschema"] == READING and "dataschemauri" not in served["filed"]
    # `xgate export --resolved` inlines every schema; the xid stays as `dataschemaxid`
    exported = registry_document(snapshot, resolved=True)["messagegroups"]["orders"]["messages"]["placed"]
    assert exported["dataschema"] == READING and "dataschemauri" not in exported
    assert exported["dataschemaxid"] == "/schemagroups/shop/schemas/reading"


def test_9_defaultversionurl_of_a_resource_with_a_document_ends_in_details(view: RegistryView) -> None:
    meta = ok(view, "/schemagroups/shop/schemas/reading/meta")
    assert meta["defaultversionurl"] == f"{BASE}/schemagroups/shop/schemas/reading/versions/2$details"
    assert ok(view, "/messagegroups/orders/messages/placed/meta")["defaultversionurl"] == \
        f"{BASE}/messagegroups/orders/messages/placed/versions/1"  # messages have no document


def test_9_a_text_document_inlined_is_schemabase64(view: RegistryView) -> None:
    ping = ok(view, "/schemagroups/shop/schemas/ping$details", inline="schema")
    assert "schema" not in ping and base64.b64decode(ping["schemabase64"]).decode() == PROTO
    assert ok(view, "/schemagroups/shop/schemas/reading$details", inline="schema")["schema"] == READING


# -- 10. what the documents declare is served and filterable ---------------------------------------------------------

DECLARED = {"name": "Orders", "documentation": "https://docs.example.com/orders", "labels": {"team": "platform"},
            "createdat": "2024-01-02T03:04:05Z", "modifiedat": "2024-02-03T04:05:06Z", "xcostcenter": "cc-42"}


def declaring_registry(directory: Path) -> Path:
    orders = orders_document()
    group = orders["messagegroups"]["orders"]
    group.update(DECLARED)
    group["messages"]["placed"].update(name="Placed", labels={"stage": "ga"}, xowner="shop-team")
    schemas = {"schemagroups": {"shop": {"labels": {"team": "data"}, "xtier": 1, "schemas": {"reading": {
        "format": "JsonSchema/draft-07", "name": "Reading", "description": "A reading",
        "versions": {"1": {"schema": READING, "labels": {"reviewed": "yes"}, "xlint": True,
                           "createdat": "2023-05-06T07:08:09Z"}}}}}}}
    return write_registry(directory, orders=orders, schemas=schemas)


def test_10_names_labels_documentation_timestamps_and_extensions_are_served(tmp_path: Path) -> None:
    _, view = view_of(declaring_registry(tmp_path / "config"))
    group = ok(view, "/messagegroups/orders")
    assert {k: group.get(k) for k in DECLARED} == DECLARED
    placed = ok(view, "/messagegroups/orders/messages/placed")
    assert (placed["name"], placed["labels"], placed["xowner"]) == ("Placed", {"stage": "ga"}, "shop-team")
    shop = ok(view, "/schemagroups/shop")
    assert (shop["labels"], shop["xtier"]) == ({"team": "data"}, 1)
    reading = ok(view, "/schemagroups/shop/schemas/reading$details")
    assert (reading["name"], reading["description"], reading["labels"], reading["xlint"], reading["createdat"]) == \
        ("Reading", "A reading", {"reviewed": "yes"}, True, "2023-05-06T07:08:09Z")


def test_10_declared_attributes_are_filterable(tmp_path: Path) -> None:
    _, view = view_of(declaring_registry(tmp_path / "config"))
    root = ok(view, "", filter="messagegroups.labels.team=platform")
    assert root["messagegroupscount"] == 1 and root["schemagroupscount"] == 0
    assert list(ok(view, "/messagegroups", filter="labels.team=platform")) == ["orders"]
    assert ok(view, "/messagegroups", filter="labels.team=nobody") == {}
    assert list(ok(view, "/messagegroups/orders/messages", filter="xowner=shop-team")) == ["placed"]
    assert list(ok(view, "/schemagroups/shop/schemas", filter="labels.reviewed=yes")) == ["reading"]


# -- 11. the root Link header and the spec's error types ----------------------------------------------------------------

def test_11_every_response_carries_the_xregistry_root_link(view: RegistryView) -> None:
    access = MetricsSettings(username="reader", password="s3cret")
    token = {"Authorization": "Basic " + base64.b64encode(b"reader:s3cret").decode()}

    async def scenario() -> list[tuple[int, dict[str, str], bytes]]:
        async with serving(view, access) as server:
            return [await http(server, method, path, headers) for method, path, headers in (
                ("GET", "/registry", token), ("GET", "/registry/endpoints/nope", token),
                ("GET", "/registry?filter=name<*x*", token), ("PUT", "/registry/endpoints", token),
                ("OPTIONS", "/registry/endpoints", token), ("GET", "/registry/schemagroups/shop/schemas/ping", token),
                ("GET", "/registry/schemagroups/shop/schemas/remote", token), ("GET", "/registry", {}))]
    answers = run(scenario)
    assert [status for status, _, _ in answers] == [200, 404, 400, 405, 200, 200, 303, 401]
    for _, headers, _ in answers:
        assert headers["Link"].startswith("<http://127.0.0.1:") and headers["Link"].endswith("/registry>;rel=xregistry-root")


@pytest.mark.parametrize("text", ["endpoints.name<*x*", "endpoints.description>=a*", "epoch>abc", "epoch=ten",
                                  "excludeall,endpoints.name=x", "endpoints.name=x,excludeall"])
def test_11_bad_filter(view: RegistryView, text: str) -> None:
    status, body = ask(view, "", filter=text)
    assert status == 400 and body["type"] == SPEC_ERRORS + "bad_filter", body


@pytest.mark.parametrize("path", ["/schemagroups/shop/schemas/reading/meta$details",
                                  "/schemagroups/shop/schemas/reading/versions$details",
                                  "/messagegroups/orders/messages/placed/versions$details",
                                  "/schemagroups/shop/schemas$details", "/endpoints$details",
                                  "/schemagroups/shop/schemas/reading$details/versions"])
def test_11_details_anywhere_but_after_a_resource_or_version_id_is_bad_details(view: RegistryView, path: str) -> None:
    status, body = ask(view, path)
    assert status == 400 and body["type"] == SPEC_ERRORS + "bad_details" and body["subject"] == "/registry" + path


@pytest.mark.parametrize("method", ["GET", "PUT", "POST", "PATCH", "DELETE", "OPTIONS"])
def test_11_any_method_on_an_unknown_path_is_api_not_found(view: RegistryView, method: str) -> None:
    async def scenario() -> tuple[int, dict[str, str], bytes]:
        async with serving(view) as server:
            return await http(server, method, "/registry/nope/x")
    status, _, body = run(scenario)
    assert status == 404 and json.loads(body)["type"] == HTTP_ERRORS + "api_not_found"


def test_11_inline_modelsource_is_not_available(view: RegistryView) -> None:
    status, body = ask(view, "", inline="modelsource")
    assert status == 400 and body["type"] == SPEC_ERRORS + "not_available" and body["subject"] == "modelsource"


# -- 12. self URLs behind a proxy; the API at the root of an address of its own ------------------------------------------

def test_12_base_url_makes_the_self_urls(view: RegistryView) -> None:
    settings = RegistrySettings(base_url="https://xgate.example.com/api/registry/")

    async def scenario() -> tuple[int, dict[str, str], bytes]:
        async with serving(view, registry=settings) as server:
            return await http(server, "GET", "/registry", {"Host": "10.0.0.7:9464"})
    status, headers, body = run(scenario)
    root = json.loads(body)
    assert status == 200 and root["self"] == "https://xgate.example.com/api/registry/"
    assert root["endpointsurl"] == "https://xgate.example.com/api/registry/endpoints"
    assert headers["Link"] == "<https://xgate.example.com/api/registry>;rel=xregistry-root"


def test_12_an_address_of_its_own_serves_the_registry_at_its_root(view: RegistryView) -> None:
    """xids are relative to the registry's root: joined onto this address they name the entity (xrcg does so)."""
    async def scenario() -> list[Any]:
        async with serving(view, registry=RegistrySettings(address="127.0.0.1:0")) as server:
            root = f"http://127.0.0.1:{server.registry_port}"
            own = await http(server, "GET", "/", port=server.registry_port)
            everything = json.loads((await http(server, "GET", "/?inline", port=server.registry_port))[2])
            xids = [m["dataschemauri"] for g in everything["messagegroups"].values() for m in g["messages"].values()
                    if "dataschemauri" in m]
            found = [json.loads((await http(server, "GET", x + "$details", port=server.registry_port))[2])
                     for x in xids]
            prefixed = await http(server, "GET", "/registry")
            return [root, own, xids, found, prefixed]
    root, own, xids, found, prefixed = run(scenario)
    assert own[0] == 200 and json.loads(own[2])["self"] == root + "/"
    assert own[1]["Link"] == f"<{root}>;rel=xregistry-root"
    assert xids and [f["xid"] for f in found] == xids
    assert prefixed[0] == 200  # /registry on the metrics address still answers


def test_12_registry_settings_are_checked(tmp_path: Path) -> None:
    (tmp_path / "gateway.yaml").write_text(
        "registry: {base_url: 'ftp://x', address: 'nowhere', state_dir: 5, other: 1}\n")
    settings, problems = load_settings(tmp_path)
    text = "\n".join(str(p) for p in problems)
    for pointer in ("/registry/base_url", "/registry/address", "/registry/state_dir", "/registry/other"):
        assert pointer in text, text
    assert settings.registry == RegistrySettings()
    (tmp_path / "gateway.yaml").write_text(
        "registry: {base_url: 'https://x.example/r', address: '127.0.0.1:9465', state_dir: /var/lib/xgate}\n")
    settings, problems = load_settings(tmp_path)
    assert not problems and settings.registry == RegistrySettings("https://x.example/r", "127.0.0.1:9465",
                                                                  "/var/lib/xgate")


def test_12_an_endpoints_group_references_resolve_on_the_own_root(tmp_path: Path) -> None:
    """The endpoint's `messagegroups` entries are xids: on the address of its own, each answers its group."""
    _, view = view_of(write_registry(tmp_path / "config"))

    async def scenario() -> list[int]:
        async with serving(view, registry=RegistrySettings(address="127.0.0.1:0")) as server:
            endpoint = json.loads((await http(server, "GET", "/endpoints/orders.in", port=server.registry_port))[2])
            return [(await http(server, "GET", ref, port=server.registry_port))[0]
                    for ref in endpoint["messagegroups"]]
    assert run(scenario) == [200]


def test_10_older_generations_give_their_common_attributes_and_export_keeps_them(tmp_path: Path) -> None:
    """A 0.5-wip document's other keys are its own spelling of what the loader translated: only the common
    attributes are taken from it. `xgate export` (declared) drops nothing either."""
    config = tmp_path / "config"
    write_doc(config, "old.xreg.json", {"messagegroups": {"g": {
        "name": "G", "labels": {"team": "platform"}, "xother": 1, "messages": {"m": {
            "format": "CloudEvents/1.0", "name": "M", "metadata": {"attributes": {"type": {"value": "t"}}}}}}}})
    snapshot, view = view_of(config)
    group = ok(view, "/messagegroups/g")
    assert (group["name"], group["labels"], "xother" in group) == ("G", {"team": "platform"}, False)
    message = ok(view, "/messagegroups/g/messages/m")
    assert message["name"] == "M" and not {"format", "metadata"} & set(message)
    declared = registry_document(snapshot, resolved=False)["messagegroups"]["g"]
    assert (declared["name"], declared["labels"], declared["messages"]["m"]["name"]) == \
        ("G", {"team": "platform"}, "M")
