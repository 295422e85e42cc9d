"""A TCP relay that holds every chunk for a while before passing it on: a real slow network path in front
of a real broker (not a stand-in for one). It runs its own event loop in a thread, so the test's loop and
the gateway are not slowed by it, only the bytes that cross it."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import Self

from tests.conftest import free_port


class SlowLink:
    """127.0.0.1:<port> -> target, each chunk delayed by `delay` seconds in each direction (order kept)."""

    def __init__(self, target_port: int, delay: float) -> None:
        self.target_port = target_port
        self.delay = delay
        self.port = free_port()
        self.chunks = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="slow-link", daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the slow link did not start listening")
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._relay, "127.0.0.1", self.port))
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            server.close()
            for task in asyncio.all_tasks(self._loop):
                task.cancel()
            self._loop.run_until_complete(asyncio.sleep(0))
            self._loop.close()

    async def _relay(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(self._pipe(client_reader, server_writer), self._pipe(server_reader, client_writer),
                             return_exceptions=True)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Read as fast as the sender writes; write each chunk `delay` after it was read."""
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, chunk = await queue.get()
                if not chunk:
                    break
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                writer.write(chunk)
                await writer.drain()
                self.chunks += 1

        delivering = asyncio.create_task(deliver())
        try:
            while chunk := await reader.read(65536):
                queue.put_nowait((time.monotonic() + self.delay, chunk))
            queue.put_nowait((0.0, b""))
            await delivering
        finally:
            delivering.cancel()
            with contextlib.suppress(Exception):
                writer.close()
