"""Waiting on whichever of two events is set first (the change-event sender and the config watch)."""

from __future__ import annotations

import asyncio


async def either(first: asyncio.Event, second: asyncio.Event) -> None:
    """Return once `first` or `second` is set; the other wait is cancelled."""
    waiters = [asyncio.ensure_future(first.wait()), asyncio.ensure_future(second.wait())]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
