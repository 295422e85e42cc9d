"""The webhook's limits against slow and malformed clients (issue 17 defect 8): raw sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from protocol_adapters.base import EndpointConfig
from protocol_adapters.http import create_source
from protocol_adapters.http.options import source_options
from tests.unit.adapters.test_http_responses import run

HEAD = b"POST /hooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


def _config(**options: Any) -> EndpointConfig:
    return EndpointConfig("hooks", "HTTP", ("http://127.0.0.1:0/hooks",), options)


async def _exchange(port: int, data: bytes) -> bytes:
    """Send `data`, then read until the server closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    try:
        return await reader.read()
    finally:
        writer.close()


def test_defaults_are_documented_values() -> None:
    options = source_options(_config())
    assert (options.header_timeout, options.body_timeout, options.max_connections) == (10.0, 30.0, 1024)


def test_partial_headers_are_cut_off_at_the_header_timeout() -> None:
    async def scenario() -> bytes:
        async with create_source(_config(headertimeout=0.3)) as source:
            return await asyncio.wait_for(_exchange(source.port, HEAD), 5)  # the head never ends
    assert run(scenario) == b""  # closed without an answer


def test_a_body_shorter_than_its_content_length_is_answered_408() -> None:
    async def scenario() -> bytes:
        async with create_source(_config(bodytimeout=0.3)) as source:
            return await asyncio.wait_for(_exchange(source.port, HEAD + b"Content-Length: 100\r\n\r\n{\"a\": 1"), 5)
    answer = run(scenario)
    assert answer.startswith(b"HTTP/1.1 408"), answer


def test_a_malformed_request_costs_one_log_line_without_a_traceback(caplog: Any) -> None:
    async def scenario() -> bytes:
        async with create_source(_config()) as source:
            return await asyncio.wait_for(_exchange(source.port, HEAD + b"Content-Length: -1\r\n\r\n"), 5)
    with caplog.at_level(logging.DEBUG):
        answer = run(scenario)
    assert answer.split(b"\r\n")[0].endswith(b" 400 Bad Request"), answer
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(loud) == 1 and loud[0].name == "xgate.http" and loud[0].exc_info is None
    assert "malformed request from 127.0.0.1 answered 400" in loud[0].getMessage()
    assert "\n" not in loud[0].getMessage()


def _server(source: Any) -> Any:
    return source._runner.server  # the GuardedServer


async def _until(condition: Any) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("timed out")


def test_idle_connections_make_room_for_a_new_one() -> None:
    """Issue 35, item 8: connections held open doing nothing cannot keep a client out; the one idle longest
    goes."""
    async def scenario() -> tuple[bytes, bytes, int]:
        async with create_source(_config(maxconnections=2, maxconnectionsperclient=10, headertimeout=2)) as source:
            first = await asyncio.open_connection("127.0.0.1", source.port)
            await _until(lambda: _server(source).open_connections == 1)
            second = await asyncio.open_connection("127.0.0.1", source.port)
            await _until(lambda: _server(source).open_connections == 2)
            newcomer = asyncio.ensure_future(_exchange(source.port, HEAD))  # a head that never ends
            oldest = await asyncio.wait_for(first[0].read(), 5)  # closed to make room
            await _until(lambda: _server(source).evicted == 1)
            second[1].close()
            return oldest, await asyncio.wait_for(newcomer, 5), _server(source).refused
    oldest, newcomer, refused = run(scenario)
    assert oldest == b""  # closed without an answer
    assert newcomer == b"" and refused == 0  # it was let in (cut at its head timeout, not answered 503)


def test_one_connection_over_the_limit_while_every_one_is_in_a_request_is_answered_503() -> None:
    async def scenario() -> bytes:
        async with create_source(_config(maxconnections=2, maxconnectionsperclient=10, bodytimeout=5)) as source:
            busy = []
            for _ in range(2):  # each in a request: the head sent, the body still coming
                reader, writer = await asyncio.open_connection("127.0.0.1", source.port)
                writer.write(HEAD + b"Content-Length: 100\r\n\r\n{")
                await writer.drain()
                busy.append(writer)
            await _until(lambda: not _server(source)._idle_since and _server(source).open_connections == 2)
            over = await asyncio.wait_for(_exchange(source.port, HEAD), 5)
            for writer in busy:
                writer.close()
            return over
    over = run(scenario)
    assert over.startswith(b"HTTP/1.1 503"), over


def test_connections_from_one_client_are_bounded() -> None:
    async def scenario() -> tuple[bytes, int]:
        async with create_source(_config(maxconnections=100, maxconnectionsperclient=2, headertimeout=2)) as source:
            held = [await asyncio.open_connection("127.0.0.1", source.port) for _ in range(2)]
            over = await asyncio.wait_for(_exchange(source.port, HEAD), 5)
            for _, writer in held:
                writer.close()
            return over, _server(source).evicted
    over, evicted = run(scenario)
    assert over.startswith(b"HTTP/1.1 503"), over
    assert evicted == 0


def test_the_per_client_bound_defaults_to_a_quarter_of_the_connections() -> None:
    assert source_options(_config()).max_per_client == 256
    assert source_options(_config(maxconnections=2)).max_per_client == 1


def test_chunk_framing_past_the_wire_bound_is_cut_off() -> None:
    """Issue 35, item 11: a chunk extension (or size line) of megabytes is not body, so `maxbodysize` did not
    bound it; the bytes a request takes on the wire are bounded (maxbodysize + 1 MiB)."""
    chunked = HEAD + b"Transfer-Encoding: chunked\r\n\r\n"

    async def scenario() -> tuple[int, int]:
        async with create_source(_config(maxbodysize=1000, responsetimeout=0.2)) as source:
            for framing in (b"2;" + b"x" * 3_000_000 + b"\r\n{}\r\n0\r\n\r\n", b"0" * 3_000_000 + b"2\r\n{}\r\n0\r\n\r\n"):
                reader, writer = await asyncio.open_connection("127.0.0.1", source.port)
                writer.write(chunked + framing)
                try:
                    await asyncio.wait_for(reader.read(), 5)  # closed (reset while sending, or after the 413)
                except ConnectionResetError:
                    pass
                writer.close()
            # an ordinary chunked request is read as before (no runtime here: it waits, then 503)
            closing = HEAD + b"Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
            answer = await asyncio.wait_for(_exchange(source.port, closing + b"2\r\n{}\r\n0\r\n\r\n"), 5)
            return _server(source).oversized, int(answer.split(b" ")[1])
    assert run(scenario) == (2, 503)
