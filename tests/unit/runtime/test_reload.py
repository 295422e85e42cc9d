"""Reload decisions offline (memory adapters): unchanged digest, last good content per broken file, counters."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from gateway.compiler import compile_registry
from gateway.loader import load_snapshot
from gateway.metrics import names
from gateway.routes.resolve import resolve_routes
from gateway.runtime.engine import Engine
from gateway.runtime.reload import Reloader
from gateway.settings import load_settings
from gateway.testing import memory
from protocol_adapters import registry


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


# -- reloads that cannot apply as a whole (issue 17 defects 2 and 4) ------------------------------------------

def _http_documents(maxbodysize: Any) -> dict[str, dict[str, Any]]:
    source = {"usage": ["subscriber"], "protocol": "HTTP", "envelope": "CloudEvents/1.0",
              "protocoloptions": {"endpoints": [{"uri": "http://127.0.0.1:1/events"}], "maxbodysize": maxbodysize},
              "labels": {"xgate.route.conformant": "out"},
              "messages": {"m": {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "t1"}}}}}
    destination = {"usage": ["producer"], "protocol": "HTTP",
                   "protocoloptions": {"endpoints": [{"uri": "http://127.0.0.1:1/valid"}]}}
    return {"a.json": {"endpoints": {"in": source}}, "b.json": {"endpoints": {"out": destination}}}


def _real_options_on_memory(create: Any, broker: str) -> Any:
    """The real adapter is built (its options read, which is what can fail); messages travel on memory."""
    def build(config: Any) -> Any:
        create(config)
        return (memory.create_source if create is registry.create_source else memory.create_sink)(
            replace(config, protocol="MEMORY", uris=(f"memory://{broker}",)))
    return build


def _running_http_gateway(tmp_path: Path, steps: list[Any]) -> tuple[list[str], list[Any], Engine]:
    for name, document in _http_documents(1048576).items():
        (tmp_path / name).write_text(json.dumps(document))
    snapshot = load_snapshot([tmp_path])
    settings, _ = load_settings(tmp_path)
    routes, problems = resolve_routes(snapshot.registry, settings)
    assert not problems and len(routes) == 1
    broker = f"reload-{tmp_path.name}"
    engine = Engine(routes, compile_registry(snapshot.registry, snapshot.digest),
                    create_source=_real_options_on_memory(registry.create_source, broker),
                    create_sink=_real_options_on_memory(registry.create_sink, broker))
    reloader = Reloader(tmp_path, engine, snapshot, settings)
    engine.startup_digest = snapshot.digest  # type: ignore[attr-defined]

    async def main() -> tuple[list[str], list[Any]]:
        task = asyncio.create_task(engine.run())
        outcomes, running = [], []
        for step in steps:
            step(tmp_path)
            outcomes.append(await reloader.reload("test"))
            await asyncio.sleep(0.05)  # a route started by the reload gets to connect (or fail)
            running.append({s: r.route for s, r in engine._running.items()})
        engine.request_stop()
        await asyncio.wait_for(task, 10)  # the gateway is still alive: no ExceptionGroup
        return outcomes, running
    outcomes, running = asyncio.run(main())
    return outcomes, running, engine


def test_a_reload_whose_adapter_cannot_be_built_fails_and_keeps_the_last_good_route(tmp_path: Path,
                                                                                    caplog: Any) -> None:
    def bad_option(p: Path) -> None:
        (p / "a.json").write_text(json.dumps(_http_documents("1MB")["a.json"]))

    with caplog.at_level("ERROR", "xgate.reload"):
        outcomes, running, engine = _running_http_gateway(tmp_path, [bad_option])
    assert outcomes == ["failed"]
    assert running[0]["in"].source.options["maxbodysize"] == 1048576  # the last good route and adapters
    assert engine.metrics[names.RELOADS].labels("failed")._value.get() == 1
    logged = "\n".join(r.getMessage() for r in caplog.records)
    # named at the option itself: the one options check of lint, run and reload reads it before any adapter is built
    assert f"{tmp_path / 'a.json'}#/endpoints/in/protocoloptions/maxbodysize" in logged
    assert "'1MB'" in logged


def test_a_reload_that_removes_a_destination_fails_as_a_whole(tmp_path: Path, caplog: Any) -> None:
    def remove_destination(p: Path) -> None:
        (p / "b.json").unlink()

    with caplog.at_level("ERROR", "xgate.reload"):
        outcomes, running, engine = _running_http_gateway(tmp_path, [remove_destination])
    assert outcomes == ["failed"]
    assert running[0]["in"].conformant.endpoint_id == "out"  # the route keeps its last good destination
    assert engine.ref.ruleset.digest == engine.startup_digest  # the last good ruleset, not the new one
    assert "conformant destination 'out' is not in the registry" in "\n".join(r.getMessage() for r in caplog.records)
