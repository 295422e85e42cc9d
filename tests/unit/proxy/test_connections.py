"""A client connection's life in the proxy, against a stand-in upstream on 127.0.0.1 that answers requests
late (a unit test of the proxy's connection handling; the real brokers are in tests/integration/test_proxy*.py):
answers go back in request order, and a client that leaves with requests still at the broker does not keep
the proxy's upstream connection for the idle timeout."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable
from typing import TypeVar

from gateway.ports import ephemeral_port
from gateway.proxy.server import Judging, Proxy
from gateway.sections.proxy import ProxySettings

T = TypeVar("T")
HEARTBEAT = 12  # an API the proxy passes as bytes, request and response


def _request(correlation_id: int) -> bytes:
    body = struct.pack(">hhih", HEARTBEAT, 0, correlation_id, 1) + b"c" + b"group-and-member"
    return struct.pack(">i", len(body)) + body


class SlowUpstream:
    """Answers every request `delay` seconds after the one before; notes when the proxy closes on it."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.closed = asyncio.Event()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
                await asyncio.sleep(self.delay)
                answer = frame[4:8] + b"\x00\x00"  # its correlation id and error code 0
                writer.write(struct.pack(">i", len(answer)) + answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            self.closed.set()
        finally:
            writer.close()


async def _proxied(delay: float, scenario: Callable[[int, SlowUpstream], Awaitable[T]]) -> T:
    upstream = SlowUpstream(delay)
    server = await asyncio.start_server(upstream.serve, "127.0.0.1", 0)
    upstream_port = server.sockets[0].getsockname()[1]
    listen = ephemeral_port()
    proxy = Proxy(ProxySettings(upstream=(("127.0.0.1", upstream_port),), listen_host="127.0.0.1",
                                listen_port=listen, advertised_host="127.0.0.1"), Judging(None, {}))
    await proxy.start()
    try:
        return await scenario(listen, upstream)
    finally:
        await proxy.close(drain=1.0)
        server.close()


def test_answers_come_back_in_the_order_of_their_requests() -> None:
    async def scenario(port: int, upstream: SlowUpstream) -> list[int]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"".join(_request(n) for n in (5, 6, 7, 8)))
        seen = []
        for _ in range(4):
            size = struct.unpack(">i", await reader.readexactly(4))[0]
            seen.append(struct.unpack(">i", (await reader.readexactly(size))[:4])[0])
        writer.close()
        return seen

    assert asyncio.run(_proxied(0.01, scenario)) == [5, 6, 7, 8]


def test_a_client_gone_with_requests_at_the_broker_releases_the_upstream_connection() -> None:
    async def scenario(port: int, upstream: SlowUpstream) -> bool:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"".join(_request(n) for n in range(1, 7)))
        await writer.drain()
        await asyncio.sleep(0.05)  # the requests reach the broker
        writer.transport.abort()  # gone at once: the proxy's writes of the answers fail
        try:
            await asyncio.wait_for(upstream.closed.wait(), 5.0)  # not the 600 s idle timeout
        except TimeoutError:
            return False
        return True

    assert asyncio.run(_proxied(0.1, scenario)) is True
