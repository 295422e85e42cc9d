"""`?filter` as the core spec's "Filter Flag" and the HTTP binding's `?filter` define it.

Values compare case-insensitively and exactly (`*` is the wildcard, there is no implicit substring match),
attribute names case-sensitively; expressions in one `filter` are ANDed (also across levels: the leaves
must satisfy every expression along their path), several `filter` parameters are ORed; counts count and
URLs carry what the filters select, `excludeall` an empty selection.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.registry_api import RegistryView
from gateway.registry_api.query import wildcard_match
from tests.unit.registry_api.registry import write_registry
from tests.unit.registry_api.support import BASE, ask, ok, view_of

SPEC_ERRORS = "https://github.com/xregistry/spec/blob/main/core/spec.md#"


@pytest.fixture()
def view(tmp_path: Path) -> RegistryView:
    return view_of(write_registry(tmp_path))[1]


def counts(root: dict[str, Any]) -> tuple[int, int, int]:
    return root["endpointscount"], root["messagegroupscount"], root["schemagroupscount"]


def endpoints(view: RegistryView, *filters: str) -> list[str]:
    return sorted(ok(view, "", inline="endpoints", filter=list(filters)).get("endpoints", {}))


def test_a_match_narrows_the_collection_its_count_and_url(view: RegistryView) -> None:
    root = ok(view, "", filter="endpoints.description=*cool*", inline="endpoints")
    assert counts(root) == (1, 0, 0) and list(root["endpoints"]) == ["orders.in"]
    assert root["endpointsurl"] == f"{BASE}/endpoints?filter=description=*cool*"
    assert root["messagegroupsurl"] == f"{BASE}/messagegroups?filter=excludeall"
    assert root["schemagroupsurl"] == f"{BASE}/schemagroups?filter=excludeall"


def test_no_match_empties_every_collection(view: RegistryView) -> None:
    root = ok(view, "", filter="endpoints.description=*nothing like it*", inline="*")
    assert counts(root) == (0, 0, 0) and root["endpoints"] == {} and root["schemagroups"] == {}
    assert root["endpointsurl"] == f"{BASE}/endpoints?filter=excludeall"


def test_values_compare_case_insensitively_and_exactly(view: RegistryView) -> None:
    assert endpoints(view, "endpoints.description=*COOL*") == ["orders.in"]
    assert endpoints(view, "endpoints.description=the cool orders ENDPOINT") == ["orders.in"]
    assert endpoints(view, "endpoints.description=cool") == []  # no wildcard: the whole value
    assert endpoints(view, "endpoints.description=The*endpoint") == ["orders.in"]
    assert endpoints(view, "endpoints.labels.team=payments") == ["orders.in"]


def test_attribute_names_are_case_sensitive(view: RegistryView) -> None:
    assert endpoints(view, "endpoints.Description=*cool*") == []
    assert endpoints(view, "endpoints.labels.Team=payments") == []


def test_expressions_in_one_filter_are_anded_several_filters_ored(view: RegistryView) -> None:
    assert endpoints(view, "endpoints.labels.env=prod,endpoints.protocol=kafka") == ["orders.in"]
    assert endpoints(view, "endpoints.labels.env=prod,endpoints.protocol=nats") == []
    assert endpoints(view, "endpoints.labels.env=prod", "endpoints.labels.env=test") == ["orders.dlq", "orders.in"]
    root = ok(view, "", filter=["endpoints.labels.env=prod", "schemagroups.schemas.format=protobuf*"], inline="*")
    assert counts(root) == (1, 0, 1) and list(root["schemagroups"]["shop"]["schemas"]) == ["ping"]
    # the filter parameters' own URLs, each for its collection
    assert root["schemagroupsurl"] == f"{BASE}/schemagroups?filter=schemas.format=protobuf*"
    assert root["schemagroups"]["shop"]["schemasurl"] == f"{BASE}/schemagroups/shop/schemas?filter=format=protobuf*"


def test_and_across_levels_selects_leaves_on_one_path_like_the_spec_examples(view: RegistryView) -> None:
    """core spec, Filter Flag: `mygroups.mygroupid=g1,mygroups.myresources.myresourceid=r1` returns r1 only,
    while the same two expressions as two filters return all of g1 plus r1."""
    anded = ok(view, "", filter="messagegroups.messagegroupid=orders,messagegroups.messages.messageid=placed",
               inline="*")
    assert list(anded["messagegroups"]["orders"]["messages"]) == ["placed"]
    assert list(anded["messagegroups"]["orders"]["messages"]["placed"]["versions"]) == ["1"]  # below a leaf: all
    ored = ok(view, "", filter=["messagegroups.messagegroupid=orders", "messagegroups.messages.messageid=placed"],
              inline="*")
    assert list(ored["messagegroups"]["orders"]["messages"]) == ["cancelled", "placed"]
    assert ored["messagegroups"]["orders"]["messagesurl"] == f"{BASE}/messagegroups/orders/messages"
    deeper = ok(view, "", filter="schemagroups.schemas.versions.isdefault=true", inline="*")
    assert {s: list(v["versions"]) for s, v in deeper["schemagroups"]["shop"]["schemas"].items()} == \
        {"ping": ["1"], "reading": ["2"], "remote": ["1"]}


def test_expressions_on_different_branches_in_one_filter_select_nothing(view: RegistryView) -> None:
    root = ok(view, "", filter="endpoints.protocol=kafka,schemagroups.schemagroupid=shop")
    assert counts(root) == (0, 0, 0)


def test_operators_null_and_presence(view: RegistryView) -> None:
    assert endpoints(view, "endpoints.labels.team") == ["orders.in"]  # present, not null
    assert endpoints(view, "endpoints.labels.team=null") == ["orders.dlq"]  # absent
    assert endpoints(view, "endpoints.labels.team!=null") == ["orders.in"]
    assert endpoints(view, "endpoints.labels.env!=prod") == ["orders.dlq"]
    assert endpoints(view, "endpoints.labels.env<>PROD") == ["orders.dlq"]
    assert endpoints(view, "endpoints.description>e") == ["orders.in"]  # "the cool..." > "e" > "dead letters"
    assert endpoints(view, "endpoints.usage[*]=producer") == ["orders.dlq"]
    assert endpoints(view, "endpoints.usage[0]=consumer") == ["orders.in"]
    assert endpoints(view, "endpoints.labels.*=payments") == ["orders.in"]
    assert endpoints(view, "endpoints['endpointid']=orders.dlq") == ["orders.dlq"]


def test_numbers_compare_as_numbers_and_booleans_exactly(view: RegistryView) -> None:
    schemas = ok(view, "/schemagroups/shop/schemas", filter="versionscount>1")
    assert list(schemas) == ["reading"]
    assert list(ok(view, "/schemagroups/shop/schemas", filter="versionscount>=1")) == ["ping", "reading", "remote"]
    assert list(ok(view, "/schemagroups/shop/schemas", filter="versionscount=2.0")) == ["reading"]
    assert list(ok(view, "/schemagroups/shop/schemas/reading/versions", filter="isdefault=true")) == ["2"]
    assert ok(view, "/schemagroups/shop/schemas/reading/versions", filter="isdefault=TRUE") == {}
    assert list(ok(view, "/schemagroups/shop/schemas/reading/versions", filter="versionid=1")) == ["1"]


def test_meta_attributes_are_reached_through_meta(view: RegistryView) -> None:
    root = ok(view, "", filter="endpoints.messages.meta.readonly=true", inline="endpoints.messages")
    assert list(root["endpoints"]) == ["orders.in"] and list(root["endpoints"]["orders.in"]["messages"]) == ["ping"]


def test_a_filter_on_a_collection_request_is_relative_to_its_members(view: RegistryView) -> None:
    assert list(ok(view, "/endpoints", filter="description=*CooL*")) == ["orders.in"]
    group = ok(view, "/schemagroups/shop", filter="schemas.format=protobuf*")
    assert group["schemascount"] == 1 and group["schemasurl"] == f"{BASE}/schemagroups/shop/schemas?filter=format=protobuf*"


def test_an_entity_that_does_not_match_its_own_expression_is_not_found(view: RegistryView) -> None:
    status, body = ask(view, "", filter="description=no-match")
    assert status == 404 and body["type"] == SPEC_ERRORS + "not_found" and body["subject"] == "/"
    assert ask(view, "/endpoints/orders.in", filter="protocol=nats")[0] == 404
    assert ask(view, "/endpoints/orders.in", filter="protocol=KAFKA")[0] == 200
    assert ask(view, "/endpoints/orders.in", filter=["protocol=nats", "protocol=kafka"])[0] == 200
    assert ask(view, "", filter="endpoints.protocol=nats")[0] == 200  # a deeper expression never 404s the target


def test_excludeall(view: RegistryView) -> None:
    assert ok(view, "/endpoints", filter="excludeall") == {}
    assert ask(view, "/endpoints/orders.in", filter="excludeall")[0] == 404
    status, body = ask(view, "/endpoints", filter=["excludeall", "protocol=kafka"])
    assert status == 400 and body["type"] == SPEC_ERRORS + "bad_filter"


@pytest.mark.parametrize("text", ["endpoints.", "endpoints[x]=1", "endpoints.description<null", "endpoints",
                                  "endpoints.protocol=kafka,", ".protocol", "endpoints.protocol!kafka"])
def test_an_invalid_expression_is_bad_filter(view: RegistryView, text: str) -> None:
    status, body = ask(view, "", filter=text)
    assert status == 400 and body["type"] == SPEC_ERRORS + "bad_filter", body
    assert body["subject"] == "/registry" and "value" in body["args"] and body["args"]["error_detail"]


@pytest.mark.parametrize(("pattern", "value", "expected"), [
    ("abc", "ABC", True), ("a*c", "abbbc", True), ("a*c", "abd", False), ("*", "", True), ("a*", "a", True),
    ("*b*", "abc", True), ("*b*", "ac", False), ("a*b*c", "acbc", True), ("a*b*c", "ac", False),
    (r"a\*c", "a*c", True), (r"a\*c", "abc", False), ("ab*ba", "aba", False), ("**", "x", True)])
def test_wildcards(pattern: str, value: str, expected: bool) -> None:
    assert wildcard_match(pattern, value) is expected


def test_a_long_wildcard_pattern_takes_linear_time() -> None:
    assert not wildcard_match("*a" * 2000 + "*b", "a" * 100_000)
