"""Kafka frames (a 4-byte size, then that many bytes) read off a stream in chunks.

A connection's requests and responses arrive back to back: a producer with several requests in flight sends
them in one burst, and a 16 KB produce request comes in one read. Reading each frame as a size and a body
(`readexactly` twice, each under a timeout of its own) cost the proxy two timer handles and two waits a
request, about a tenth of its CPU at half load. Here a chunk is read once into a buffer and every frame it
holds is cut from it; a timeout is set only while the reader waits for the rest of a begun frame, and an idle
connection (no frame begun) is found by `Quiet`'s one timer.
"""

from __future__ import annotations

import asyncio
import struct

from gateway.errors import GatewayError

_SIZE = struct.Struct(">i")
CHUNK = 1 << 16


class FrameError(GatewayError):
    """A frame that cannot be read whole: why, for the one log line that closes its connection."""


class Frames:
    __slots__ = ("buffer", "chunks", "stream", "waiting", "waits")

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self.stream = stream
        self.buffer = bytearray()
        self.chunks = 0  # chunks read so far
        self.waits = 0  # waits begun for the start of a frame
        self.waiting = False  # in such a wait now (Quiet watches these)

    async def next(self, max_bytes: int | None = None, complete_within: float | None = None) -> bytes | None:
        """The next frame; None when the stream ends between frames (an idle one is `Quiet`'s to find).
        FrameError for a size outside 1..`max_bytes`, or a frame cut short or not whole within
        `complete_within` seconds of its size arriving. The frame keeps its bytes but not its size."""
        buffer = self.buffer
        if len(buffer) < 4:
            self.waits += 1
            self.waiting = True
            try:
                await self._fill(4, None)
            except (asyncio.IncompleteReadError, ConnectionError):
                return None
            finally:
                self.waiting = False
        size = _SIZE.unpack_from(buffer)[0]
        if size <= 0 or max_bytes is not None and size > max_bytes:
            raise FrameError(f"a frame of {size} bytes (at most {max_bytes})")
        end = 4 + size
        if len(buffer) < end:
            try:
                await self._fill(end, complete_within)
            except (asyncio.IncompleteReadError, ConnectionError) as exc:
                raise FrameError(f"the connection ended inside a frame of {size} bytes") from exc
            except TimeoutError as exc:
                raise FrameError(f"a frame of {size} bytes not complete after {complete_within:g} s") from exc
        with memoryview(buffer) as view:
            frame = bytes(view[4:end])
        del buffer[:end]  # a bytearray drops its front without moving the rest
        return frame

    async def _fill(self, size: int, within: float | None) -> None:
        """Read until the buffer holds `size` bytes (IncompleteReadError at the stream's end)."""
        if within is None:
            await self._read_until(size)
            return
        async with asyncio.timeout(within):
            await self._read_until(size)

    async def _read_until(self, size: int) -> None:
        buffer, read = self.buffer, self.stream.read
        while len(buffer) < size:
            chunk = await read(max(CHUNK, size - len(buffer)))
            if not chunk:
                raise asyncio.IncompleteReadError(bytes(buffer), size)
            buffer += chunk
            self.chunks += 1


class Quiet:
    """`future` resolves once `frames` has waited for the start of a frame, with no byte coming, through a whole
    `seconds`: an idle connection, found by one timer a connection that re-arms itself (so after `seconds` to
    twice that), not by a timeout set around every wait. A reader held mid-frame or not reading (its requests
    held back) is not idle."""

    def __init__(self, frames: Frames, seconds: float) -> None:
        loop = asyncio.get_running_loop()
        self.future: asyncio.Future[None] = loop.create_future()
        self._frames, self._seconds = frames, seconds
        self._seen = (-1, -1)
        self._timer = loop.call_later(seconds, self._check)

    def _check(self) -> None:
        frames = self._frames
        now = (frames.waits, frames.chunks)
        if frames.waiting and now == self._seen:  # the same wait, and nothing read, since the last check
            if not self.future.done():
                self.future.set_result(None)
            return
        self._seen = now
        self._timer = asyncio.get_running_loop().call_later(self._seconds, self._check)

    def stop(self) -> None:
        self._timer.cancel()
