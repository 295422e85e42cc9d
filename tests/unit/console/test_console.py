"""The console (issue 37) against a running engine on memory adapters: each page from what the gateway
keeps, a dead letter's violation marked at its pointer, bodies hidden and names redacted when told, "Try a
message" giving `xgate check`'s verdict and `xgate explain`'s text, and nothing loaded from elsewhere."""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from gateway.check import judge_record
from gateway.compiler import compile_registry
from gateway.console import console_sources
from gateway.console.app import add_console_routes
from gateway.envelope import Envelope
from gateway.explanation import explain
from gateway.loader import load_snapshot
from gateway.recorded import envelope_from_record, record_from_envelope
from gateway.routes.resolve import Route
from gateway.runtime.engine import Engine
from gateway.runtime.reload import Reloader
from gateway.sections.console import ConsoleSettings
from gateway.settings import Settings
from gateway.testing import memory
from protocol_adapters.base import EndpointConfig

_brokers = itertools.count()
SCHEMA = {"type": "object", "required": ["v"], "properties": {"v": {"type": "integer", "maximum": 100},
                                                            "card": {"type": "string"}}}
REGISTRY = {"endpoints": {"in": {"usage": ["consumer"], "protocol": "KAFKA", "envelope": "CloudEvents/1.0",
                                 "protocoloptions": {"topic": "readings"},
                                 "messages": {"reading": {
                                     "envelope": "CloudEvents/1.0",
                                     "envelopemetadata": {"type": {"value": "com.example.reading"},
                                                          "source": {"value": "/sites/{site}"}},
                                     "dataschemaformat": "JsonSchema/draft-07", "dataschema": SCHEMA}}}}}


def message(number: int, value: int, source: str = "/sites/a", kind: str = "com.example.reading") -> Envelope:
    headers = [("ce_specversion", b"1.0"), ("ce_id", str(number).encode()), ("ce_source", source.encode()),
               ("ce_type", kind.encode()), ("content-type", b"application/json"),
               ("authorization", b"Bearer secret-token")]
    return Envelope("KAFKA", {"topic": "readings", "partition": 0, "key": f"k{number}".encode(),
                              "headers": headers},
                    json.dumps({"v": value, "card": "4111-1111"}).encode())


def _route(name: str) -> Route:
    def config(queue: str) -> EndpointConfig:
        return EndpointConfig(queue, "MEMORY", (f"memory://{name}",), {"queue": queue})
    return Route(config("in"), config("valid"), config("dlq"), config("dlq"), "forward", 100)


Steps = Callable[[TestClient, Engine], Awaitable[Any]]


def run_console(tmp_path: Path, settings: ConsoleSettings, envelopes: list[Envelope], steps: Steps,
                host: str = "127.0.0.1") -> Any:
    """An engine judging `envelopes` from a memory broker, the console on a test server beside it."""
    config = tmp_path / "config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "registry.json").write_text(json.dumps(REGISTRY))
    snapshot = load_snapshot([config])
    name = f"console-{next(_brokers)}"
    engine = Engine([_route(name)], compile_registry(snapshot.registry, snapshot.digest),
                    create_source=memory.create_source, create_sink=memory.create_sink)
    reloader = Reloader(config, engine, snapshot, Settings())
    sources = console_sources(settings, engine, reloader, engine.metrics.registry, host)
    broker = memory.memory_broker(name)
    for envelope in envelopes:
        broker.publish("in", copy.deepcopy(envelope))

    async def main() -> Any:
        app = web.Application()
        add_console_routes(app, sources)
        task = asyncio.create_task(engine.run())
        for _ in range(1000):
            if broker.depth("valid") + broker.depth("dlq") == len(envelopes):
                break
            await asyncio.sleep(0.01)
        try:
            async with TestClient(TestServer(app)) as client:
                return await steps(client, engine)
        finally:
            engine.request_stop()
            await asyncio.wait_for(task, 10)
    return asyncio.run(main())


async def text(client: TestClient, path: str, status: int = 200) -> str:
    answer = await client.get(path)
    assert answer.status == status, (path, answer.status)
    assert "default-src 'self'" in answer.headers["Content-Security-Policy"]
    return await answer.text()


def test_routes_page_shows_the_gateways_own_counts(tmp_path: Path) -> None:
    envelopes = [message(n, 5 if n % 4 else 500) for n in range(40)]  # every fourth over the maximum

    async def steps(client: TestClient, engine: Engine) -> None:
        page = await text(client, "/ui/routes")
        shown = dict(re.findall(r'data-verdict="(\w+)">(\d+)</span>', page))
        stats = engine.stats.routes["in"].verdicts
        assert shown == {"conformant": str(stats["conformant"]), "nonconformant": str(stats["nonconformant"]),
                         "unmatched": "0"}
        assert stats["conformant"] == 30 and stats["nonconformant"] == 10
        assert "valid" in page and "dlq" in page and "<script src=\"/ui/static/live.js\"" in page
        part = await text(client, "/ui/routes?part=main")  # what live.js swaps in: no page around it
        assert not part.startswith("<!doctype") and "data-verdict" in part
        assert (await client.get("/ui")).url.path == "/ui/routes"
    run_console(tmp_path, ConsoleSettings(), envelopes, steps)


def test_a_dead_letter_is_shown_with_its_violation_marked_at_its_pointer(tmp_path: Path) -> None:
    envelopes = [message(0, 5), message(1, 500), message(2, 5, source="/elsewhere"),
                 message(3, 5, kind="com.example.other")]

    async def steps(client: TestClient, engine: Engine) -> None:
        listing = await text(client, "/ui/dead-letters")
        numbers = re.findall(r'href="/ui/dead-letters/(\d+)"', listing)
        assert len(numbers) == 3 and "dataschema:/v" in listing and "envelopemetadata.source" in listing
        # named as the routes count them: no definition named is unmatched, not nonconformant
        assert listing.count('class="verdict unmatched"') == 1 and listing.count('class="verdict nonconformant"') == 2
        numbers = numbers[1:]  # the newest is the unmatched one
        pages = [await text(client, f"/ui/dead-letters/{n}") for n in numbers]
        schema = next(p for p in pages if "dataschema:/v" in p)
        # the value at /v is marked in the pretty-printed payload, linked to violation 1
        assert re.search(r'<mark class="bad" title="1: [^"]*" data-pointer="/v">500</mark>'
                         r'<a class="badge" href="#v1">1</a>', schema)
        assert '<li id="v1"><code>dataschema:/v</code>' in schema
        template = next(p for p in pages if "envelopemetadata.source" in p)
        assert re.search(r'<tr class="bad" title="1: [^"]*"><th>source</th><td><code>/elsewhere</code>', template)
        gone = await text(client, "/ui/dead-letters/99999")
        assert "No longer kept" in gone
    run_console(tmp_path, ConsoleSettings(), envelopes, steps)


def test_bodies_hidden_off_loopback_and_named_places_redacted(tmp_path: Path) -> None:
    envelopes = [message(1, 500)]

    async def hidden(client: TestClient, engine: Engine) -> None:
        number = re.findall(r'href="/ui/dead-letters/(\d+)"', await text(client, "/ui/dead-letters"))[0]
        page = await text(client, f"/ui/dead-letters/{number}")
        assert "console.show_bodies is off" in page and "4111" not in page and "500</mark>" not in page
        assert "dataschema:/v" in page  # the verdict still says where
    run_console(tmp_path, ConsoleSettings(), envelopes, hidden, host="10.1.2.3")

    async def redacted(client: TestClient, engine: Engine) -> None:
        number = re.findall(r'href="/ui/dead-letters/(\d+)"', await text(client, "/ui/dead-letters"))[0]
        page = await text(client, f"/ui/dead-letters/{number}")
        assert "secret-token" not in page and "4111" not in page and page.count("(redacted)") == 2
        assert "500</mark>" in page  # the rest is shown
    run_console(tmp_path / "r", ConsoleSettings(show_bodies=True, redact=("/card", "Authorization")), envelopes,
                redacted, host="10.1.2.3")


def test_try_a_message_gives_checks_verdict_and_explains_text(tmp_path: Path) -> None:
    bad = record_from_envelope(message(7, 500))
    bad["endpoint"] = "in"
    event = {"specversion": "1.0", "id": "1", "source": "/sites/x", "type": "com.example.reading",
             "datacontenttype": "application/json", "data": {"v": 3}}

    async def steps(client: TestClient, engine: Engine) -> None:
        ruleset = engine.ref.ruleset
        answer = await client.post("/ui/try", data={"message": json.dumps(bad), "endpoint": ""})
        page = await answer.text()
        expected = judge_record(ruleset, bad)
        assert f'data-verdict="{expected.outcome.value}"' in page and expected.outcome.value == "nonconformant"
        explained = explain(ruleset, envelope_from_record(bad, None, "KAFKA"))
        assert explained.split("\n")[0] in page and "maximum: 100" in page
        answer = await client.post("/ui/try", data={"message": json.dumps(event), "endpoint": "in"})
        assert 'data-verdict="conformant"' in await answer.text()
        answer = await client.post("/ui/try", data={"message": json.dumps(event), "endpoint": ""})
        assert "needs an endpoint" in await answer.text()
        answer = await client.post("/ui/try", data={"message": "{not json", "endpoint": "in"})
        assert "not JSON" in await answer.text()
    run_console(tmp_path, ConsoleSettings(), [], steps)


def test_registry_page_says_each_rule_in_words_with_links_to_the_api(tmp_path: Path) -> None:
    async def steps(client: TestClient, engine: Engine) -> None:
        page = await text(client, "/ui/registry")
        assert "type must be com.example.reading" in page and "source like /sites/{site}" in page
        assert "data: JsonSchema/draft-07, an object that requires v, may have card" in page
        assert 'href="/registry/endpoints/in"' in page
        assert "1 conformant, 1 nonconformant since start" in page
    run_console(tmp_path, ConsoleSettings(), [message(0, 5), message(1, 500)], steps)


def test_static_assets_are_served_here_and_pages_load_nothing_from_elsewhere(tmp_path: Path) -> None:
    async def steps(client: TestClient, engine: Engine) -> None:
        for name in ("console.css", "live.js"):
            answer = await client.get(f"/ui/static/{name}")
            assert answer.status == 200 and len(await answer.read()) > 100
        assert (await client.get("/ui/static/../app.py")).status == 404
        for path in ("/ui/routes", "/ui/dead-letters", "/ui/registry", "/ui/changes", "/ui/try"):
            page = await text(client, path)
            for url in re.findall(r'(?:href|src|action)="([^"]+)"', page):
                assert url.startswith(("/", "#")), (path, url)
    run_console(tmp_path, ConsoleSettings(), [message(1, 500)], steps)


def test_the_console_answers_only_with_the_metrics_servers_credentials(tmp_path: Path) -> None:
    """Served by the metrics server's own application: its basic auth guards /ui as it guards /metrics."""
    import base64
    import functools

    import aiohttp

    from gateway.metrics.server import MetricsServer
    from gateway.settings import MetricsSettings

    async def steps(client: TestClient, engine: Engine) -> None:
        sources = console_sources(ConsoleSettings(), engine, Reloader(tmp_path / "config", engine,
                                                                       load_snapshot([tmp_path / "config"]),
                                                                       Settings()),
                                  engine.metrics.registry, "127.0.0.1")
        access = MetricsSettings(username="ops", password="s3cret")
        async with MetricsServer(engine.metrics.registry, engine.ready, "127.0.0.1:0", access,
                                 extra_routes=functools.partial(add_console_routes, sources=sources)) as server:
            base = f"http://127.0.0.1:{server.port}"
            async with aiohttp.ClientSession() as session:
                async with session.get(f"{base}/ui/routes") as answer:
                    assert answer.status == 401
                token = base64.b64encode(b"ops:s3cret").decode()
                async with session.get(f"{base}/ui/routes", headers={"Authorization": f"Basic {token}"}) as answer:
                    assert answer.status == 200 and "<h1>Routes</h1>" in await answer.text()
    run_console(tmp_path, ConsoleSettings(), [], steps)
