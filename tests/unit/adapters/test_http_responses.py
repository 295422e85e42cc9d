"""The webhook source's answers: each test starts an HttpSource on 127.0.0.1 (port 0), posts to it with aiohttp
and plays the runtime's part by hand (ack with a Delivery, ack rejected, nack). In-process, loopback only."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest

from gateway.envelope import Envelope
from gateway.errors import AdapterError
from gateway.loader import load_snapshot
from gateway.routes.resolve import endpoint_config
from gateway.settings import load_settings
from gateway.verdict import Outcome, Rule, Verdict, Violation, conformant
from protocol_adapters.base import Delivery, EndpointConfig
from protocol_adapters.http import HttpSource, create_source

T = TypeVar("T")
CE_JSON = {"Content-Type": "application/cloudevents+json"}


def run(scenario: Callable[[], Awaitable[T]], timeout: float = 20.0) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(scenario(), timeout)
    return asyncio.run(bounded())


@asynccontextmanager
async def serving(options: dict[str, Any] | None = None, **extra: Any) -> AsyncIterator[tuple[HttpSource, str]]:
    config = EndpointConfig("hooks", "HTTP", ("http://127.0.0.1:0/hooks",), options or {}, extra=extra)
    async with create_source(config) as source:
        yield source, f"http://127.0.0.1:{source.port}/hooks"



@asynccontextmanager
async def runtime(source: HttpSource, decide: Callable[[HttpSource, Envelope], Awaitable[None]]
                  ) -> AsyncIterator[list[Envelope]]:
    """Plays the runtime: every envelope the source yields is recorded and answered by `decide`."""
    seen: list[Envelope] = []

    async def loop() -> None:
        async for envelope in source:
            seen.append(envelope)
            await decide(source, envelope)
    task = asyncio.create_task(loop())
    try:
        yield seen
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def accept(source: HttpSource, envelope: Envelope) -> None:
    await source.ack(envelope, Delivery(conformant("orders", "created"), forwarded=True))


async def reject(source: HttpSource, envelope: Envelope) -> None:
    violation = Violation("attributes.type", Rule.VALUE, "created", "deleted", "type differs")
    verdict = Verdict(Outcome.NONCONFORMANT, "orders", "created", (violation,))
    await source.ack(envelope, Delivery(verdict, forwarded=True, rejected=True))


async def nack(source: HttpSource, envelope: Envelope) -> None:
    await source.nack(envelope)


async def ignore(source: HttpSource, envelope: Envelope) -> None:
    return None


async def post(url: str, body: Any = b"{}", method: str = "POST", **kwargs: Any
               ) -> tuple[int, dict[str, str], bytes]:
    async with aiohttp.ClientSession() as session, session.request(method, url, data=body, **kwargs) as response:
        return response.status, dict(response.headers), await response.read()


def test_ack_answers_202_with_the_verdict_and_the_envelope_carries_the_request() -> None:
    async def scenario() -> tuple[int, bytes, list[Envelope]]:
        async with serving() as (source, url), runtime(source, accept) as seen:
            status, _, body = await post(url + "/orders?x=1&x=2", b'{"id":1}',
                                         headers=[("X-Tag", "a"), ("X-Tag", "b"), *CE_JSON.items()])
            return status, body, seen
    status, body, seen = run(scenario)
    assert status == 202
    assert json.loads(body) == {"verdict": "conformant", "messagegroupid": "orders", "messageid": "created",
                                "violations": []}
    [envelope] = seen
    assert envelope.protocol == "HTTP" and envelope.endpoint == "hooks" and envelope.body == b'{"id":1}'
    assert envelope.fields["method"] == "POST" and envelope.fields["path"] == "/hooks/orders"
    assert envelope.fields["query"] == [("x", "1"), ("x", "2")]
    assert [v for n, v in envelope.fields["headers"] if n.lower() == "x-tag"] == ["a", "b"]
    assert envelope.position["remote"] == "127.0.0.1" and envelope.position["path"] == "/hooks/orders"


def test_ack_of_a_rejected_message_answers_422_with_the_violations() -> None:
    async def scenario() -> tuple[int, bytes]:
        async with serving() as (source, url), runtime(source, reject):
            status, _, body = await post(url, headers=CE_JSON)
            return status, body
    status, body = run(scenario)
    assert status == 422
    answer = json.loads(body)
    assert answer["verdict"] == "nonconformant" and answer["messageid"] == "created"
    assert answer["violations"][0]["path"] == "attributes.type" and answer["violations"][0]["rule"] == "value"


def test_nack_answers_503_with_retry_after() -> None:
    async def scenario() -> tuple[int, dict[str, str]]:
        async with serving() as (source, url), runtime(source, nack):
            status, headers, _ = await post(url)
            return status, headers
    status, headers = run(scenario)
    assert status == 503 and headers["Retry-After"] == "1"


def test_ack_without_a_delivery_answers_202() -> None:
    async def plain_ack(source: HttpSource, envelope: Envelope) -> None:
        await source.ack(envelope)

    async def scenario() -> tuple[int, bytes]:
        async with serving() as (source, url), runtime(source, plain_ack):
            status, _, body = await post(url, method="PUT")
            return status, body
    assert run(scenario) == (202, b"{}")


def test_a_cloudevents_batch_stays_one_envelope() -> None:
    batch = json.dumps([{"specversion": "1.0", "id": str(i), "type": "t", "source": "s"} for i in range(3)])

    async def scenario() -> list[Envelope]:
        async with serving() as (source, url), runtime(source, accept) as seen:
            status, _, _ = await post(url, batch.encode(),
                                      headers={"Content-Type": "application/cloudevents-batch+json"})
            assert status == 202
            return seen
    [envelope] = run(scenario)
    assert envelope.body == batch.encode()


def test_bodies_over_the_limit_get_413_and_never_reach_the_runtime() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(4):
            yield b"x" * 40

    async def scenario() -> tuple[list[int], list[Envelope]]:
        async with serving({"maxbodysize": 100}) as (source, url), runtime(source, accept) as seen:
            declared = (await post(url, b"x" * 101))[0]
            streamed = (await post(url, chunks()))[0]  # chunked: no Content-Length to check up front
            bomb = (await post(url, gzip.compress(b"x" * 10_000), headers={"Content-Encoding": "gzip"}))[0]
            small = (await post(url, b"x" * 100))[0]
            return [declared, streamed, bomb, small], seen
    statuses, seen = run(scenario)
    assert statuses == [413, 413, 413, 202]
    assert [e.body for e in seen] == [b"x" * 100]


def test_a_gzip_body_arrives_decoded_without_its_content_encoding() -> None:
    async def scenario() -> list[Envelope]:
        async with serving() as (source, url), runtime(source, accept) as seen:
            await post(url, gzip.compress(b'{"a":1}'), headers={"Content-Encoding": "gzip"})
            return seen
    [envelope] = run(scenario)
    assert envelope.body == b'{"a":1}'
    assert all(n.lower() != "content-encoding" for n, _ in envelope.fields["headers"])


def test_a_body_that_does_not_decode_gets_400() -> None:
    async def scenario() -> tuple[int, list[Envelope]]:
        async with serving() as (source, url), runtime(source, accept) as seen:
            status = (await post(url, b"not gzip at all", headers={"Content-Encoding": "gzip"}))[0]
            return status, seen
    assert run(scenario) == (400, [])


def test_api_key_in_a_header() -> None:
    async def scenario() -> tuple[list[int], list[Envelope]]:
        async with serving({"apikeyname": "X-Api-Key"}, apikey="s3cret") as (source, url), \
                runtime(source, accept) as seen:
            statuses = [(await post(url))[0],
                        (await post(url, headers={"X-Api-Key": "wrong"}))[0],
                        (await post(url, headers={"X-Api-Key": "s3cret", "X-Other": "1"}))[0]]
            return statuses, seen
    statuses, seen = run(scenario)
    assert statuses == [401, 401, 202]
    [envelope] = seen
    assert all(n.lower() != "x-api-key" for n, _ in envelope.fields["headers"])


def test_api_key_in_the_query_and_as_a_bearer_token() -> None:
    async def scenario() -> tuple[list[int], list[Envelope], str]:
        async with serving({"apikeyname": "key", "apikeyin": "query"}, apikey="s3cret") as (source, url), \
                runtime(source, accept) as seen:
            statuses = [(await post(url + "?key=nope"))[0]]
            status, headers, _ = await post(url + "?key=s3cret&k=v")
            statuses.append(status)
        async with serving({"apikeyname": "Authorization"}, apikey="tok") as (source, url), \
                runtime(source, accept):
            statuses.append((await post(url, headers={"Authorization": "Bearer tok"}))[0])
            statuses.append((await post(url, headers={"Authorization": "Bearer other"}))[0])
        return statuses, seen, headers.get("Cache-Control", "")
    statuses, seen, cache = run(scenario)
    assert statuses == [401, 202, 202, 401]
    assert seen[0].fields["query"] == [("k", "v")] and cache == "private"


def test_wrong_path_and_method() -> None:
    async def scenario() -> tuple[int, int, str]:
        async with serving() as (source, url), runtime(source, accept):
            elsewhere = (await post(url.replace("/hooks", "/other")))[0]
            status, headers, _ = await post(url, method="DELETE")
            return elsewhere, status, headers["Allow"]
    elsewhere, status, allow = run(scenario)
    assert elsewhere == 404 and status == 405 and allow == "HEAD, OPTIONS, POST, PUT"


def test_options_head_and_the_webhook_validation_handshake() -> None:
    async def scenario() -> list[tuple[int, dict[str, str]]]:
        answers = []
        async with serving() as (_, url):
            for method, headers in (("OPTIONS", {}), ("OPTIONS", {"WebHook-Request-Origin": "emitter.example.com"}),
                                    ("HEAD", {})):
                status, got, _ = await post(url, b"", method=method, headers=headers)
                answers.append((status, got))
        async with serving({"allowedorigins": ["good.example.com"]}) as (_, url):
            status, got, _ = await post(url, b"", method="OPTIONS", headers={"WebHook-Request-Origin": "evil.example"})
            answers.append((status, got))
        return answers
    plain, handshake, head, refused = run(scenario)
    assert plain[0] == 200 and "POST" in plain[1]["Allow"] and "WebHook-Allowed-Origin" not in plain[1]
    assert handshake[0] == 200 and handshake[1]["WebHook-Allowed-Origin"] == "emitter.example.com"
    assert handshake[1]["WebHook-Allowed-Rate"] == "*"
    assert head[0] == 200
    assert refused[0] == 403 and "WebHook-Allowed-Origin" not in refused[1]


def test_a_full_in_flight_window_answers_503_after_the_queue_timeout() -> None:
    async def scenario() -> tuple[int, int]:
        async with serving({"maxinflight": 1, "queuetimeout": 0.2, "responsetimeout": 5}) as (source, url):
            held = asyncio.create_task(post(url))  # yielded to nobody: holds the only slot
            for _ in range(100_000):  # until it holds it (counted in loop turns, not seconds)
                if source._slots.locked():
                    break
                await asyncio.sleep(0.001)
            assert source._slots.locked(), "the first request never took the only slot"
            second = (await post(url))[0]
            envelope = await source.__aiter__().__anext__()
            await accept(source, envelope)
            return (await held)[0], second
    assert run(scenario) == (202, 503)


def test_no_ack_in_time_answers_503_and_a_late_ack_is_harmless() -> None:
    async def scenario() -> tuple[int, int]:
        async with serving({"responsetimeout": 0.2}) as (source, url):
            held = asyncio.create_task(post(url))
            envelope = await source.__aiter__().__anext__()
            status = (await held)[0]
            await accept(source, envelope)  # the request was answered already
            async with runtime(source, accept):
                again = (await post(url))[0]
            return status, again
    assert run(scenario) == (503, 202)


def test_receipt_mode_answers_202_once_queued() -> None:
    async def scenario() -> tuple[int, bytes, int]:
        async with serving({"respond": "receipt"}) as (source, url):
            status, _, body = await post(url, b"early")
            envelope = await source.__aiter__().__anext__()
            await source.ack(envelope)
            return status, body, len(envelope.body)
    assert run(scenario) == (202, b"{}", 5)


def test_stop_refuses_new_requests_and_ends_iteration() -> None:
    async def scenario() -> tuple[int, int, list[Envelope]]:
        async with serving() as (source, url):
            got: list[Envelope] = []

            async def consume() -> None:
                async for envelope in source:
                    got.append(envelope)
                    await accept(source, envelope)
            task = asyncio.create_task(consume())
            before = (await post(url))[0]
            await source.stop()
            after = (await post(url))[0]
            await asyncio.wait_for(task, 5)
            return before, after, got
    before, after, got = run(scenario)
    assert (before, after, len(got)) == (202, 503, 1)


def test_closing_answers_held_requests_503() -> None:
    async def scenario() -> int:
        async with serving() as (source, url):
            held = asyncio.create_task(post(url))
            await source.__aiter__().__anext__()  # taken, never acknowledged
        return (await held)[0]
    assert run(scenario) == 503


def test_a_port_in_use_is_a_retriable_error() -> None:
    async def scenario() -> AdapterError:
        async with serving() as (source, _):
            config = EndpointConfig("again", "HTTP", (f"http://127.0.0.1:{source.port}/x",))
            with pytest.raises(AdapterError) as caught:
                async with create_source(config):
                    pass
            return caught.value
    error = run(scenario)
    assert error.retriable and "cannot listen" in str(error)


def test_the_endpoint_document_declares_the_key_and_limit_and_a_secret_file_supplies_the_key(tmp_path: Path) -> None:
    """The way an operator configures it: `apikeyname`, `apikeyin` and `maxbodysize` in the registry document,
    the key itself only in gateway.yaml (`apikey_file`), read over real HTTP in header and in query form."""
    def endpoint(where: str) -> dict[str, Any]:
        return {"usage": ["consumer"], "protocol": "HTTP",
                "protocoloptions": {"endpoints": [{"uri": "http://127.0.0.1:0/hooks"}], "apikeyname": "X-Api-Key",
                                    "apikeyin": where, "maxbodysize": 64}}
    (tmp_path / "hooks.json").write_text(json.dumps({"endpoints": {"header": endpoint("header"),
                                                                  "query": endpoint("query")}}))
    (tmp_path / "hook-key").write_text("k3y-from-a-secret\n")
    (tmp_path / "gateway.yaml").write_text("endpoints:\n" + "".join(
        f"  {name}: {{apikey_file: {tmp_path / 'hook-key'}}}\n" for name in ("header", "query")))
    snapshot = load_snapshot([tmp_path])
    settings, problems = load_settings(tmp_path)
    assert problems == []
    key = {"X-Api-Key": "k3y-from-a-secret"}

    async def scenario() -> tuple[list[int], list[int], list[Envelope]]:
        async with create_source(endpoint_config(snapshot.registry, "header", settings)) as source, \
                runtime(source, accept) as seen:
            url = f"http://127.0.0.1:{source.port}/hooks"
            in_header = [(await post(url))[0], (await post(url, headers={"X-Api-Key": "guess"}))[0],
                         (await post(url + "?X-Api-Key=k3y-from-a-secret"))[0],  # the header is what counts
                         (await post(url, b"x" * 65))[0],  # unauthenticated: refused before the body is read
                         (await post(url, b"x" * 65, headers=key))[0], (await post(url, headers=key))[0]]
        async with create_source(endpoint_config(snapshot.registry, "query", settings)) as source, \
                runtime(source, accept) as more:
            url = f"http://127.0.0.1:{source.port}/hooks"
            in_query = [(await post(url, headers=key))[0], (await post(url + "?X-Api-Key=guess"))[0],
                        (await post(url + "?X-Api-Key=k3y-from-a-secret&tenant=blue"))[0]]
        return in_header, in_query, seen + more
    in_header, in_query, seen = run(scenario)
    assert in_header == [401, 401, 401, 401, 413, 202]
    assert in_query == [401, 401, 202]
    # the key is not passed on with the message
    assert [e.fields["query"] for e in seen] == [[], [("tenant", "blue")]]
    assert all(n.lower() != "x-api-key" for e in seen for n, _ in e.fields["headers"])
