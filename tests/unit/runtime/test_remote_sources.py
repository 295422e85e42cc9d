"""Registry sources (gateway.yaml `sources:`): polled as `<url>?inline`, ETag or digest for "unchanged", a failed
poll keeps that source's last good copy, local files win over sources and an earlier source over a later one,
and a source document never reaches local files. Sources are served by a local http.server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.check import judge_record
from gateway.cli import main
from gateway.commands.startup import connecting_diagnostics, load_config
from gateway.compiler import compile_registry
from gateway.errors import Severity
from gateway.loader import load_snapshot
from gateway.loader.fetch import RemoteFetcher, RemotePolicy
from gateway.loader.sources import Outcome, RegistrySource, RegistrySources
from gateway.metrics import names
from gateway.runtime.engine import Engine
from gateway.runtime.reload import Reloader
from gateway.settings import load_settings
from gateway.testing import memory
from tests.conftest import free_port
from tests.unit.builders import bad, ce_message, kafka_ce, ok, registry, shape, write_doc
from tests.unit.local_http import SourceServer, source_server
from tests.unit.polling import until

UNKNOWN = bad(None, None, ("envelopemetadata.type", "no-match"))
FETCHER = RemoteFetcher(RemotePolicy(allow=("127.0.0.1",), timeout=2))


def _remote(type_value: str, *, epoch: int = 1, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a registry answers to `?inline`: message group g (m, plus `extra`) and endpoint ep."""
    doc = registry("KAFKA", {"m": ce_message(type_value), **(extra or {})})
    return {"specversion": "1.0-rc4", "registryid": "upstream", "epoch": epoch, **doc}


@pytest.fixture
def server() -> Iterator[SourceServer]:
    with source_server() as state:
        yield state


def _closed_port() -> int:
    return free_port()  # nothing listens there, and no client connection takes it meanwhile


# --- polling ------------------------------------------------------------------------------------------------------

def test_a_source_is_asked_for_inline_with_its_credentials(server: SourceServer) -> None:
    server.serve(_remote("t1"))
    sources = RegistrySources([server.source(bearer_token="tok")])
    poll = sources.poll(sources.sources[0], FETCHER)
    assert (poll.outcome, poll.detail) == (Outcome.CHANGED, "epoch 1")
    assert server.requests == [("/registry?inline", None, "Bearer tok")]
    assert sources.documents() == {server.base + "/registry": server.body}


def test_an_etag_is_sent_back_and_a_304_changes_nothing(server: SourceServer) -> None:
    server.serve(_remote("t1"))
    server.etag = '"v1"'
    sources = RegistrySources([server.source()])
    source = sources.sources[0]
    assert sources.poll(source, FETCHER).outcome is Outcome.CHANGED
    assert sources.poll(source, FETCHER).outcome is Outcome.UNCHANGED
    assert server.requests[1] == ("/registry?inline", '"v1"', None)
    assert sources.documents()[source.url] == server.body  # the 304's empty body is not a document
    server.serve(_remote("t2"))
    server.etag = '"v2"'
    assert sources.poll(source, FETCHER).outcome is Outcome.CHANGED
    assert sources.state(source).etag == '"v2"' and b"t2" in sources.documents()[source.url]


def test_without_an_etag_the_same_body_is_unchanged(server: SourceServer) -> None:
    server.serve(_remote("t1", epoch=4))
    sources = RegistrySources([server.source()])
    source = sources.sources[0]
    assert [sources.poll(source, FETCHER).outcome for _ in range(3)] == \
        [Outcome.CHANGED, Outcome.UNCHANGED, Outcome.UNCHANGED]
    assert sources.state(source).epoch == 4
    # the root epoch does not rise when only a nested message changes: the body digest decides
    server.serve(_remote("t2", epoch=4))
    assert sources.poll(source, FETCHER).outcome is Outcome.CHANGED


@pytest.mark.parametrize(("breakage", "reason"), [
    (lambda s: setattr(s, "status", 500), "HTTP status 500"),
    (lambda s: setattr(s, "body", b"{not json"), "not JSON"),
    (lambda s: setattr(s, "body", b"[1, 2]"), "not a registry document"),
])
def test_a_failed_poll_keeps_the_last_good_copy(server: SourceServer, breakage: Any, reason: str) -> None:
    server.serve(_remote("t1"))
    sources = RegistrySources([server.source()])
    source = sources.sources[0]
    sources.poll(source, FETCHER)
    good = sources.documents()
    breakage(server)
    poll = sources.poll(source, FETCHER)
    assert poll.outcome is Outcome.FAILED and reason in poll.detail
    assert sources.documents() == good and sources.state(source).error == poll.detail
    server.status, server.body = 200, good[source.url]
    assert sources.poll(source, FETCHER).outcome is Outcome.UNCHANGED  # back, and the same as before
    assert sources.state(source).error is None


def test_a_refused_or_unreachable_source_fails_without_touching_others(server: SourceServer) -> None:
    server.serve(_remote("t1"))
    down = RegistrySource(f"http://127.0.0.1:{_closed_port()}/registry")
    elsewhere = RegistrySource("http://192.0.2.1/registry")  # not on the allow-list
    sources = RegistrySources([down, server.source(), elsewhere])
    warnings = sources.start(FETCHER)
    assert [(w.file, w.severity, w.code) for w in warnings] == [(down.url, Severity.WARNING, "source"),
                                                                (elsewhere.url, Severity.WARNING, "source")]
    assert "not on gateway.yaml `remote.allow`" in warnings[1].message
    assert list(sources.documents()) == [server.base + "/registry"]
    assert sources.start(FETCHER) == []  # startup fetches once; polls retry


# --- precedence and confinement ------------------------------------------------------------------------------------

def _judge(tmp_path: Path, documents: dict[str, bytes], type_value: str) -> tuple[Any, ...]:
    snapshot = load_snapshot([tmp_path], documents=documents)
    assert not snapshot.errors, snapshot.errors
    return shape(judge_record(compile_registry(snapshot.registry), kafka_ce(type_value), "ep"))


def test_local_files_win_over_sources_and_an_earlier_source_over_a_later_one(tmp_path: Path) -> None:
    # the local endpoint names the group by xid: the merged group, not only its own file's (a `#/` pointer)
    write_doc(tmp_path, "local.xreg.json", registry("KAFKA", {"m": ce_message("local")},
                                                    endpoint_attrs={"messagegroups": ["/messagegroups/g"]}))
    first = json.dumps(_remote("first", extra={"n": ce_message("only-remote")})).encode()
    second = json.dumps(_remote("second", extra={"n": ce_message("later"), "o": ce_message("second-only")})).encode()
    documents = {"http://127.0.0.1:1/registry": first, "http://127.0.0.1:2/registry": second}
    assert _judge(tmp_path, documents, "local") == ok("g", "m")
    assert _judge(tmp_path, documents, "first") == UNKNOWN
    # groups of the same id pool their members, as files do; the first definition of a member is kept
    assert _judge(tmp_path, documents, "only-remote") == ok("g", "n")
    assert _judge(tmp_path, documents, "later") == UNKNOWN
    assert _judge(tmp_path, documents, "second-only") == ok("g", "o")
    # the same endpoint in a source is an override (a warning naming the source), not an error
    snapshot = load_snapshot([tmp_path], documents=documents)
    shadowed = [d for d in snapshot.warnings if d.code == "duplicate" and d.pointer == "/endpoints/ep"]
    assert [d.file for d in shadowed] == list(documents)


def test_without_local_files_the_earlier_source_wins(tmp_path: Path) -> None:
    documents = {"http://127.0.0.1:1/registry": json.dumps(_remote("first")).encode(),
                 "http://127.0.0.1:2/registry": json.dumps(_remote("second")).encode()}
    assert _judge(tmp_path, documents, "first") == ok("g", "m")
    assert _judge(tmp_path, dict(reversed(documents.items())), "second") == ok("g", "m")


def test_references_in_a_source_stay_on_its_server(tmp_path: Path) -> None:
    secret = {"type": "object", "required": ["never"]}
    write_doc(tmp_path, "secret.json", secret)
    doc = _remote("t", extra={
        "rel": ce_message("rel", dataschemaformat="JsonSchema/draft-07", dataschemauri="secret.json"),
        "up": ce_message("up", dataschemaformat="JsonSchema/draft-07", dataschemauri="../../secret.json"),
        "abs": ce_message("abs", dataschemaformat="JsonSchema/draft-07",
                          dataschemauri=(tmp_path / "secret.json").as_uri())})
    url = "http://127.0.0.1:1/registry"
    snapshot = load_snapshot([tmp_path / "none"], documents={url: json.dumps(doc).encode()})
    refs = {d.pointer.split("/")[4]: d for d in snapshot.diagnostics if d.pointer.endswith("/dataschemauri")}
    assert set(refs) == {"rel", "up", "abs"}
    assert all(d.file == url and "remote fetching is off" in d.message for d in refs.values()), refs
    assert str(tmp_path) not in refs["rel"].message + refs["up"].message
    # allowed to fetch from its host, a `file:` reference in it is still no local file
    fetched = load_snapshot([tmp_path / "none"], documents={url: json.dumps(doc).encode()}, fetcher=FETCHER)
    [abs_ref] = [d for d in fetched.diagnostics if d.pointer == "/messagegroups/g/messages/abs/dataschemauri"]
    assert "only http and https URLs are fetched" in abs_ref.message
    # nothing was read from the local file: its required field is not checked
    ruleset = compile_registry(snapshot.registry)
    assert shape(judge_record(ruleset, kafka_ce("rel", body="{}"), "ep")) == ok("g", "rel")


def test_a_broken_source_document_is_named_by_its_url(tmp_path: Path) -> None:
    snapshot = load_snapshot([tmp_path], documents={"http://127.0.0.1:1/registry": b"{oops"})
    assert [(d.file, d.code) for d in snapshot.errors] == [("http://127.0.0.1:1/registry", "parse")]


# --- wiring -------------------------------------------------------------------------------------------------------

def _config(tmp_path: Path, server: SourceServer, interval: float = 1) -> Path:
    config = tmp_path / "config"
    config.mkdir()
    (config / "gateway.yaml").write_text(
        f"remote:\n  allow: [127.0.0.1]\n  timeout: 2\nsources:\n  - url: {server.base}/registry\n"
        f"    interval: {interval}\n")
    return config


def test_startup_and_check_read_the_sources_and_go_on_without_a_dead_one(tmp_path: Path, server: SourceServer,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    server.serve(_remote("t1"))
    config = _config(tmp_path, server)
    sources = RegistrySources()
    loaded = load_config(str(config), sources)
    ruleset, diagnostics = loaded.ruleset, connecting_diagnostics(loaded)
    assert [d for d in diagnostics if d.severity is Severity.ERROR] == []
    assert shape(judge_record(ruleset, kafka_ce("t1"), "ep")) == ok("g", "m")
    assert list(sources.documents()) == [server.base + "/registry"]
    messages = tmp_path / "messages.jsonl"
    messages.write_text(json.dumps(kafka_ce("t1", endpoint="ep")) + "\n")
    assert main(["check", "--registry", str(config), str(messages)]) == 0  # one fetch, judged as `run` judges
    assert [r[0] for r in server.requests] == ["/registry?inline"] * 2

    server.status = 503
    loaded = load_config(str(config))
    ruleset, diagnostics = loaded.ruleset, connecting_diagnostics(loaded)
    [warning] = [d for d in diagnostics if d.code == "source"]
    assert warning.severity is Severity.WARNING and "HTTP status 503" in warning.message
    assert ruleset.definition_count == 0


def test_the_reloader_follows_a_source_and_keeps_its_rules_through_a_failure(tmp_path: Path,
                                                                               server: SourceServer) -> None:
    server.serve(_remote("t1"))
    config = _config(tmp_path, server)
    sources = RegistrySources()
    loaded = load_config(str(config), sources)
    snapshot, ruleset, settings = loaded.snapshot, loaded.ruleset, loaded.settings
    engine = Engine([], ruleset, create_source=memory.create_source, create_sink=memory.create_sink)
    reloader = Reloader(config, engine, snapshot, settings, sources=sources)

    def verdict(type_value: str) -> tuple[Any, ...]:
        return shape(judge_record(engine.ref.ruleset, kafka_ce(type_value), "ep"))

    def count(outcome: str) -> float:
        return float(engine.metrics[names.RELOADS].labels(outcome)._value.get())

    async def scenario() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(reloader.follow(stop))
        await until(lambda: len(server.requests) >= 3)
        # polls that find nothing new do not reload
        assert (count("applied"), count("unchanged"), count("failed")) == (0, 0, 0)
        server.serve(_remote("t2"))
        polls_before = len(server.requests)
        await until(lambda: verdict("t2") == ok("g", "m"))
        # counted in polls, not seconds: the first poll that sees the change applies it (one more may have
        # been on its way when the document changed)
        assert len(server.requests) - polls_before <= 2, len(server.requests) - polls_before
        assert count("applied") == 1
        server.status = 500
        await until(lambda: count("failed") >= 1)
        assert verdict("t2") == ok("g", "m")  # the rules learned before stay
        server.status = 200
        server.serve(_remote("t3"))
        await until(lambda: verdict("t3") == ok("g", "m"))
        stop.set()
        await asyncio.wait_for(task, 2)

    asyncio.run(scenario())


def test_a_settings_reload_that_adds_a_source_fetches_it(tmp_path: Path, server: SourceServer) -> None:
    server.serve(_remote("t1"))
    config = tmp_path / "config"
    config.mkdir()
    settings, _ = load_settings(config)
    snapshot = load_snapshot([config])
    engine = Engine([], compile_registry(snapshot.registry, snapshot.digest), create_source=memory.create_source,
                    create_sink=memory.create_sink)
    reloader = Reloader(config, engine, snapshot, settings)
    (tmp_path / "elsewhere").mkdir()
    (config / "gateway.yaml").write_text((_config(tmp_path / "elsewhere", server) / "gateway.yaml").read_text())
    assert asyncio.run(reloader.reload("test")) == "applied"
    assert shape(judge_record(engine.ref.ruleset, kafka_ce("t1"), "ep")) == ok("g", "m")


def test_export_includes_what_the_sources_answered(tmp_path: Path, server: SourceServer) -> None:
    server.serve(_remote("t1"))
    config = _config(tmp_path, server)
    for mode in ([], ["--resolved"]):
        out = tmp_path / f"export{len(mode)}.json"
        assert main(["export", "--config", str(config), "--output", str(out), *mode]) == 0
        exported = json.loads(out.read_text())
        assert "m" in exported["messagegroups"]["g"]["messages"]
        # the source's own `#/` pointer is written as an xid: the export stands on its own, no refetch
        assert exported["endpoints"]["ep"]["messagegroups"] == ["/messagegroups/g"]
        ruleset = compile_registry(load_snapshot([out]).registry)
        assert shape(judge_record(ruleset, kafka_ce("t1"), "ep")) == ok("g", "m")
    assert [r[0] for r in server.requests] == ["/registry?inline"] * 2
