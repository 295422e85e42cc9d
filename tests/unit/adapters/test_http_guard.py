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


def test_one_connection_over_the_limit_is_answered_503_and_closed() -> None:
    async def scenario() -> tuple[bytes, bytes]:
        async with create_source(_config(maxconnections=2, headertimeout=0.3)) as source:
            held = [await asyncio.open_connection("127.0.0.1", source.port) for _ in range(2)]
            over = await asyncio.wait_for(_exchange(source.port, HEAD), 5)
            for _, writer in held:
                writer.close()
            for _ in range(100):  # the closed ones free their places
                if source._runner is not None and source._runner.server.open_connections == 0:  # type: ignore
                    break
                await asyncio.sleep(0.01)
            again = await asyncio.wait_for(_exchange(source.port, HEAD), 5)  # cut at the head timeout, not 503
            return over, again
    over, again = run(scenario)
    assert over.startswith(b"HTTP/1.1 503"), over
    assert again == b"", again
