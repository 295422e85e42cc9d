"""Whether the upstream cluster answers: an ApiVersions round trip to a bootstrap server every few seconds.

An open port is not an answer: the broker must read the request and reply without an error. `/readyz` is
down, and `xgate_adapter_up{role="proxy"}` 0, while no bootstrap server does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import Callable

from gateway.proxy.schemas import API_VERSIONS

log = logging.getLogger("xgate.proxy")
INTERVAL = 5.0
TIMEOUT = 3.0
_CLIENT_ID = b"xgate-proxy-probe"
# ApiVersions v0: size, header v1 (api key, version, correlation id, client id), an empty body
_REQUEST = struct.pack(">ihhih", 10 + len(_CLIENT_ID), API_VERSIONS, 0, 1, len(_CLIENT_ID)) + _CLIENT_ID


async def answers(host: str, port: int, timeout: float = TIMEOUT) -> bool:
    """One ApiVersions round trip to a broker: True when it answered without an error."""
    async def ask() -> bool:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            writer.write(_REQUEST)
            await writer.drain()
            size = struct.unpack(">i", await reader.readexactly(4))[0]
            frame = await reader.readexactly(size)
            correlation_id, error_code = struct.unpack_from(">ih", frame)
            return bool(correlation_id == 1 and error_code == 0)
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
    try:
        return await asyncio.wait_for(ask(), timeout)
    except (OSError, TimeoutError, asyncio.IncompleteReadError, struct.error):
        return False


class UpstreamWatch:
    def __init__(self, servers: tuple[tuple[str, int], ...], changed: Callable[[bool], None]) -> None:
        self.servers = servers
        self.changed = changed
        self.up = False

    async def check(self) -> bool:
        for host, port in self.servers:
            if await answers(host, port):
                return True
        return False

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            up = await self.check()
            if up != self.up:
                (log.info if up else log.warning)("proxy: the upstream cluster %s", "answers" if up else
                                                  "does not answer (readyz down)")
            self.up = up
            self.changed(up)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), INTERVAL)
