"""gateway.yaml `schemaregistries`, and which `dataschemauri` values name a registry."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.schemaregistry import SchemaRegistrySettings, load_schema_registries
from gateway.schemaregistry.references import RegistryRef, parse_reference
from gateway.settings import load_settings


def _settings(tmp_path: Path, section: Any, **other: Any) -> tuple[Any, list[str]]:
    (tmp_path / "gateway.yaml").write_text(yaml.safe_dump({"schemaregistries": section, **other}))
    settings, problems = load_settings(tmp_path)
    return settings, [f"{d.pointer}: {d.message}" for d in problems]


def test_a_registry_with_credentials_from_the_environment_and_a_file(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XGATE_TEST_REGISTRY_USER", "xgate")
    (tmp_path / "secret").write_text("s3cret\n")
    settings, problems = _settings(tmp_path, {
        "main": {"url": "HTTPS://Registry.Example.com:443/apis/ccompat/v7/", "username": "${XGATE_TEST_REGISTRY_USER}",
                 "password_file": str(tmp_path / "secret"), "subjects": ["orders-value"]},
        "plain": {"url": "http://127.0.0.1:8081"}})
    assert problems == []
    main = settings.schemaregistries["main"]
    assert main == SchemaRegistrySettings("main", "https://registry.example.com/apis/ccompat/v7", "xgate", "s3cret",
                                          ("orders-value",))
    assert main.headers() == {"Authorization": "Basic " + base64.b64encode(b"xgate:s3cret").decode()}
    assert "s3cret" not in repr(main)
    assert settings.schemaregistries["plain"].headers() == {}


@pytest.mark.parametrize(("section", "problem"), [
    ({"main": {}}, "/schemaregistries/main/url: `url` is required"),
    ({"main": {"url": "ftp://host"}}, "is not an http(s) URL"),
    ({"main": {"url": "http://u:p@host"}}, "must not carry credentials"),
    ({"main": {"url": "http://host?x=1"}}, "must not have a query"),
    ({"main": {"url": "http://host", "username": "u"}}, "needs both a username and a password"),
    ({"main": {"url": "http://host", "password": "p", "password_file": "/x"}}, "either password or password_file"),
    ({"main": {"url": "http://host", "tls": {}}}, "/schemaregistries/main/tls: unknown setting"),
    ({"main": {"url": "http://host", "subjects": [1]}}, "expected a list of subject names"),
    ({"bad name": {"url": "http://host"}}, "must be letters, digits"),
    (["main"], "/schemaregistries: expected a mapping"),
])
def test_mistakes_are_settings_errors_and_leave_the_registry_out(tmp_path: Path, section: Any, problem: str) -> None:
    settings, problems = _settings(tmp_path, section)
    assert any(problem in p for p in problems), problems
    assert settings.schemaregistries == {}


def test_other_sections_are_untouched(tmp_path: Path) -> None:
    settings, problems = _settings(tmp_path, {"main": {"url": "http://127.0.0.1:1"}}, remote={"allow": ["127.0.0.1"]})
    assert problems == [] and settings.remote.allow == ("127.0.0.1",)


def test_the_offline_commands_read_the_section_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XGATE_TEST_REGISTRY_PASSWORD", "pw")
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump({"routes": [{"nonsense": 1}], "schemaregistries": {
        "main": {"url": "http://127.0.0.1:1", "username": "u", "password": "${XGATE_TEST_REGISTRY_PASSWORD}"}}}))
    registries, problems = load_schema_registries(path)
    assert problems == [] and registries["main"].password == "pw"  # the broken route is `xgate run`'s business


# -- references -------------------------------------------------------------------------------------------------
MAIN = SchemaRegistrySettings("main", "http://registry.test:8081", "u", "p")
CCOMPAT = SchemaRegistrySettings("apicurio", "https://apicurio.test/apis/ccompat/v7")
REGISTRIES = {"main": MAIN, "apicurio": CCOMPAT}


@pytest.mark.parametrize(("text", "expected"), [
    ("confluent://main/subjects/orders-value/versions/3",
     RegistryRef("confluent://main/subjects/orders-value/versions/3", "main", MAIN, "orders-value", 3)),
    ("confluent://MAIN/subjects/orders-value/versions/latest",
     RegistryRef("confluent://MAIN/subjects/orders-value/versions/latest", "MAIN", MAIN, "orders-value", None)),
    ("confluent://main/subjects/orders-value/versions/-1:com.example.Order",
     RegistryRef("confluent://main/subjects/orders-value/versions/-1:com.example.Order", "main", MAIN,
                 "orders-value", None, None, "com.example.Order")),
    ("confluent://main/subjects/a%2Fb/versions/1",
     RegistryRef("confluent://main/subjects/a%2Fb/versions/1", "main", MAIN, "a/b", 1)),
    ("confluent://main/schemas/ids/42", RegistryRef("confluent://main/schemas/ids/42", "main", MAIN, None, None, 42)),
    ("confluent://nope/schemas/ids/42", RegistryRef("confluent://nope/schemas/ids/42", "nope", None, None, None, 42)),
    # the registry's own URL: its credentials go with it
    ("http://REGISTRY.test:8081/subjects/s/versions/2",
     RegistryRef("http://REGISTRY.test:8081/subjects/s/versions/2", "main", MAIN, "s", 2)),
    ("https://apicurio.test:443/apis/ccompat/v7/subjects/s/versions/latest",
     RegistryRef("https://apicurio.test:443/apis/ccompat/v7/subjects/s/versions/latest", "apicurio", CCOMPAT,
                 "s", None)),
    # a registry nobody configured: anonymous, no credentials
    ("http://other.test/subjects/s/versions/1",
     RegistryRef("http://other.test/subjects/s/versions/1", "http://other.test",
                 SchemaRegistrySettings("http://other.test", "http://other.test"), "s", 1)),
])
def test_registry_references(text: str, expected: RegistryRef) -> None:
    assert parse_reference(text, REGISTRIES) == expected


@pytest.mark.parametrize("text", [
    "http://registry.test:8081/subjects/s/versions/1/schema",   # the raw schema: an ordinary schema file
    "http://registry.test:8081/subjects/s/versions/first",
    "https://schemas.example.com/reading.json",
    "http://registry.test:8081/subjects/s/versions/1?deleted=true",
])
def test_other_urls_are_left_to_the_loader(text: str) -> None:
    assert parse_reference(text, REGISTRIES) is None


@pytest.mark.parametrize(("text", "problem"), [
    ("confluent://main", "names no registry"),
    ("confluent://main/subjects/s", "is not confluent://main/subjects/<subject>/versions"),
    ("confluent://main/subjects/s/versions/0", "expected a number from 1 or `latest`"),
    ("confluent://main/schemas/ids/4294967296", "expected an unsigned 32-bit number"),
])
def test_unreadable_confluent_references_are_problems(text: str, problem: str) -> None:
    found = parse_reference(text, REGISTRIES)
    assert isinstance(found, str) and problem in found
