"""gateway.yaml `registry.write` and `registry.events`: read with the settings' readers; never writable without
credentials; an events endpoint that the documents lack stops `xgate run` at startup, naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.errors import GatewayError
from gateway.loader import load_snapshot
from gateway.registry_api import RegistryView
from gateway.runtime.registry_wiring import change_publisher
from gateway.settings import load_settings
from tests.unit.registry_api.writing import operator_files


def settings_of(tmp_path: Path, text: str) -> tuple[object, list[str]]:
    (tmp_path / "gateway.yaml").write_text(text)
    settings, problems = load_settings(tmp_path)
    return settings, [f"{p.pointer}: {p.message}" for p in problems]


def test_write_takes_an_api_key_file_and_basic_auth(tmp_path: Path) -> None:
    (tmp_path / "key").write_text("k3y\n")
    settings, problems = settings_of(tmp_path, f"registry:\n  write: {{apikey_file: {tmp_path / 'key'}, "
                                               "username: ci, password: pw}\n  events: {endpoint: changes}\n")
    assert problems == []
    write = settings.registry.write  # type: ignore[attr-defined]
    assert (write.apikey, write.username, write.password) == ("k3y", "ci", "pw")
    assert settings.registry.events.endpoint == "changes"  # type: ignore[attr-defined]
    assert settings.registry.events.max_entity_bytes == 65536  # type: ignore[attr-defined]


@pytest.mark.parametrize(("text", "problem"), [
    ("registry:\n  write: {}\n", "/registry/write: the registry is never writable without credentials"),
    ("registry:\n  write: {username: ci}\n", "/registry/write: basic auth needs both"),
    ("registry:\n  write: {apikey: k, token: t}\n", "/registry/write/token: unknown setting"),
    ("registry:\n  write: {apikey: k, endpoints: sometimes}\n", "/registry/write/endpoints: expected true or false"),
    ("registry:\n  write: {apikey: k, addresses: 127.0.0.1}\n", "/registry/write/addresses: expected a list"),
    ("registry:\n  events: {max_entity_bytes: 10}\n", "/registry/events/endpoint: expected non-empty text"),
    ("registry:\n  events: {endpoint: e, max_entity_bytes: -1}\n", "/registry/events/max_entity_bytes: expected"),
])
def test_write_and_events_problems_name_the_field(tmp_path: Path, text: str, problem: str) -> None:
    settings, problems = settings_of(tmp_path, text)
    assert any(p.startswith(problem) for p in problems), problems
    if "write" in text and "token" not in text:
        assert settings.registry.write is None  # type: ignore[attr-defined]


def test_endpoint_writes_are_off_unless_asked_for(tmp_path: Path) -> None:
    settings, _ = settings_of(tmp_path, "registry:\n  write: {apikey: k}\n")
    assert (settings.registry.write.endpoints, settings.registry.write.addresses) == (False, ())  # type: ignore[attr-defined]
    settings, problems = settings_of(tmp_path, "registry:\n  write: {apikey: k, endpoints: true, "
                                               "addresses: [127.0.0.1, 'fe80::/10']}\n")
    assert problems == []
    write = settings.registry.write  # type: ignore[attr-defined]
    assert (write.endpoints, write.addresses) == (True, ("127.0.0.1", "fe80::/10"))


def test_an_events_endpoint_the_documents_lack_stops_startup(tmp_path: Path) -> None:
    config = operator_files(tmp_path / "config")
    settings, _ = settings_of(config, "registry:\n  events: {endpoint: nowhere}\n")
    snapshot = load_snapshot([config])
    with pytest.raises(GatewayError, match="'nowhere' is not an endpoint of the documents"):
        change_publisher(RegistryView(snapshot), snapshot, settings, None, primary=True)  # type: ignore[arg-type]
    assert change_publisher(RegistryView(snapshot), snapshot, settings, None, primary=False) is None  # type: ignore[arg-type]
