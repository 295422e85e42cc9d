"""The contract suite against the HTTP adapter: HttpSink -> a real HttpSource (aiohttp server) on 127.0.0.1.

HTTP is push: there is no broker holding messages, so `at_least_once` is False and the suite's redelivery
tests are skipped. The redelivery is the client's retry: with `respond: delivery` (the default) the source
answers only after the runtime's ack, a nack answers 503 and the sender sends again; the tests at the end
show that with HttpSink as the sender.

The suite publishes everything before it reads, so its harness runs the source with `respond: receipt`
(202 once queued): with the default, the first send would wait for an ack the suite only gives later.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from gateway.envelope import Envelope
from gateway.errors import AdapterError
from gateway.verdict import Outcome, Verdict, conformant
from protocol_adapters import http
from protocol_adapters.base import Delivery, EndpointConfig, TlsSettings
from tests.conftest import free_port
from tests.contract.suite import ContractSuite, run, take

KEPT = ("content-type", "ce-", "x-")


class HttpHarness:
    protocol = "HTTP"
    at_least_once = False

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        self.run_id = uuid.uuid4().hex[:8]
        self.options = {"respond": "receipt"} if options is None else options

    def config(self, name: str) -> EndpointConfig:
        uri = f"http://127.0.0.1:{free_port()}/contract/{self.run_id}/{name}"
        return EndpointConfig(name, "HTTP", (uri,), self.options)

    def unreachable(self, name: str) -> EndpointConfig:
        return EndpointConfig(name, "HTTP", (f"http://127.0.0.1:{free_port()}/{name}",), {"requesttimeout": 5})

    def sample(self, index: int) -> Envelope:
        headers = [("Content-Type", "application/json"), ("ce-id", f"id-{index}"), ("ce-type", "com.example.t"),
                   ("X-Tag", "a"), ("X-Tag", "b"), ("x-text", "café €"), ("Connection", "keep-alive")]
        body = b'{"n": %d, "bin": "' % index + bytes(range(1, 32)) + b'"}\xff\x00'
        return Envelope("HTTP", {"method": "POST", "path": "/ignored", "query": [], "headers": headers}, body)

    def comparable(self, envelope: Envelope) -> Any:
        # what the sink carries: body, method and the message's own headers (order and repeats kept)
        headers = [(name.lower(), value) for name, value in envelope.fields["headers"]
                   if name.lower().startswith(KEPT)]
        return envelope.body, envelope.fields["method"], headers

    create_source = staticmethod(http.create_source)
    create_sink = staticmethod(http.create_sink)


@pytest.fixture
def harness() -> HttpHarness:
    return HttpHarness()


class TestHttpAdapter(ContractSuite):
    pass


# -- with the default `respond: delivery`: the answer carries the runtime's decision back to the sender -----


async def _runtime(source: Any, decide: str, seen: list[Envelope]) -> None:
    async for envelope in source:
        seen.append(envelope)
        if decide == "nack-first" and len(seen) == 1 or decide == "nack":
            await source.nack(envelope)
        elif decide == "reject":
            verdict = Verdict(Outcome.NONCONFORMANT, "g", "m")
            await source.ack(envelope, Delivery(verdict, forwarded=True, rejected=True))
        else:
            await source.ack(envelope, Delivery(conformant("g", "m"), forwarded=True))


@contextlib.asynccontextmanager
async def _delivering(decide: str) -> AsyncIterator[tuple[Any, list[Envelope]]]:
    harness = HttpHarness(options={})
    config = harness.config("delivery")
    seen: list[Envelope] = []
    async with http.create_source(config) as source, http.create_sink(config) as sink:
        task = asyncio.create_task(_runtime(source, decide, seen))
        try:
            yield sink, seen
        finally:
            await source.stop()
            await asyncio.wait_for(task, 5)


def test_send_returns_once_the_runtime_acknowledged() -> None:
    harness = HttpHarness(options={})

    async def scenario() -> list[Envelope]:
        async with _delivering("ack") as (sink, seen):
            await asyncio.gather(*(sink.send(harness.sample(i)) for i in range(50)))
            return seen
    seen = run(scenario)
    assert sorted(e.body for e in seen) == sorted(harness.sample(i).body for i in range(50))


def test_a_nack_is_a_retriable_error_and_the_retry_is_the_redelivery() -> None:
    harness = HttpHarness(options={})

    async def scenario() -> tuple[bool, list[Envelope]]:
        async with _delivering("nack-first") as (sink, seen):
            with pytest.raises(AdapterError) as caught:
                await sink.send(harness.sample(3))
            await sink.send(harness.sample(3))  # what the runtime's retry does
            return caught.value.retriable, seen
    retriable, seen = run(scenario)
    assert retriable and len(seen) == 2
    assert harness.comparable(seen[0]) == harness.comparable(seen[1]) == harness.comparable(harness.sample(3))


def test_a_rejected_message_is_not_retriable() -> None:
    async def scenario() -> AdapterError:
        async with _delivering("reject") as (sink, _):
            with pytest.raises(AdapterError) as caught:
                await sink.send(HttpHarness().sample(1))
            return caught.value
    error = run(scenario)
    assert not error.retriable and "422" in str(error)


# -- the sink against a plain aiohttp server: which answers retrying can fix --------------------------------


@pytest.mark.parametrize(("status", "retriable"), [(500, True), (503, True), (429, True), (408, True),
                                                   (400, False), (404, False), (410, False), (301, False)])
def test_sink_status_codes(status: int, retriable: bool) -> None:
    async def scenario() -> AdapterError:
        async def answer(request: web.BaseRequest) -> web.Response:
            await request.read()
            return web.Response(status=status, text="nope", headers={"Location": "http://127.0.0.1:1/"})
        runner = web.ServerRunner(web.Server(answer, access_log=None))
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        try:
            config = EndpointConfig("s", "HTTP", (f"http://127.0.0.1:{port}/in",))
            async with http.create_sink(config) as sink:
                with pytest.raises(AdapterError) as caught:
                    await sink.send(HttpHarness().sample(0))
                return caught.value
        finally:
            await runner.cleanup()
    error = run(scenario)
    assert error.retriable is retriable and str(status) in str(error)


def test_sink_timeout_is_retriable_and_static_options_are_sent() -> None:
    async def scenario() -> tuple[AdapterError, list[Any]]:
        seen: list[Any] = []

        async def answer(request: web.BaseRequest) -> web.Response:
            seen.append((request.method, request.rel_url.query_string, request.headers.getall("X-Static", []),
                         request.headers.get("X-Key"), await request.read()))
            if request.rel_url.query.get("slow"):
                await asyncio.sleep(0.8)
            return web.Response(status=204)
        runner = web.ServerRunner(web.Server(answer, access_log=None))
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        try:
            options = {"method": "PUT", "headers": [{"name": "X-Static", "value": "1"}], "query": {"q": "v"},
                       "apikeyname": "X-Key"}
            ok = EndpointConfig("s", "HTTP", (f"http://127.0.0.1:{port}/in",), options, extra={"apikey": "k"})
            async with http.create_sink(ok) as sink:
                await sink.send(Envelope("HTTP", {"headers": [("X-Key", "forged")]}, b"b"))
            slow = EndpointConfig("s", "HTTP", (f"http://127.0.0.1:{port}/in?slow=1",), {"requesttimeout": 0.3})
            async with http.create_sink(slow) as sink:
                with pytest.raises(AdapterError) as caught:
                    await sink.send(Envelope("HTTP", {}, b"b"))
            return caught.value, seen
        finally:
            await runner.cleanup()
    error, seen = run(scenario)
    assert error.retriable and "timed out" in str(error)
    assert seen[0] == ("PUT", "q=v", ["1"], "k", b"b")


def test_many_concurrent_sends_share_the_pool() -> None:
    harness = HttpHarness()
    config = harness.config("concurrent")

    async def scenario() -> int:
        async with http.create_source(config) as source, http.create_sink(config) as sink:
            sent = [harness.sample(i) for i in range(500)]
            await asyncio.gather(*(sink.send(e) for e in sent))
            got = await take(source, len(sent), timeout=10)
            for envelope in got:
                await source.ack(envelope)
            return len(got)
    assert run(scenario) == 500


# -- TLS: an https source with a self-signed certificate, a sink that trusts it (and one that does not) ------


def _self_signed(directory: Any) -> tuple[str, str]:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed (needed to make a test certificate)")
    cert, key = str(directory / "cert.pem"), str(directory / "key.pem")
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert],
                   check=True, capture_output=True)
    return cert, key


def test_https_source_and_sink(tmp_path: Any) -> None:
    cert, key = _self_signed(tmp_path)
    uri = f"https://127.0.0.1:{free_port()}/secure"
    served = EndpointConfig("tls", "HTTP", (uri,), {"respond": "receipt"},
                            tls=TlsSettings(cert_file=cert, key_file=key))
    trusting = EndpointConfig("tls", "HTTP", (uri,), tls=TlsSettings(ca_file=cert))
    untrusting = EndpointConfig("tls", "HTTP", (uri,))

    async def scenario() -> tuple[list[Envelope], AdapterError]:
        async with http.create_source(served) as source:
            async with http.create_sink(trusting) as sink:
                await sink.send(HttpHarness().sample(1))
            async with http.create_sink(untrusting) as sink:
                with pytest.raises(AdapterError) as caught:
                    await sink.send(HttpHarness().sample(2))
            got = await take(source, 1, timeout=5)
            for envelope in got:
                await source.ack(envelope)
            return got, caught.value
    got, refused = run(scenario)
    assert [e.body for e in got] == [HttpHarness().sample(1).body]
    # the destination's certificate is the fault, not the message: retried (with backoff) until it is fixed
    assert refused.retriable and "Certificate" in str(refused)
