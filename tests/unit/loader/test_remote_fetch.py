"""http(s) references are fetched only as gateway.yaml's `remote` section allows (validation rule 2):
off by default, allow-listed hosts, public addresses unless listed, a timeout, a size cap and a cache.
Documents are served by a local http.server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from gateway.check import judge_record
from gateway.cli import main
from gateway.commands.startup import connecting_diagnostics, load_config
from gateway.compiler import compile_registry
from gateway.compiler.payload.jsonschema import compile_jsonschema
from gateway.errors import Severity
from gateway.loader import load_snapshot
from gateway.loader.bundle import bundle
from gateway.loader.fetch import FetchError, RemoteFetcher, RemotePolicy
from gateway.runtime.engine import Engine
from gateway.runtime.reload import Reloader
from gateway.settings import load_settings
from gateway.testing import memory
from tests.unit.builders import Loaded, bad, ce_message, kafka_ce, ok, registry, shape, write_doc
from tests.unit.local_http import serving

SCHEMA = {"type": "object", "required": ["temperature"], "properties": {"temperature": {"type": "number"}}}
GOOD, WRONG = '{"temperature": 1}', '{"temperature": "x"}'
REMOTE_REGISTRY = {
    "messagegroups": {"remote": {"messages": {
        "base": ce_message("base", {"source": {"value": "/plant/{site}", "required": True}}),
        "r": ce_message("r", dataschemaformat="JsonSchema/draft-07", dataschemauri="#/schemagroups/sg/schemas/s"),
    }}},
    "schemagroups": {"sg": {"schemas": {"s": {"format": "JsonSchema/draft-07", "versions": {"1": {"schema": SCHEMA}}}}}},
}


# a schema whose relative $ref resolves against the URL it is fetched from
ENVELOPE = {"type": "object", "required": ["reading"], "properties": {"reading": {"$ref": "reading.json"}}}


@dataclass
class Server:
    base: str
    hits: Counter[str] = field(default_factory=Counter)
    release: threading.Event = field(default_factory=threading.Event)
    failing: set[str] = field(default_factory=set)
    bodies: dict[str, bytes] = field(default_factory=dict)


@pytest.fixture
def server() -> Iterator[Server]:
    state = Server("")
    state.bodies = {"/schemas/reading.json": json.dumps(SCHEMA).encode(),
                    "/schemas/envelope.json": json.dumps(ENVELOPE).encode(),
                    "/registry.json": json.dumps(REMOTE_REGISTRY).encode()}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.hits[self.path] += 1
            if self.path == "/slow":
                state.release.wait(10)  # holds the response until the test ends
                return
            if self.path in state.failing:
                self.send_error(500)
            elif self.path == "/big":
                self._send(b"{}", length=10_000_000)
            elif self.path == "/big-unannounced":
                # no Content-Length: the body runs until the connection closes
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b" " * 20_000)
            elif self.path == "/redirect-out":
                self.send_response(302)
                self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
                self.end_headers()
            elif self.path in state.bodies:
                self._send(state.bodies[self.path])
            else:
                self.send_error(404)

        def _send(self, body: bytes, length: int | None = None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(length if length is not None else len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    with serving(Handler) as base:
        state.base = base
        try:
            yield state
        finally:
            state.release.set()  # let a handler held on purpose finish before the server shuts down


def _allow_local(**policy: Any) -> RemoteFetcher:
    return RemoteFetcher(RemotePolicy(allow=("127.0.0.1",), **policy))


def _document(dataschemauri: str) -> dict[str, Any]:
    return registry("KAFKA", {"m": ce_message("t", dataschemaformat="JsonSchema/draft-07", dataschemauri=dataschemauri),
                              "other": ce_message("u")})


def _load(tmp_path: Path, doc: dict[str, Any], fetcher: RemoteFetcher | None) -> Loaded:
    write_doc(tmp_path, "registry.xreg.json", doc)
    snapshot = load_snapshot([tmp_path], fetcher=fetcher)
    return Loaded(snapshot, compile_registry(snapshot.registry, snapshot.digest))


def _at_dataschemauri(loaded: Loaded, severity: Severity) -> str:
    [found] = [d for d in (*loaded.errors, *loaded.warnings)
               if d.pointer == "/messagegroups/g/messages/m/dataschemauri" and d.severity is severity]
    assert found.file == str(loaded.snapshot.roots[0]) + "/registry.xreg.json"
    return found.message


# --- policy -----------------------------------------------------------------------------------------


def test_nothing_is_fetched_by_default(tmp_path: Path, server: Server) -> None:
    loaded = _load(tmp_path, _document(f"{server.base}/schemas/reading.json"), None)
    assert "remote fetching is off" in _at_dataschemauri(loaded, Severity.WARNING)
    assert shape(loaded.judge(kafka_ce("t", body=WRONG), "ep")) == ok("g", "m")  # payload unchecked, as documented
    assert server.hits == Counter()


def test_a_host_off_the_allow_list_is_refused_without_a_request(tmp_path: Path, server: Server) -> None:
    fetcher = RemoteFetcher(RemotePolicy(allow=("schemas.example.com", "127.0.0.1:1")))
    loaded = _load(tmp_path, _document(f"{server.base}/schemas/reading.json"), fetcher)
    port = server.base.rsplit(":", 1)[1]
    assert f"host 127.0.0.1:{port} is not on gateway.yaml `remote.allow`" in \
        _at_dataschemauri(loaded, Severity.WARNING)
    assert loaded.errors == [] and server.hits == Counter()


def test_an_allowed_fetch_validates_and_is_cached(tmp_path: Path, server: Server) -> None:
    fetcher = _allow_local()
    loaded = _load(tmp_path, _document(f"{server.base}/schemas/reading.json"), fetcher)
    assert loaded.errors == [] and loaded.warnings == []
    assert shape(loaded.judge(kafka_ce("t", body=GOOD), "ep")) == ok("g", "m")
    assert shape(loaded.judge(kafka_ce("t", body=WRONG), "ep")) == bad("g", "m", ("dataschema:/temperature", "schema"))
    again = load_snapshot([tmp_path], fetcher=fetcher)
    assert again.digest == loaded.snapshot.digest
    assert server.hits == Counter({"/schemas/reading.json": 1})


def test_a_changed_remote_document_changes_the_digest(tmp_path: Path, server: Server) -> None:
    fetcher = _allow_local(cache_ttl=0)
    first = _load(tmp_path, _document(f"{server.base}/schemas/reading.json"), fetcher).snapshot.digest
    server.bodies["/schemas/reading.json"] = json.dumps({"type": "array"}).encode()
    assert load_snapshot([tmp_path], fetcher=fetcher).digest != first


def test_a_slow_server_times_out(tmp_path: Path, server: Server) -> None:
    started = time.monotonic()
    loaded = _load(tmp_path, _document(f"{server.base}/slow"), _allow_local(timeout=0.3))
    assert time.monotonic() - started < 3
    assert "timed out after 0.3 s (gateway.yaml `remote.timeout`)" in _at_dataschemauri(loaded, Severity.ERROR)
    # allowed but not fetched is a broken link: the message is left out, as for a missing local file
    assert [v.rule.value for v in loaded.judge(kafka_ce("t", body=GOOD), "ep").violations] == ["no-match"]
    assert shape(loaded.judge(kafka_ce("u"), "ep")) == ok("g", "other")


@pytest.mark.parametrize(("path", "reason"), [
    ("/big", "response of 10,000,000 bytes is over the 1,000-byte limit (gateway.yaml `remote.max_bytes`)"),
    ("/big-unannounced", "response is over the 1,000-byte limit (gateway.yaml `remote.max_bytes`)"),
])
def test_an_oversize_response_is_refused(tmp_path: Path, server: Server, path: str, reason: str) -> None:
    loaded = _load(tmp_path, _document(f"{server.base}{path}"), _allow_local(max_bytes=1000))
    assert reason in _at_dataschemauri(loaded, Severity.ERROR)


def test_a_name_resolving_to_a_loopback_address_needs_the_address_listed(tmp_path: Path, server: Server) -> None:
    port = server.base.rsplit(":", 1)[1]
    url = f"http://localhost:{port}/schemas/reading.json"
    refused = _load(tmp_path, _document(url), RemoteFetcher(RemotePolicy(allow=("localhost",))))
    message = _at_dataschemauri(refused, Severity.ERROR)
    assert "localhost resolves to" in message and "a loopback address; list it (or a network holding it)" in message
    assert server.hits == Counter()
    listed = _load(tmp_path, _document(url), RemoteFetcher(RemotePolicy(allow=("localhost", "127.0.0.0/8", "::1"))))
    assert listed.errors == []


def test_a_redirect_is_checked_like_the_first_url(tmp_path: Path, server: Server) -> None:
    loaded = _load(tmp_path, _document(f"{server.base}/redirect-out"), _allow_local())
    assert "redirected to http://169.254.169.254/latest/meta-data/, which is not fetched: host 169.254.169.254:80 " \
           "is not on gateway.yaml `remote.allow`" in _at_dataschemauri(loaded, Severity.ERROR)


def test_a_failed_refetch_keeps_the_cached_copy(tmp_path: Path, server: Server) -> None:
    fetcher = _allow_local(cache_ttl=0)
    _load(tmp_path, _document(f"{server.base}/schemas/reading.json"), fetcher)
    server.failing.add("/schemas/reading.json")
    snapshot = load_snapshot([tmp_path], fetcher=fetcher)
    [stale] = [d for d in snapshot.warnings if d.code == "remote-stale"]
    assert stale.file == f"{server.base}/schemas/reading.json" and "HTTP status 500" in stale.message
    loaded = Loaded(snapshot, compile_registry(snapshot.registry, snapshot.digest))
    assert shape(loaded.judge(kafka_ce("t", body=WRONG), "ep")) == bad("g", "m", ("dataschema:/temperature", "schema"))


def test_urls_the_policy_never_fetches() -> None:
    fetcher = RemoteFetcher(RemotePolicy(allow=("*.example.com", "registry.test:8443", "[fd00::1]:8443")))
    assert fetcher.refusal("https://a.example.com/s.json") is None
    assert fetcher.refusal("https://registry.test:8443/s.json") is None
    assert fetcher.refusal("https://[fd00::1]:8443/s.json") is None
    assert fetcher.refusal("https://[fd00::2]:8443/s.json") is not None
    assert fetcher.refusal("https://example.com/s.json") == "host example.com:443 is not on gateway.yaml `remote.allow`"
    assert fetcher.refusal("https://registry.test/s.json") is not None  # another port
    assert fetcher.refusal("ftp://a.example.com/s.json") == "only http and https URLs are fetched, not ftp"
    assert fetcher.refusal("https://user:pw@a.example.com/s.json") == "URLs with credentials are not fetched"
    with pytest.raises(FetchError, match="a link-local address"):
        RemoteFetcher(RemotePolicy(allow=("metadata.example.com",)), resolve=lambda host, port: ["169.254.169.254"]) \
            .fetch("http://metadata.example.com/latest/")


# --- $refs inside a JSON Schema --------------------------------------------------------------------


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    return registry("KAFKA", {"m": ce_message("t", dataschemaformat="JsonSchema/draft-07", dataschema=schema)})


def test_remote_json_schema_refs_are_embedded_when_allowed(tmp_path: Path, server: Server) -> None:
    schema = {"type": "object", "properties": {"inner": {"$ref": f"{server.base}/schemas/envelope.json"}}}
    loaded = _load(tmp_path, _inline(schema), _allow_local())
    assert loaded.errors == []
    assert shape(loaded.judge(kafka_ce("t", body=f'{{"inner": {{"reading": {GOOD}}}}}'), "ep")) == ok("g", "m")
    assert shape(loaded.judge(kafka_ce("t", body=f'{{"inner": {{"reading": {WRONG}}}}}'), "ep")) == \
        bad("g", "m", ("dataschema:/inner/reading/temperature", "schema"))
    # envelope.json's relative `reading.json` was fetched relative to envelope.json's URL
    assert server.hits == Counter({"/schemas/envelope.json": 1, "/schemas/reading.json": 1})


def test_a_remote_json_schema_ref_off_the_allow_list_is_an_error(tmp_path: Path, server: Server) -> None:
    schema = {"$ref": f"{server.base}/schemas/reading.json"}
    loaded = _load(tmp_path, _inline(schema), RemoteFetcher(RemotePolicy(allow=("schemas.example.com",))))
    [error] = [d for d in loaded.errors if d.code == "dangling-ref"]
    assert error.pointer == "/messagegroups/g/messages/m/dataschema"
    assert f"schema $ref cannot be followed: {server.base}/schemas/reading.json is not fetched: host 127.0.0.1:" \
        in error.message
    assert server.hits == Counter()


def _compiled(schema: Any, version: str) -> Any:
    return compile_jsonschema(schema, version)


def test_bundling_follows_the_base_uri_and_fetches_only_what_the_schema_does_not_hold() -> None:
    served = {"https://s.example/folder/integer.json": {"type": "integer"},
              "https://s.example/item.json": {"type": "string"}}
    asked: list[str] = []

    def fetch(url: str) -> Any:
        asked.append(url)
        return served[url]

    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://s.example/root.json",
              "properties": {
                  # an $id below the root moves the base: this is folder/integer.json
                  "n": {"$id": "folder/", "items": {"$ref": "integer.json"}},
                  # a resource the schema holds itself is never fetched
                  "t": {"$ref": "https://s.example/tree.json"},
                  "s": {"$ref": "item.json"},
                  # instance data that happens to hold a `$ref` key
                  "c": {"const": {"$ref": "https://s.example/data-not-a-ref.json"}}},
              "$defs": {"tree": {"$id": "tree.json", "type": "object"}}}
    validator = _compiled(bundle(schema, None, fetch, legacy=False), "2020-12")
    assert sorted(asked) == ["https://s.example/folder/integer.json", "https://s.example/item.json"]
    assert validator.check_value({"n": [1], "t": {}, "s": "x"}) is None
    assert validator.check_value({"n": ["1"]}) is not None and validator.check_value({"s": 1}) is not None


def test_bundling_a_fetched_draft_07_root_that_is_only_a_ref() -> None:
    # beside a draft-07 `$ref` an `$id` is ignored, so the fetched root's URL goes on a wrapper
    served = {"https://s.example/a/inner.json": {"type": "integer"}}
    bundled = bundle({"$ref": "inner.json"}, "https://s.example/a/outer.json", served.__getitem__, legacy=True)
    validator = _compiled(bundled, "draft-07")
    assert validator.check_value(1) is None and validator.check_value("1") is not None


# --- remote registry documents ---------------------------------------------------------------------


def test_groups_base_messages_and_schemas_from_a_remote_registry(tmp_path: Path, server: Server) -> None:
    url = f"{server.base}/registry.json"
    doc = {"endpoints": {"ep": {"usage": ["consumer"], "protocol": "KAFKA",
                                "messagegroups": [f"{url}#/messagegroups/remote", "#/messagegroups/g"]}},
           "messagegroups": {"g": {"messages": {"derived": {**ce_message("d"),
                                                            "basemessage": f"{url}#/messagegroups/remote/messages/base"}}}}}
    loaded = _load(tmp_path, doc, _allow_local())
    assert loaded.errors == []
    # the remote group's message and its schema (a reference relative to the remote document)
    assert shape(loaded.judge(kafka_ce("r", body=GOOD), "ep")) == ok("remote", "r")
    assert shape(loaded.judge(kafka_ce("r", body=WRONG), "ep")) == \
        bad("remote", "r", ("dataschema:/temperature", "schema"))
    # the base message's source template applies to the local message derived from it
    assert shape(loaded.judge(kafka_ce("d", extra_headers={"ce_source": "/plant/berlin"}), "ep")) == ok("g", "derived")
    assert shape(loaded.judge(kafka_ce("d"), "ep")) == bad("g", "derived", ("envelopemetadata.source", "template"))
    assert server.hits == Counter({"/registry.json": 1})


def test_a_remote_group_without_a_pointer_is_explained(tmp_path: Path, server: Server) -> None:
    doc = {"endpoints": {"ep": {"protocol": "KAFKA", "messagegroups": [f"{server.base}/registry.json"]}}}
    loaded = _load(tmp_path, doc, _allow_local())
    [error] = loaded.errors
    assert error.pointer == "/endpoints/ep/messagegroups/0"
    assert "a remote reference to messagegroups needs a #/pointer into the registry document" in error.message


# --- settings and commands -------------------------------------------------------------------------


def test_remote_settings_default_to_off_and_parse(tmp_path: Path) -> None:
    settings, problems = load_settings(tmp_path)
    assert problems == [] and settings.remote == RemotePolicy() and not settings.remote.enabled
    (tmp_path / "gateway.yaml").write_text("remote:\n  allow: [schemas.example.com, 10.0.0.0/8]\n  timeout: 2\n"
                                           "  max_bytes: 1000\n  cache_ttl: 0\n")
    settings, problems = load_settings(tmp_path)
    assert problems == []
    assert settings.remote == RemotePolicy(("schemas.example.com", "10.0.0.0/8"), 2.0, 1000, 0.0)


def test_bad_remote_settings_are_errors_and_leave_fetching_off(tmp_path: Path) -> None:
    (tmp_path / "gateway.yaml").write_text("remote:\n  allow: [a b, schemas.example.com]\n  timeout: -1\n  proxy: x\n")
    settings, problems = load_settings(tmp_path)
    assert not settings.remote.enabled
    assert sorted((d.pointer, d.message) for d in problems) == [
        ("/remote/allow", "'a b' is not a host name, `*.domain`, IP address or network"),
        ("/remote/proxy", "unknown setting (known: allow, timeout, max_bytes, cache_ttl)"),
        ("/remote/timeout", "expected a number of at least 0.001, found -1"),
    ]


def test_xgate_check_fetches_as_the_gateway_yaml_beside_the_documents_allows(
        tmp_path: Path, server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    write_doc(tmp_path / "config", "registry.xreg.json", _document(f"{server.base}/schemas/reading.json"))
    messages = tmp_path / "messages.jsonl"
    messages.write_text(json.dumps({**kafka_ce("t", body=WRONG), "endpoint": "ep"}) + "\n")
    assert main(["check", "--registry", str(tmp_path / "config"), str(messages)]) == 0  # off: not validated
    (tmp_path / "config" / "gateway.yaml").write_text("remote:\n  allow: [127.0.0.1]\n")
    capsys.readouterr()
    assert main(["check", "--registry", str(tmp_path / "config"), str(messages)]) == 1
    assert json.loads(capsys.readouterr().out)["violations"][0]["rule"] == "schema"
    # --settings names one explicitly (here: one that allows nothing)
    (tmp_path / "other.yaml").write_text("remote:\n  allow: []\n")
    assert main(["check", "--registry", str(tmp_path / "config"), "--settings", str(tmp_path / "other.yaml"),
                 str(messages)]) == 0


def test_xgate_run_loads_with_the_remote_settings(tmp_path: Path, server: Server) -> None:
    write_doc(tmp_path, "registry.xreg.json", _document(f"{server.base}/schemas/reading.json"))
    (tmp_path / "gateway.yaml").write_text("remote:\n  allow: [127.0.0.1]\n  timeout: 2\n")
    loaded = load_config(str(tmp_path))
    ruleset, settings, diagnostics = loaded.ruleset, loaded.settings, connecting_diagnostics(loaded)
    assert settings.remote == RemotePolicy(("127.0.0.1",), 2.0)
    assert [d for d in diagnostics if d.severity is Severity.ERROR] == []
    assert shape(judge_record(ruleset, kafka_ce("t", body=WRONG), "ep")) == \
        bad("g", "m", ("dataschema:/temperature", "schema"))


def test_a_reload_follows_the_remote_settings(tmp_path: Path, server: Server) -> None:
    write_doc(tmp_path, "registry.xreg.json", _document(f"{server.base}/schemas/reading.json"))
    snapshot = load_snapshot([tmp_path])
    settings, _ = load_settings(tmp_path)
    engine = Engine([], compile_registry(snapshot.registry, snapshot.digest), create_source=memory.create_source,
                    create_sink=memory.create_sink)
    reloader = Reloader(tmp_path, engine, snapshot, settings)
    (tmp_path / "gateway.yaml").write_text("remote:\n  allow: [127.0.0.1]\n")
    assert shape(judge_record(engine.ref.ruleset, kafka_ce("t", body=WRONG), "ep")) == ok("g", "m")
    assert asyncio.run(reloader.reload("test")) == "applied"
    # the swapped-in ruleset checks the fetched schema
    assert shape(judge_record(engine.ref.ruleset, kafka_ce("t", body=WRONG), "ep")) == \
        bad("g", "m", ("dataschema:/temperature", "schema"))
    assert server.hits == Counter({"/schemas/reading.json": 1})


def test_a_ref_to_a_standard_meta_schema_is_never_fetched() -> None:
    def fetch(url: str) -> object:
        raise AssertionError(f"fetched {url}")

    for ref in ("http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-04/schema",
                "https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2019-09/meta/core#"):
        schema = {"$ref": ref}
        assert bundle(schema, "https://schemas.example.com/a.json", fetch) == schema
