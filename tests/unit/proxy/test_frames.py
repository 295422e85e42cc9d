"""Frames cut from a stream's chunks: whole, in order, however the bytes arrive; bad sizes, cut and stalled
frames named; a closed stream between frames is the end, and Quiet finds a connection idle only while it waits
for a frame's start."""

from __future__ import annotations

import asyncio
import random
import struct

import pytest

from gateway.proxy.frames import FrameError, Frames, Quiet


def _framed(*bodies: bytes) -> bytes:
    return b"".join(struct.pack(">i", len(body)) + body for body in bodies)


async def _read_all(frames: Frames) -> list[bytes]:
    found = []
    while (frame := await frames.next(1 << 20, 5.0)) is not None:
        found.append(frame)
    return found


def test_frames_arriving_in_pieces_of_any_size_come_out_whole_and_in_order() -> None:
    rng = random.Random(3)
    bodies = [bytes(rng.randrange(256) for _ in range(rng.choice((1, 3, 4, 5, 700, 70_000)))) for _ in range(40)]
    data = _framed(*bodies)

    async def run() -> list[bytes]:
        stream = asyncio.StreamReader()
        reading = asyncio.create_task(_read_all(Frames(stream)))
        at = 0
        while at < len(data):  # cuts inside sizes, inside bodies, and several frames at once
            step = rng.choice((1, 2, 5, 4096, 100_000))
            stream.feed_data(data[at:at + step])
            at += step
            await asyncio.sleep(0)
        stream.feed_eof()
        return await reading

    assert asyncio.run(run()) == bodies


@pytest.mark.parametrize("size", [0, -1, 4097])
def test_a_size_outside_the_limit_is_refused_before_its_body_is_read(size: int) -> None:
    async def run() -> None:
        stream = asyncio.StreamReader()
        stream.feed_data(struct.pack(">i", size))
        await Frames(stream).next(4096, 5.0)

    with pytest.raises(FrameError, match=f"a frame of {size} bytes \\(at most 4096\\)"):
        asyncio.run(run())


def test_a_stream_that_ends_inside_a_frame_names_the_frame() -> None:
    async def run() -> None:
        stream = asyncio.StreamReader()
        stream.feed_data(_framed(b"whole") + struct.pack(">i", 10) + b"cut")
        stream.feed_eof()
        frames = Frames(stream)
        assert await frames.next(4096, 5.0) == b"whole"
        await frames.next(4096, 5.0)

    with pytest.raises(FrameError, match="the connection ended inside a frame of 10 bytes"):
        asyncio.run(run())


def test_a_frame_that_stalls_is_refused_after_its_time() -> None:
    async def stalled() -> None:
        stream = asyncio.StreamReader()
        stream.feed_data(struct.pack(">i", 10) + b"abc")
        await Frames(stream).next(4096, 0.05)

    with pytest.raises(FrameError, match="a frame of 10 bytes not complete after 0.05 s"):
        asyncio.run(stalled())


def test_without_limits_a_broker_frame_of_any_size_reads_and_an_empty_stream_ends() -> None:
    async def run() -> tuple[bytes | None, bytes | None]:
        stream = asyncio.StreamReader()
        stream.feed_data(_framed(b"r" * 300_000))
        stream.feed_eof()
        frames = Frames(stream)
        return await frames.next(), await frames.next()

    assert asyncio.run(run()) == (b"r" * 300_000, None)


def test_quiet_resolves_for_a_reader_waiting_with_nothing_coming_and_not_while_frames_keep_coming() -> None:
    async def run() -> tuple[bool, bool]:
        stream = asyncio.StreamReader()
        frames = Frames(stream)
        reading = asyncio.create_task(_read_all(frames))
        quiet = Quiet(frames, 0.05)
        for _ in range(8):  # a frame every 30 ms for 240 ms: never a whole quiet period
            stream.feed_data(_framed(b"tick"))
            await asyncio.sleep(0.03)
        busy = quiet.future.done()
        await asyncio.wait_for(quiet.future, 1.0)  # then nothing: idle after 50-100 ms
        quiet.stop()
        reading.cancel()
        return busy, quiet.future.done()

    assert asyncio.run(run()) == (False, True)


def test_quiet_leaves_a_reader_held_mid_frame_or_not_reading_alone() -> None:
    async def run() -> bool:
        stream = asyncio.StreamReader()
        frames = Frames(stream)
        stream.feed_data(struct.pack(">i", 10) + b"abc")  # a begun frame, governed by its own time
        mid_frame = asyncio.create_task(frames.next(4096, 5.0))
        idle_reader = Frames(asyncio.StreamReader())  # never asked for a frame: its requests held back
        watches = [Quiet(frames, 0.02), Quiet(idle_reader, 0.02)]
        await asyncio.sleep(0.15)
        found = any(watch.future.done() for watch in watches)
        for watch in watches:
            watch.stop()
        mid_frame.cancel()
        return found

    assert asyncio.run(run()) is False
