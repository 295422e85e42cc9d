"""A byte relay: bench/proxy.py's baseline for what one more asyncio process on the path costs by itself.

    python -m bench.relay LISTEN_PORT TARGET_HOST:TARGET_PORT

Every connection to LISTEN_PORT gets one to the target, and bytes are copied both ways as they come: no
frame is read, nothing is judged or rewritten. It keeps a client only because the broker advertises the
relay's port for the listener it relays to (bench/proxy.py starts the broker that way).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys


async def _copy(source: asyncio.StreamReader, target: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while chunk := await source.read(65536):
            target.write(chunk)
            await target.drain()
    target.close()


async def main(port: int, host: str, target_port: int) -> None:
    async def relay(client: asyncio.StreamReader, to_client: asyncio.StreamWriter) -> None:
        try:
            upstream, to_upstream = await asyncio.open_connection(host, target_port)
        except OSError:
            to_client.close()
            return
        await asyncio.gather(_copy(client, to_upstream), _copy(upstream, to_client))

    server = await asyncio.start_server(relay, "127.0.0.1", port, reuse_address=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    target_host, _, target = sys.argv[2].rpartition(":")
    asyncio.run(main(int(sys.argv[1]), target_host, int(target)))
