"""The rulesets the differential tests judge with: the reference workload's and config/demo's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import workload
from gateway.compiler import Ruleset, compile_registry
from gateway.loader import load_snapshot

ROOT = Path(__file__).resolve().parents[3]


def _ruleset(paths: list[Path]) -> Ruleset:
    snapshot = load_snapshot(list(paths))
    return compile_registry(snapshot.registry, snapshot.digest)


@pytest.fixture(scope="module")
def workload_ruleset(tmp_path_factory: pytest.TempPathFactory) -> Ruleset:
    path = tmp_path_factory.mktemp("workload") / "workload.xreg.json"
    path.write_text(json.dumps(workload.registry_document()), "utf-8")
    return _ruleset([path])


@pytest.fixture(scope="module")
def demo_ruleset() -> Ruleset:
    return _ruleset([ROOT / "config" / "demo"])
