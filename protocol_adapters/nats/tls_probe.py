"""Why a NATS server refused our TLS connection, asked once after a first connect failed.

Under TLS 1.3 a server that wants a client certificate finds it missing only after the client's handshake
is over: it sends an alert and closes. nats-py writes CONNECT straight away, and when that write lands after
the close the server's host answers with a reset that discards the alert. The client then sees a reset
(retriable, "no servers available") where the server said "certificate required". Seen in 2 of 3 test
runs (tests/integration/test_tls.py). The probe repeats the handshake without writing anything after it and
reads: the alert arrives whole, and tls_refusal words it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from urllib.parse import urlsplit

from protocol_adapters.tls import tls_refusal

_INFO_LIMIT = 65536  # the server's plaintext INFO line comes first
_PLAIN_SCHEMES = ("nats", "tls")


async def refusal_reason(servers: tuple[str, ...], context: ssl.SSLContext, timeout: float) -> str | None:
    """The first server's TLS refusal of this context, or None when it gave none within `timeout`. `servers` as
    NatsOptions has them (a scheme each); a websocket server sends no INFO line first and is not asked."""
    for server in servers:
        address = urlsplit(server)
        if address.scheme not in _PLAIN_SCHEMES or address.hostname is None:
            continue
        try:
            async with asyncio.timeout(timeout):
                return await _probe(address.hostname, address.port or 4222, context)
        except (OSError, TimeoutError, ValueError):
            continue  # unreachable or silent: the caller's own error stands
    return None


async def _probe(host: str, port: int, context: ssl.SSLContext) -> str | None:
    reader, writer = await asyncio.open_connection(host, port, limit=_INFO_LIMIT)
    try:
        if not (await reader.readline()).startswith(b"INFO"):
            return None
        try:
            await writer.start_tls(context, server_hostname=host)
            await reader.read(1)  # the server waits for CONNECT, or refuses: its alert ends this read
        except ssl.SSLError as exc:
            return tls_refusal(exc)
        return None
    finally:
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.wait_closed()
