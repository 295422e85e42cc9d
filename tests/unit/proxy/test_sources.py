"""The proxy reads registry sources (gateway.yaml `sources:`) as `xgate run` does: fetched at start, judged by,
followed on their interval (a changed source reloads the rules), a failed poll keeping the rules in force. The
source is a stdlib HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gateway.check import judge_record
from gateway.errors import Severity
from gateway.loader.sources import RegistrySources
from gateway.proxy.metrics import ProxyMetrics
from gateway.proxy.reload import ProxyReloader, load_rules
from tests.unit.builders import ce_message, kafka_ce, ok, registry, shape
from tests.unit.local_http import SourceServer, source_server
from tests.unit.polling import until


def _document(type_value: str) -> dict[str, Any]:
    """What the source answers: endpoint `ep` naming topic `orders`, its message `m` of CloudEvents type
    `type_value`."""
    doc = registry("KAFKA", {"m": ce_message(type_value)}, endpoint_attrs={
        "protocoloptions": {"endpoints": [{"uri": "tcp://k:9092"}], "topic": "orders"}})
    return {"specversion": "1.0-rc4", "registryid": "upstream", **doc}


@pytest.fixture
def source() -> Iterator[SourceServer]:
    with source_server() as server:
        yield server


def _config(tmp_path: Path, source: SourceServer) -> Path:
    (tmp_path / "gateway.yaml").write_text(
        f"remote:\n  allow: [127.0.0.1]\n  timeout: 2\nsources:\n  - url: {source.base}/registry\n    interval: 1\n"
        "proxy:\n  upstream: 127.0.0.1:9092\n")
    return tmp_path


def _accepts(judging: Any, type_value: str) -> bool:
    return bool(shape(judge_record(judging.native.ruleset, kafka_ce(type_value), "ep")) == ok("g", "m"))


def test_the_topics_and_rules_of_a_source_are_judged_from_the_start(tmp_path: Path,
                                                                      source: SourceServer) -> None:
    source.serve(_document("t1"))
    sources = RegistrySources()
    loaded = load_rules(_config(tmp_path, source), sources=sources)
    assert [p for p in loaded.problems if p.severity is Severity.ERROR] == []
    assert loaded.judging is not None and list(loaded.judging.topics) == ["orders"]
    assert _accepts(loaded.judging, "t1") and not _accepts(loaded.judging, "t2")
    assert list(sources.documents()) == [source.base + "/registry"]


def test_a_source_that_does_not_answer_at_start_is_a_warning_not_a_stop(tmp_path: Path,
                                                                        source: SourceServer) -> None:
    source.status = 503
    loaded = load_rules(_config(tmp_path, source))
    [warning] = [p for p in loaded.problems if p.code == "source"]
    assert warning.severity is Severity.WARNING and "503" in warning.message
    assert loaded.judging is not None and loaded.judging.topics == {}


def test_the_proxy_follows_a_changed_source_and_keeps_its_rules_through_a_failure(
        tmp_path: Path, source: SourceServer) -> None:
    source.serve(_document("t1"))
    sources = RegistrySources()
    config = _config(tmp_path, source)
    loaded = load_rules(config, sources=sources)
    proxy = SimpleNamespace(settings=SimpleNamespace(policy=None), judging=loaded.judging)
    metrics = ProxyMetrics()
    reloader = ProxyReloader(config, proxy, metrics, loaded.digest, sources=sources,  # type: ignore[arg-type]
                             fetcher=loaded.fetcher)

    def reloads(outcome: str) -> float:
        value = metrics.metrics.registry.get_sample_value("xgate_reloads_total", {"outcome": outcome})
        return value or 0.0

    async def scenario() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(reloader.follow(stop))
        asked = len(source.requests)
        await until(lambda: len(source.requests) >= asked + 2)
        assert reloads("applied") == 0  # polls that find nothing new do not reload
        source.serve(_document("t2"))
        await until(lambda: _accepts(proxy.judging, "t2"))
        assert not _accepts(proxy.judging, "t1") and reloads("applied") == 1
        source.status = 500
        await until(lambda: reloads("failed") >= 1)
        assert _accepts(proxy.judging, "t2")  # the rules learned before stay
        stop.set()
        await asyncio.wait_for(task, 5)

    asyncio.run(scenario())
