"""Waiting in a test for something a background task does, with a bound generous enough for a loaded machine."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def until(check: Callable[[], object], timeout: float = 60) -> None:
    """Poll `check` every 20 ms until it is true; fail after `timeout` seconds (a loaded machine may stall the
    test's process for seconds, so the bound is wide; the test's speed comes from the polling)."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout, "timed out"
        await asyncio.sleep(0.02)
