"""Reload decisions offline (memory adapters): unchanged digest, last good content per broken file, counters."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from gateway.compiler import compile_registry
from gateway.loader import load_snapshot
from gateway.metrics import names
from gateway.runtime.engine import Engine
from gateway.runtime.reload import Reloader
from gateway.settings import load_settings
from gateway.testing import memory


def _document(type_value: str) -> dict[str, Any]:
    return {"endpoints": {"in": {"usage": ["consumer"], "protocol": "KAFKA", "envelope": "CloudEvents/1.0",
                                 "messages": {"m": {"envelope": "CloudEvents/1.0",
                                                    "envelopemetadata": {"type": {"value": type_value}}}}}}}


def _run(tmp_path: Path, steps: Any) -> tuple[list[str], Engine]:
    (tmp_path / "a.json").write_text(json.dumps(_document("t1")))
    snapshot = load_snapshot([tmp_path])
    settings, _ = load_settings(tmp_path)
    engine = Engine([], compile_registry(snapshot.registry, snapshot.digest), create_source=memory.create_source,
                    create_sink=memory.create_sink)
    reloader = Reloader(tmp_path, engine, snapshot, settings)

    async def main() -> list[str]:
        outcomes = []
        for step in steps:
            step(tmp_path)
            outcomes.append(await reloader.reload("test"))
        return outcomes
    return asyncio.run(main()), engine


def _types(engine: Engine) -> set[str]:
    rules = engine.ref.ruleset.endpoints.get("in")
    return {d.discriminator.value for d in rules.definitions if d.discriminator} if rules else set()


def test_unchanged_digest_does_nothing(tmp_path: Path) -> None:
    outcomes, engine = _run(tmp_path, [lambda p: None])
    assert outcomes == ["unchanged"]
    assert engine.metrics[names.RELOADS].labels("unchanged")._value.get() == 1


def test_an_edit_applies_and_a_broken_file_keeps_its_last_good_content(tmp_path: Path) -> None:
    def edit(p: Path) -> None:
        (p / "a.json").write_text(json.dumps(_document("t2")))

    def add_other(p: Path) -> None:
        (p / "b.json").write_text(json.dumps({"endpoints": {"other": _document("t9")["endpoints"]["in"]}}))

    def break_a(p: Path) -> None:
        (p / "a.json").write_text('{"endpoints": ')

    outcomes, engine = _run(tmp_path, [edit, break_a, add_other])
    assert outcomes == ["applied", "failed", "failed"]
    assert _types(engine) == {"t2"}  # the broken a.json still judges with its last good content
    assert "other" in engine.ref.ruleset.endpoints  # while the new document applied
    assert engine.metrics[names.RELOADS].labels("failed")._value.get() == 2


def test_a_new_broken_document_is_left_out(tmp_path: Path) -> None:
    def add_broken(p: Path) -> None:
        (p / "c.json").write_text('{"endpoints": {"x": {"protocol": "KAFKA",}}}')
    outcomes, engine = _run(tmp_path, [add_broken])
    assert outcomes == ["failed"] and "x" not in engine.ref.ruleset.endpoints and _types(engine) == {"t1"}


def test_changed_limits_in_gateway_yaml_recompile_and_a_bad_value_keeps_the_last_good(tmp_path: Path) -> None:
    def limit(p: Path) -> None:
        (p / "gateway.yaml").write_text("runtime:\n  limits:\n    max_body_bytes: 512\n")

    def bad(p: Path) -> None:
        (p / "gateway.yaml").write_text("runtime:\n  limits:\n    max_body_bytes: -5\n")

    outcomes, engine = _run(tmp_path, [limit, bad])
    assert outcomes == ["applied", "failed"]
    assert engine.ref.ruleset.limits.max_body_bytes == 512


def test_an_applied_reload_leaves_the_current_ruleset_frozen_out_of_full_collections(tmp_path: Path) -> None:
    import gc

    def edit(p: Path) -> None:
        (p / "a.json").write_text(json.dumps(_document("t2")))
    gc.unfreeze()  # whatever an earlier test froze
    try:
        outcomes, engine = _run(tmp_path, [edit])
        assert outcomes == ["applied"]
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()  # the rest of the test session collects as usual
