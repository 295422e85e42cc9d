"""What /registry serves has the shapes of the spec: the Group and Resource types and attribute types of the
endpoint, message and schema model.json files, and the core attributes of every entity (core spec "Registry
Entity", "Group Entity", "Resource Entity", "Meta Entity", "Version Entity", "Registry Collections")."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gateway.loader import load_snapshot
from gateway.registry_api import RegistryView
from gateway.registry_api.registry_model import MODEL
from gateway.registry_api.tree import GROUP_TYPES
from tests.conftest import ABSENT_HINT
from tests.unit.registry_api.registry import write_registry
from tests.unit.registry_api.support import BASE, SPEC, ok

if not SPEC.is_dir():
    pytest.skip(f"xRegistry spec not found at {SPEC} ({ABSENT_HINT})",
                allow_module_level=True)

TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "uri": (str,), "url": (str,), "urireference": (str,), "uritemplate": (str,), "xid": (str,),
    "timestamp": (str,), "integer": (int,), "uinteger": (int,), "decimal": (int, float), "boolean": (bool,),
    "array": (list,), "object": (dict,), "map": (dict,)}


def spec_groups() -> dict[str, Any]:
    """The Group types of the endpoint, message and schema specs, `$include`s and imported Resources followed."""
    message = json.loads((SPEC / "message" / "model.json").read_text("utf-8"))["groups"]
    endpoint = json.loads((SPEC / "endpoint" / "model.json").read_text("utf-8"))["groups"]
    schema = json.loads((SPEC / "schema" / "model.json").read_text("utf-8"))["groups"]
    endpoints = dict(endpoint["endpoints"])
    endpoints["resources"] = {"messages": message["messagegroups"]["resources"]["messages"]}
    assert endpoints["ximportresources"] == ["/messagegroups/messages"]
    return {"endpoints": endpoints, "messagegroups": message["messagegroups"], "schemagroups": schema["schemagroups"]}


def declared_types(model: dict[str, Any]) -> dict[str, str]:
    return {name: attr["type"] for name, attr in model.get("attributes", {}).items() if name != "*"}


def test_group_and_resource_types_are_the_specs() -> None:
    groups = spec_groups()
    assert [g.plural for g in GROUP_TYPES] == list(groups) == list(MODEL["groups"])
    for gtype in GROUP_TYPES:
        spec = groups[gtype.plural]
        assert gtype.singular == spec["singular"]
        assert [r.plural for r in gtype.resources] == list(spec["resources"])
        for rtype in gtype.resources:
            rspec = spec["resources"][rtype.plural]
            assert rtype.singular == rspec["singular"]
            assert rtype.hasdocument is rspec.get("hasdocument", True)  # model.md: the default is true
            assert rtype.maxversions == rspec.get("maxversions", 0)


def test_the_served_model_declares_the_specs_attributes_with_their_types() -> None:
    groups = spec_groups()
    for plural, spec in groups.items():
        ours = MODEL["groups"][plural]
        assert ours["singular"] == spec["singular"]
        assert declared_types(spec).items() <= declared_types(ours).items(), plural
        for rplural, rspec in spec["resources"].items():
            rours = (ours.get("resources") or MODEL["groups"]["messagegroups"]["resources"])[rplural]
            assert declared_types(rspec).items() <= declared_types(rours).items(), f"{plural}.{rplural}"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Everything of the spec's scenario samples and of a registry with a basemessage, inlined."""
    folder = tmp_path_factory.mktemp("shapes")
    write_registry(folder / "ours")
    for sample in sorted((SPEC / "cloudevents" / "samples" / "scenarios").glob("*.json")):
        (folder / sample.name).write_bytes(sample.read_bytes())
    served: dict[str, Any] = ok(RegistryView(load_snapshot([folder])), "", inline="*")
    return served


def check_core(entity: dict[str, Any], singular: str, xid: str) -> None:
    if singular != "registry":
        assert entity[f"{singular}id"] == xid.rsplit("/", 1)[-1]
    assert entity["xid"] == xid
    assert isinstance(entity["self"], str) and entity["self"].startswith(BASE + xid.rstrip("/"))
    assert type(entity["epoch"]) is int and entity["epoch"] >= 1
    assert TIMESTAMP.match(entity["createdat"]) and TIMESTAMP.match(entity["modifiedat"])


def check_collection(entity: dict[str, Any], plural: str, xid: str) -> None:
    assert entity[f"{plural}url"] == BASE + xid.rstrip("/") + "/" + plural
    assert type(entity[f"{plural}count"]) is int and entity[f"{plural}count"] == len(entity[plural])


def check_attributes(entity: dict[str, Any], types: dict[str, str], where: str) -> None:
    for name, kind in types.items():
        if name in entity and kind in PYTHON_TYPES:
            value = entity[name]
            assert isinstance(value, PYTHON_TYPES[kind]) and not (kind != "boolean" and isinstance(value, bool)), \
                f"{where}.{name}: {value!r} is not a {kind}"


def test_every_served_entity_has_the_core_attributes_and_the_model_types(served: dict[str, Any]) -> None:
    groups = spec_groups()
    check_core(served, "registry", "/")
    assert served["specversion"] == "1.0-rc4" and served["registryid"] == "xgate"
    seen = {"group": 0, "resource": 0, "version": 0}
    for gtype in GROUP_TYPES:
        check_collection(served, gtype.plural, "/")
        for gid, group in served[gtype.plural].items():
            gxid = f"/{gtype.plural}/{gid}"
            check_core(group, gtype.singular, gxid)
            check_attributes(group, declared_types(groups[gtype.plural]), gxid)
            seen["group"] += 1
            for rtype in gtype.resources:
                check_collection(group, rtype.plural, gxid)
                rtypes = declared_types(groups[gtype.plural]["resources"][rtype.plural])
                for rid, resource in group[rtype.plural].items():
                    rxid = f"{gxid}/{rtype.plural}/{rid}"
                    check_core(resource, rtype.singular, rxid)
                    check_attributes(resource, rtypes, rxid)
                    assert resource["isdefault"] is True and resource["versionid"] in resource["versions"]
                    assert resource["metaurl"] == BASE + rxid + "/meta"
                    assert resource["self"].endswith("$details") is rtype.hasdocument
                    meta = resource["meta"]
                    assert meta["xid"] == rxid + "/meta" and meta[f"{rtype.singular}id"] == rid
                    assert meta["self"] == BASE + rxid + "/meta" and type(meta["epoch"]) is int
                    assert TIMESTAMP.match(meta["createdat"]) and TIMESTAMP.match(meta["modifiedat"])
                    assert meta["defaultversionid"] == resource["versionid"] and type(meta["readonly"]) is bool
                    check_collection(resource, "versions", rxid)
                    seen["resource"] += 1
                    for vid, version in resource["versions"].items():
                        vxid = f"{rxid}/versions/{vid}"
                        check_core(version, "version", vxid)
                        check_attributes(version, rtypes, vxid)
                        assert version[f"{rtype.singular}id"] == rid and type(version["isdefault"]) is bool
                        assert version["ancestorid"] in resource["versions"]
                        seen["version"] += 1
    assert seen["group"] > 20 and seen["resource"] > 50 and seen["version"] > seen["resource"]


def test_schema_versions_carry_a_format_and_exactly_one_of_their_document_attributes(served: dict[str, Any]) -> None:
    """schema/schemas/document-schema.json: a version has a `format` and one of schema, schemabase64, schemaurl."""
    for group in served["schemagroups"].values():
        for schema in group["schemas"].values():
            for version in schema["versions"].values():
                assert isinstance(version.get("format"), str), version["xid"]
                assert len({"schema", "schemabase64", "schemaurl"} & set(version)) == 1, version["xid"]


def test_the_shapes_hold_for_the_repository_demo(tmp_path: Path) -> None:
    demo = Path(__file__).resolve().parents[3] / "config" / "demo"
    served = ok(RegistryView(load_snapshot([demo])), "", inline="*")
    assert served["endpointscount"] == len(served["endpoints"]) > 5
    for endpoint in served["endpoints"].values():
        check_attributes(endpoint, declared_types(spec_groups()["endpoints"]), endpoint["xid"])
