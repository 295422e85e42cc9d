"""gateway.yaml's `schemaregistries` reaches every way documents are loaded: the offline commands, `xgate run`
at startup, and its reloads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.check import judge_record
from gateway.commands import startup
from gateway.loader import fetch
from gateway.runtime.reload import Reloader
from tests.unit.builders import b64, ce_message, kafka_ce, registry, shape, write_doc
from tests.unit.schemaregistry.standin import READING_V1, StandInFetcher, avro_payload, example_registry

URI = "confluent://main/subjects/readings-value/versions/1"


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, bytes]:
    stand_in, ids = example_registry(username="xgate", password="pw")
    monkeypatch.setenv("XGATE_TEST_REGISTRY_PASSWORD", "pw")
    monkeypatch.setattr(fetch, "fetcher_for", lambda policy, previous=None: StandInFetcher(stand_in))
    monkeypatch.setattr(startup, "fetcher_for", lambda policy, previous=None: StandInFetcher(stand_in))
    write_doc(tmp_path, "registry.json", registry("KAFKA", {"reading": ce_message("reading", dataschemauri=URI)}))
    (tmp_path / "gateway.yaml").write_text(yaml.safe_dump({
        "remote": {"allow": ["registry.test"]},
        "schemaregistries": {"main": {"url": "http://registry.test:8081", "username": "xgate",
                                      "password": "${XGATE_TEST_REGISTRY_PASSWORD}"}}}))
    return tmp_path, avro_payload(ids["reading_v1"], READING_V1, {"device": "d", "temperature": 1.0})


def _judge(ruleset: Any, body: bytes) -> Any:
    return shape(judge_record(ruleset, kafka_ce("reading", body_base64=b64(body))))


def test_the_offline_commands(config: tuple[Path, bytes]) -> None:
    loaded = startup.load_registry([str(config[0])])
    ruleset = loaded.ruleset
    assert [d for d in loaded.diagnostics if d.severity.value == "error"] == []
    assert _judge(ruleset, config[1])[0] == "conformant"
    assert _judge(ruleset, b"{}")[0] == "nonconformant"


def test_run_at_startup_and_on_reload(config: tuple[Path, bytes]) -> None:
    loaded = startup.load_config(str(config[0]))
    snapshot, ruleset, settings = loaded.snapshot, loaded.ruleset, loaded.settings
    diagnostics = startup.connecting_diagnostics(loaded)
    assert [d for d in diagnostics if d.severity.value == "error"] == []
    assert _judge(ruleset, config[1])[0] == "conformant"
    reloader = Reloader(config[0], None, snapshot, settings)  # type: ignore[arg-type]  # _load needs no engine
    reloader.fetcher = fetch.fetcher_for(settings.remote)
    _, ruleset, errors, _ = reloader._load()
    assert errors == [] and _judge(ruleset, config[1])[0] == "conformant"
