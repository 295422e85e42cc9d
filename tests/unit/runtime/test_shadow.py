"""Shadow rules: a candidate in DIR/shadow/ is judged beside the active rules on live traffic, routes nothing,
and counts the same changes `xgate diff` reports for the same messages."""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

from gateway.commands.diff import compare
from gateway.compiler import compile_registry
from gateway.envelope import Envelope
from gateway.loader import load_snapshot
from gateway.metrics import names
from gateway.metrics.instruments import GatewayMetrics
from gateway.routes.resolve import Route
from gateway.runtime.engine import Engine
from gateway.runtime.reload import Reloader
from gateway.runtime.shadow import LATEST_KEPT, load_shadow
from gateway.settings import load_settings
from gateway.testing import memory
from protocol_adapters.base import EndpointConfig

_brokers = itertools.count()
SCHEMA = {"type": "object", "required": ["v"], "properties": {"v": {"type": "integer", "maximum": 1000}}}
ACTIVE = {"endpoints": {"in": {"usage": ["consumer"], "protocol": "KAFKA", "envelope": "CloudEvents/1.0",
                               "messages": {"reading": {
                                   "envelope": "CloudEvents/1.0",
                                   "envelopemetadata": {"type": {"value": "com.example.reading"}},
                                   "dataschemaformat": "JsonSchema/draft-07", "dataschema": SCHEMA}}}}}


def _candidate() -> dict[str, Any]:
    """The same definition tightened twice: a lower maximum, and a `region` extension now required."""
    document = copy.deepcopy(ACTIVE)
    reading = document["endpoints"]["in"]["messages"]["reading"]
    reading["dataschema"]["properties"]["v"]["maximum"] = 100
    reading["envelopemetadata"]["region"] = {"type": "string", "required": True}
    return document


def message(number: int) -> Envelope:
    """Every message conforms to the active rules; the candidate refuses v > 100 and a missing region."""
    headers = [("ce_specversion", b"1.0"), ("ce_id", str(number).encode()), ("ce_source", b"/s"),
               ("ce_type", b"com.example.reading"), ("content-type", b"application/json")]
    if number % 3:
        headers.append(("ce_region", b"eu"))
    return Envelope("KAFKA", {"topic": "in", "key": f"k{number}".encode(), "headers": headers},
                    json.dumps({"v": number * 7 % 500}).encode())


def _expected_disagreements(envelopes: list[Envelope]) -> int:
    """From what each message was made to be: missing region or a value over 100."""
    return sum(1 for n, e in enumerate(envelopes) if n % 3 == 0 or n * 7 % 500 > 100)


def _world(tmp_path: Path) -> tuple[Path, str]:
    config = tmp_path / "config"
    (config / "shadow").mkdir(parents=True)
    (config / "registry.json").write_text(json.dumps(ACTIVE))
    (config / "shadow" / "registry.json").write_text(json.dumps(_candidate()))
    return config, f"shadow-{next(_brokers)}"


def _route(name: str) -> Route:
    def config(queue: str) -> EndpointConfig:
        return EndpointConfig(queue, "MEMORY", (f"memory://{name}",), {"queue": queue})
    return Route(config("in"), config("valid"), config("dlq"), config("dlq"), "forward", 100)


def _run(engine: Engine, done: Any) -> None:
    async def main() -> None:
        task = asyncio.create_task(engine.run())
        for _ in range(2000):
            if done():
                break
            await asyncio.sleep(0.01)
        engine.request_stop()
        await asyncio.wait_for(task, 10)
    asyncio.run(main())


def test_the_active_registry_leaves_the_shadow_folder_out(tmp_path: Path) -> None:
    config, _ = _world(tmp_path)
    snapshot = load_snapshot([config])
    assert len(snapshot.contents) == 1 and all("/shadow/" not in str(f) for f in snapshot.contents)


def test_shadow_counts_what_diff_reports_and_routes_nothing(tmp_path: Path) -> None:
    config, name = _world(tmp_path)
    snapshot = load_snapshot([config])
    active = compile_registry(snapshot.registry, snapshot.digest)
    engine = Engine([_route(name)], active, create_source=memory.create_source, create_sink=memory.create_sink)
    engine.ref.shadow, problems = load_shadow(config, engine.metrics)
    assert problems == [] and engine.ref.shadow is not None
    envelopes = [message(n) for n in range(300)]
    broker = memory.memory_broker(name)
    for envelope in envelopes:
        broker.publish("in", copy.deepcopy(envelope))
    _run(engine, lambda: broker.depth("valid") == len(envelopes))

    assert broker.depth("valid") == len(envelopes) and broker.depth("dlq") == 0  # routing as the active rules say
    expected = _expected_disagreements(envelopes)
    shadow = engine.ref.shadow
    assert shadow.judged == len(envelopes) and shadow.disagreements == expected

    # `xgate diff` of the same messages under the two registries reports the same number of changes
    candidate_snapshot = load_snapshot([config / "shadow"])
    candidate = compile_registry(candidate_snapshot.registry, candidate_snapshot.digest)
    for envelope in envelopes:
        envelope.endpoint = "in"
    report = compare((active.classify(e), candidate.classify(e)) for e in envelopes)
    assert report.changes["tightened"] == expected and sum(report.changes.values()) == expected

    counted = {tuple(s.labels.values()): s.value
               for family in engine.metrics[names.SHADOW_DISAGREEMENTS].collect() for s in family.samples
               if s.name.endswith("_total")}
    # by the rule of the candidate's first violation, as its own verdicts give it
    rules = Counter(candidate.classify(e).violations[0].rule.value for e in envelopes
                    if active.classify(e).conformant and not candidate.classify(e).conformant)
    assert counted == {("in", "conformant", "nonconformant", "reading", rule): n for rule, n in rules.items()}
    assert sum(rules.values()) == expected
    judged = {tuple(s.labels.values()): s.value for family in engine.metrics[names.SHADOW_JUDGED].collect()
              for s in family.samples if s.name.endswith("_total")}
    assert judged == {("in",): len(envelopes)}
    view = shadow.view()
    assert len(view["latest"]) == min(expected, LATEST_KEPT)
    assert view["latest"][-1]["active"]["verdict"] == "conformant"
    assert view["latest"][-1]["candidate"]["verdict"] == "nonconformant"


def test_a_reload_follows_the_shadow_folder(tmp_path: Path) -> None:
    config, _ = _world(tmp_path)
    snapshot = load_snapshot([config])
    settings, _ = load_settings(config)
    engine = Engine([], compile_registry(snapshot.registry, snapshot.digest), create_source=memory.create_source,
                    create_sink=memory.create_sink)
    reloader = Reloader(config, engine, snapshot, settings)
    asyncio.run(reloader._reload_shadow(settings))
    first = engine.ref.shadow
    assert first is not None
    asyncio.run(reloader._reload_shadow(settings))
    assert engine.ref.shadow is first  # unchanged: its counts are kept
    loosened = _candidate()
    del loosened["endpoints"]["in"]["messages"]["reading"]["envelopemetadata"]["region"]
    (config / "shadow" / "registry.json").write_text(json.dumps(loosened))
    asyncio.run(reloader._reload_shadow(settings))
    assert engine.ref.shadow is not None and engine.ref.shadow is not first
    for path in (config / "shadow").iterdir():
        path.unlink()
    (config / "shadow").rmdir()
    asyncio.run(reloader._reload_shadow(settings))
    assert engine.ref.shadow is None  # promoted or dropped: the candidate is gone


def test_the_demo_candidate_is_the_active_telemetry_document_with_one_bound_tightened() -> None:
    """config/demo/shadow/ must follow config/demo: a copy that drifted would disagree for the wrong reasons."""
    demo = Path(__file__).resolve().parents[3] / "config" / "demo"
    active = json.loads((demo / "telemetry.xreg.json").read_text("utf-8"))
    candidate = json.loads((demo / "shadow" / "telemetry.xreg.json").read_text("utf-8"))
    battery = ("schemagroups", "com.example.telemetry", "schemas", "reading", "versions", "1", "schema",
               "properties", "battery", "minimum")

    def at(document: dict[str, Any]) -> dict[str, Any]:
        for part in battery[:-1]:
            document = document[part]
        return document
    assert (at(active)[battery[-1]], at(candidate)[battery[-1]]) == (0, 20)
    at(candidate)[battery[-1]] = 0
    assert candidate == active


def test_an_empty_shadow_folder_is_no_candidate(tmp_path: Path) -> None:
    """After a promotion moved the last file out, the folder stays: the active documents must not be judged
    a second time as their own candidate (issue 33: 2.64x the judging for nothing)."""
    config, _ = _world(tmp_path)
    for path in (config / "shadow").iterdir():
        path.unlink()
    judge, problems = load_shadow(config, GatewayMetrics())
    assert (judge, problems) == (None, [])


def test_gateway_yaml_may_name_the_shadow_folder(tmp_path: Path) -> None:
    """issue 33, item 4: `runtime.shadow_dir` names the candidate's folder (outside the config directory, whose
    documents are all active); a reload follows it, and the watch reloads on a change there."""
    config, _ = _world(tmp_path)
    candidate = tmp_path / "candidate"
    (config / "shadow").rename(candidate)
    (config / "gateway.yaml").write_text("runtime:\n  shadow_dir: ../candidate\n")
    settings, problems = load_settings(config)
    assert problems == [] and settings.runtime.shadow_dir == "../candidate"
    snapshot = load_snapshot([config])
    engine = Engine([], compile_registry(snapshot.registry, snapshot.digest), create_source=memory.create_source,
                    create_sink=memory.create_sink)
    reloader = Reloader(config, engine, snapshot, settings)
    asyncio.run(reloader._reload_shadow(settings))
    assert engine.ref.shadow is not None and engine.ref.shadow.source == str(config / "../candidate")
    judge, _ = load_shadow(config, engine.metrics)  # without the setting: DIR/shadow, which is gone
    assert judge is None

    # inside the config directory (but `shadow/`) the documents would be active too: refused, saying why
    (config / "gateway.yaml").write_text("runtime:\n  shadow_dir: drafts\n")
    _, problems = load_settings(config)
    assert len(problems) == 1 and "inside the config directory" in problems[0].message
    (config / "gateway.yaml").write_text("runtime:\n  shadow_dir: shadow\n")
    assert load_settings(config)[1] == []


def test_the_watch_reloads_on_a_change_in_a_named_shadow_folder(tmp_path: Path) -> None:
    from gateway.runtime.config_watch import watch_quietly

    config, candidate = tmp_path / "config", tmp_path / "candidate"
    config.mkdir()
    candidate.mkdir()
    reloads: list[str] = []

    async def main() -> None:
        stop = asyncio.Event()

        async def reload() -> None:
            reloads.append("reload")
            stop.set()
        watcher = asyncio.create_task(watch_quietly(config, 0.1, stop, reload, lambda up: None, lambda: None,
                                                    also=(candidate, tmp_path / "missing")))
        await asyncio.sleep(0.5)  # the watch has started
        (candidate / "registry.json").write_text("{}")
        await asyncio.wait_for(watcher, 20)
    asyncio.run(main())
    assert reloads == ["reload"]
