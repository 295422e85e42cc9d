"""A registry document that carries credentials is not obeyed: they never reach an adapter, and lint says where.

The endpoint below carries every kind xgate knows of: a password and token in its protocoloptions, a nested
SASL password, an Authorization header and the API key header it declares among its static headers, the API
key as a static query parameter, and user info in its uri. gateway.yaml supplies the real credentials.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gateway.commands.lint import lint_report
from gateway.compiler import compile_registry
from gateway.loader import load_snapshot
from gateway.routes.credentials import credential_warnings
from gateway.routes.resolve import endpoint_config
from gateway.settings import load_settings

SECRETS = ("doc-password", "doc-token", "doc-sasl", "Bearer doc-bearer", "doc-header-key", "doc-query-key", "eve:pw")


def _document() -> dict[str, Any]:
    return {"endpoints": {"hook": {
        "usage": ["producer"], "protocol": "HTTP",
        "protocoloptions": {
            "endpoints": [{"uri": "https://eve:pw@hooks.example.com/in"}],
            "method": "PUT", "apikeyname": "X-Api-Key",
            "password": "doc-password", "Token": "doc-token",
            "sasl": {"mechanism": "SCRAM-SHA-512", "sasl_password": "doc-sasl"},
            "headers": [{"name": "Authorization", "value": "Bearer doc-bearer"},
                        {"name": "x-api-key", "value": "doc-header-key"},
                        {"name": "X-Tenant", "value": "blue"}],
            "query": {"X-Api-Key": "doc-query-key", "region": "eu"}}}}}


def _world(tmp_path: Path) -> tuple[Any, Any]:
    (tmp_path / "hooks.json").write_text(json.dumps(_document()))
    (tmp_path / "gateway.yaml").write_text("endpoints:\n  hook:\n    username: xgate\n    password: from-settings\n"
                                           "    apikey: settings-key\n")
    snapshot = load_snapshot([tmp_path])
    settings, problems = load_settings(tmp_path)
    assert problems == []
    return snapshot, settings


def test_document_credentials_never_reach_the_adapter(tmp_path: Path) -> None:
    snapshot, settings = _world(tmp_path)
    config = endpoint_config(snapshot.registry, "hook", settings)
    assert config.uris == ("https://hooks.example.com/in",)
    assert config.options == {"method": "PUT", "apikeyname": "X-Api-Key", "sasl": {"mechanism": "SCRAM-SHA-512"},
                              "headers": [{"name": "X-Tenant", "value": "blue"}], "query": {"region": "eu"}}
    # what the settings supply is what the adapter gets
    assert (config.username, config.password, config.extra["apikey"]) == ("xgate", "from-settings", "settings-key")
    assert not any(secret in repr(config) for secret in SECRETS)


def test_each_document_credential_is_a_warning_with_file_and_pointer(tmp_path: Path) -> None:
    snapshot, _ = _world(tmp_path)
    warnings = credential_warnings(snapshot.registry)
    pointers = sorted(w.pointer.removeprefix("/endpoints/hook") for w in warnings)
    assert pointers == ["/protocoloptions/Token", "/protocoloptions/endpoints/0", "/protocoloptions/headers/0",
                        "/protocoloptions/headers/1", "/protocoloptions/password", "/protocoloptions/query/X-Api-Key",
                        "/protocoloptions/sasl/sasl_password"]
    assert all(w.file.endswith("hooks.json") and w.severity.value == "warning" and w.code == "credentials"
               for w in warnings)
    assert "gateway.yaml endpoints.hook" in warnings[0].message
    assert not any(secret in str(w) for w in warnings for secret in SECRETS)


def test_lint_reports_them_on_the_document(tmp_path: Path) -> None:
    snapshot, _ = _world(tmp_path)
    report = lint_report(snapshot, compile_registry(snapshot.registry, snapshot.digest))
    [entry] = [f for f in report["files"] if f["file"].endswith("hooks.json")]
    assert sum(w["code"] == "credentials" for w in entry["warnings"]) == 7 and entry["errors"] == []


def test_a_document_without_credentials_has_no_warning(tmp_path: Path) -> None:
    document = _document()
    options = document["endpoints"]["hook"]["protocoloptions"]
    for key in ("password", "Token", "sasl", "headers", "query"):
        del options[key]
    options["endpoints"] = [{"uri": "https://hooks.example.com/in"}]
    (tmp_path / "hooks.json").write_text(json.dumps(document))
    assert credential_warnings(load_snapshot([tmp_path]).registry) == []
