"""Conformance of the read-only registry API to the xRegistry 1.0-rc4 HTTP binding (core/http.md), section by
section. Each test names the section it checks in its name and docstring. Requirements on writes (PUT, POST,
PATCH, DELETE, `?ignore`, `?setdefaultversionid`, headers on requests) do not apply to a read-only server
beyond answering `action_not_supported`; optional features xgate does not offer (pagination, `?sort`,
`?doc`, `/export`, `/modelsource`, `/capabilitiesoffered`, `/.xregistry`) are checked to be refused or
ignored as the binding says. The HTTP layer runs on a real server on 127.0.0.1; bodies alone are answered
in-process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.registry_api import RegistryView
from tests.unit.registry_api.registry import PROTO, READING, schemas_document, write_registry
from tests.unit.registry_api.support import BASE, ask, http, ok, run, serving, view_of

JSON_UTF8 = "application/json; charset=utf-8"
SPEC_ERRORS = "https://github.com/xregistry/spec/blob/main/core/spec.md#"
HTTP_ERRORS = "https://github.com/xregistry/spec/blob/main/core/http.md#"
METHODS = ("GET", "HEAD", "OPTIONS")


def _registry(directory: Path) -> Path:
    schemas = schemas_document()
    reading = schemas["schemagroups"]["shop"]["schemas"]["reading"]
    reading["versions"]["2"].update(labels={"team": "data", "tier.level": "gold"},
                                    description='Euro \u20ac "quoted" 100% \U0001F600')
    schemas["schemagroups"]["shop"]["schemas"]["typed"] = {"format": "Protobuf/3", "versions": {
        "1": {"schema": PROTO, "contenttype": "application/x-protobuf"}}}
    return write_registry(directory, schemas=schemas)


@pytest.fixture()
def view(tmp_path: Path) -> RegistryView:
    return view_of(_registry(tmp_path / "config"))[1]


def _fetch(view: RegistryView, requests: list[tuple[str, str]]) -> list[tuple[int, dict[str, str], bytes]]:
    async def scenario() -> list[tuple[int, dict[str, str], bytes]]:
        async with serving(view) as server:
            return [await http(server, method, path) for method, path in requests]
    return run(scenario)


def _urls(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [u for k, v in value.items() for u in ([v] if k == "self" or k.endswith("url") and
                                                      isinstance(v, str) and k != "schemaurl" else _urls(v))]
    return []


def test_http_api_patterns_one_prefix_unknown_paths_and_unsupported_methods(view: RegistryView) -> None:
    """"HTTP API Patterns": one prefix for every API; an optional path not supported is `api_not_found`
    (any method); a method not supported on a supported path is `action_not_supported`, with `Allow`
    (core/spec.md "action_not_supported")."""
    everything = ok(view, "", inline="*")
    assert all(url.startswith(BASE + "/") for url in _urls(everything))
    answers = _fetch(view, [("GET", p) for p in ("/registry/export", "/registry/modelsource",
                                                 "/registry/capabilitiesoffered", "/registry/.xregistry")]
                     + [("POST", "/registry/export"), ("PATCH", "/registry/endpoints/orders.in"),
                        ("DELETE", "/registry/schemagroups/shop/schemas/reading/versions/1"),
                        ("PUT", "/registry/model")])
    for status, _, body in answers[:5]:
        assert status == 404 and json.loads(body)["type"] == HTTP_ERRORS + "api_not_found"
    for status, headers, body in answers[5:]:
        assert status == 405 and headers["Allow"] == ", ".join(METHODS)
        assert json.loads(body)["type"] == SPEC_ERRORS + "action_not_supported"


def test_adherence_to_http_standards_unknown_query_parameters_are_ignored(view: RegistryView) -> None:
    """"Adherence to HTTP Standards": unknown query parameters, spec-defined but unsupported ones included
    (`?sort`, `?doc`, `?binary`), are silently ignored."""
    plain = ok(view, "/endpoints")
    assert ok(view, "/endpoints", sort="endpointid=desc", doc="", binary="", nonsense="1") == plain


def test_xregistry_root_http_header_on_every_response(view: RegistryView) -> None:
    """"xRegistry Root HTTP Header": `Link: <root>;rel=xregistry-root` on all responses, errors included."""
    answers = _fetch(view, [("GET", "/registry/endpoints"), ("GET", "/registry/nope"), ("HEAD", "/registry"),
                            ("GET", "/registry/schemagroups/shop/schemas/reading")])
    roots = {headers["Link"] for _, headers, _ in answers}
    assert len(roots) == 1 and roots.pop().endswith("/registry>;rel=xregistry-root")


def test_self_attribute_has_details_exactly_when_the_resource_has_a_document(view: RegistryView) -> None:
    """"`self` Attribute": Resources and Versions with a document: `$details` in `self`, even if the request
    had none; without a document never, even if the request used it ("Resource Metadata vs Resource Document")."""
    schemas = ok(view, "/schemagroups/shop/schemas", inline="versions")
    assert schemas["reading"]["self"] == f"{BASE}/schemagroups/shop/schemas/reading$details"
    assert schemas["reading"]["versions"]["1"]["self"] == f"{BASE}/schemagroups/shop/schemas/reading/versions/1$details"
    placed = ok(view, "/messagegroups/orders/messages/placed$details")
    assert placed == ok(view, "/messagegroups/orders/messages/placed")
    assert placed["self"] == f"{BASE}/messagegroups/orders/messages/placed"


def test_labels_contenttype_and_document_attributes_as_headers(view: RegistryView) -> None:
    """"`labels` Attribute": one `xRegistry-labels.<KEY>` header per label; "`contenttype` Attribute":
    `Content-Type`, not `xRegistry-contenttype`; "`<RESOURCE>`"/"`<RESOURCE>base64` Attribute": never headers."""
    (_, reading, _), (_, typed, body) = _fetch(view, [("GET", "/registry/schemagroups/shop/schemas/reading"),
                                                      ("GET", "/registry/schemagroups/shop/schemas/typed")])
    assert reading["xRegistry-labels.team"] == "data" and reading["xRegistry-labels.tier.level"] == "gold"
    assert typed["Content-Type"] == "application/x-protobuf" and "xRegistry-contenttype" not in typed
    assert body == PROTO.encode()
    for headers in (reading, typed):
        assert not {"xRegistry-schema", "xRegistry-schemabase64"} & set(headers)


def test_pagination_is_not_offered(view: RegistryView) -> None:
    """"Pagination": optional; the capabilities say it is off, so collections come whole."""
    assert ok(view, "/capabilities")["pagination"] is False
    assert len(ok(view, "/schemagroups/shop/schemas")) == ok(view, "/schemagroups/shop")["schemascount"]


def test_http_options_method(view: RegistryView) -> None:
    """"HTTP OPTIONS Method": 200 with the same methods in `Allow` and `Access-Control-Allow-Methods`,
    OPTIONS among them."""
    for status, headers, _ in _fetch(view, [("OPTIONS", "/registry"), ("OPTIONS", "/registry/endpoints/orders.in"),
                                            ("OPTIONS", "/registry/schemagroups/shop/schemas/reading/versions")]):
        assert status == 200 and headers["Allow"] == headers["Access-Control-Allow-Methods"]
        assert "OPTIONS" in [m.strip() for m in headers["Allow"].split(",")]


def test_get_root_capabilities_and_model_are_json(view: RegistryView) -> None:
    """"`GET /`", "`GET /capabilities`", "`GET /model`" (a MUST): 200, `application/json; charset=utf-8`."""
    answers = _fetch(view, [("GET", "/registry"), ("GET", "/registry/capabilities"), ("GET", "/registry/model")])
    for status, headers, _ in answers:
        assert status == 200 and headers["Content-Type"] == JSON_UTF8
    root, capabilities, model = (json.loads(body) for _, _, body in answers)
    assert root["specversion"] == "1.0-rc4" and root["xid"] == "/"
    assert capabilities["specversions"] == ["1.0-rc4"] and capabilities["available"]["model"] == {"mutable": False}
    assert set(model["groups"]) == {"endpoints", "messagegroups", "schemagroups"}


def test_get_groups_group_resources_resource_meta_versions_version(view: RegistryView) -> None:
    """"`GET /<GROUPS>`" ... "`GET /<GROUPS>/<GID>/<RESOURCES>/<RID>/versions/<VID>`": collections are maps
    keyed by id, entities carry their ids and xids; all JSON (`application/json; charset=utf-8`)."""
    paths = ["/registry/schemagroups", "/registry/schemagroups/shop", "/registry/schemagroups/shop/schemas",
             "/registry/schemagroups/shop/schemas/reading$details", "/registry/schemagroups/shop/schemas/reading/meta",
             "/registry/schemagroups/shop/schemas/reading/versions",
             "/registry/schemagroups/shop/schemas/reading/versions/1$details"]
    answers = _fetch(view, [("GET", p) for p in paths])
    assert all(status == 200 and headers["Content-Type"] == JSON_UTF8 for status, headers, _ in answers)
    groups, group, schemas, schema, meta, versions, version = (json.loads(body) for _, _, body in answers)
    assert list(groups) == ["shop"] and group["schemagroupid"] == "shop" and "reading" in schemas
    assert (schema["schemaid"], schema["versionid"], schema["xid"]) == ("reading", "2", "/schemagroups/shop/schemas/reading")
    assert meta["xid"] == "/schemagroups/shop/schemas/reading/meta" and list(versions) == ["1", "2"]
    assert (version["versionid"], version["isdefault"]) == ("1", False)


def test_resource_metadata_vs_document_and_details_elsewhere(view: RegistryView) -> None:
    """"Resource Metadata vs Resource Document": `$details` asks for metadata, its absence for the document;
    `$details` on anything but a Resource (or Version) is `bad_details`."""
    assert ask(view, "/schemagroups/shop/schemas/reading")[1] == READING
    assert ask(view, "/schemagroups/shop/schemas/reading$details")[1]["schemaid"] == "reading"
    for path in ("/schemagroups/shop$details", "/schemagroups/shop/schemas/reading/meta$details",
                 "/schemagroups/shop/schemas/reading/versions$details"):
        status, body = ask(view, path)
        assert status == 400 and body["type"] == SPEC_ERRORS + "bad_details", path


def test_serializing_resource_documents(view: RegistryView) -> None:
    """"Serializing Resource Domain-Specific Documents" and "`GET .../<RID>`": the exact bytes; the default
    Version's scalars and the Resource's `metaurl`/`versionsurl`/`versionscount` as `xRegistry-` headers,
    the Resource's id, self and xid; `Content-Location` the default Version; `Content-Disposition` the id;
    a Version without the Resource-level headers; `303` to a `<RESOURCE>url`, with an empty body."""
    (_, resource, body), (_, version, _), (status, remote, empty) = _fetch(view, [
        ("GET", "/registry/schemagroups/shop/schemas/reading"),
        ("GET", "/registry/schemagroups/shop/schemas/reading/versions/1"),
        ("GET", "/registry/schemagroups/shop/schemas/remote")])
    assert json.loads(body) == READING
    assert (resource["xRegistry-schemaid"], resource["xRegistry-versionid"], resource["xRegistry-isdefault"]) == \
        ("reading", "2", "true")
    assert resource["xRegistry-self"].endswith("/registry/schemagroups/shop/schemas/reading$details")
    assert resource["xRegistry-xid"] == "/schemagroups/shop/schemas/reading"
    for name in ("epoch", "createdat", "modifiedat", "ancestorid", "format", "metaurl", "versionsurl", "versionscount"):
        assert f"xRegistry-{name}" in resource, name
    assert resource["Content-Location"].endswith("/registry/schemagroups/shop/schemas/reading/versions/2$details")
    assert resource["Content-Disposition"] == "reading"
    assert not {"xRegistry-meta", "xRegistry-versions"} & set(resource)
    assert version["xRegistry-versionid"] == "1" and version["xRegistry-isdefault"] == "false"
    assert not {"xRegistry-metaurl", "xRegistry-versionsurl", "xRegistry-versionscount"} & set(version)
    assert status == 303 and remote["Location"] == "https://schemas.example.com/x.avsc" and empty == b""
    assert remote["xRegistry-schemaurl"] == "https://schemas.example.com/x.avsc"


def test_request_flags_inline_repeats_and_lists(view: RegistryView) -> None:
    """"Request Flags", "`?inline` Flag": a list of paths in one parameter or several parameters; no value
    is `*`."""
    listed = ok(view, "", inline="endpoints,schemagroups")
    repeated = ok(view, "", inline=["endpoints", "schemagroups"])
    assert listed == repeated and {"endpoints", "schemagroups"} <= set(listed) and "messagegroups" not in listed
    assert ok(view, "", inline="") == ok(view, "", inline="*")


def test_filter_flag_and_within_or_across_with_counts_and_urls(view: RegistryView) -> None:
    """"`?filter` Flag": expressions in one parameter are ANDed, parameters ORed; counts count the result and
    collection URLs carry the filter (`excludeall` for an empty one)."""
    both = ok(view, "", filter="endpoints.endpointid=orders.in,endpoints.protocol=kafka")
    assert both["endpointscount"] == 1 and both["schemagroupsurl"] == f"{BASE}/schemagroups?filter=excludeall"
    either = ok(view, "", filter=["endpoints.endpointid=orders.in", "endpoints.endpointid=orders.dlq"])
    assert either["endpointscount"] == 2
    assert ok(view, "/endpoints", filter="excludeall") == {}


def test_http_header_values_are_percent_encoded(view: RegistryView) -> None:
    """"HTTP Header Values": space, `"`, `%` and anything outside printable ASCII percent-encoded (UTF-8,
    upper-case hex)."""
    [(_, headers, _)] = _fetch(view, [("GET", "/registry/schemagroups/shop/schemas/reading")])
    assert headers["xRegistry-description"] == "Euro%20%E2%82%AC%20%22quoted%22%20100%25%20%F0%9F%98%80"


def test_error_processing_problem_details(view: RegistryView) -> None:
    """"Error Processing" and "api_not_found": problem details as `application/json; charset=utf-8` with
    `type`, `title` and `subject`; `api_not_found`'s subject is the request's path."""
    answers = _fetch(view, [("GET", "/registry/endpoints/nope"), ("GET", "/registry/endpoints/orders.in/bogus"),
                            ("GET", "/registry?inline=nope")])
    for status, headers, body in answers:
        problem = json.loads(body)
        assert headers["Content-Type"] == JSON_UTF8 and {"type", "title", "subject"} <= set(problem)
        assert problem["title"].endswith(".")
    assert json.loads(answers[1][2])["subject"] == "/registry/endpoints/orders.in/bogus"
    assert [status for status, _, _ in answers] == [404, 404, 400]


def test_attribute_names_no_header_can_carry_stay_in_the_body(tmp_path: Path) -> None:
    """"Serializing Resource Domain-Specific Documents": scalar extension attributes become `xRegistry-` headers;
    one whose name is no valid header name (a document may write anything) stays in `$details`, and the
    document is still served."""
    schemas = schemas_document()
    schemas["schemagroups"]["shop"]["schemas"]["reading"]["versions"]["2"].update({"x odd": "1", "xfine": "2"})
    _, view = view_of(write_registry(tmp_path / "config", schemas=schemas))
    [(status, headers, body)] = _fetch(view, [("GET", "/registry/schemagroups/shop/schemas/reading")])
    assert status == 200 and json.loads(body) == READING and headers["xRegistry-xfine"] == "2"
    assert ok(view, "/schemagroups/shop/schemas/reading$details")["x odd"] == "1"
