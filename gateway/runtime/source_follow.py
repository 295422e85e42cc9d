"""Following registry sources (gateway.yaml `sources:`) while a command runs: `xgate run` and `xgate proxy` alike.

Each source is polled on its own interval, off the event loop (a poll is a blocking HTTP request); a changed
source reloads as a file change does. A failed poll keeps that source's last good copy in force and counts as a
failed reload; its reason is logged once, not once a poll, so a source down for an hour is not 3,600 lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from gateway.loader.fetch import RemoteFetcher
from gateway.loader.sources import Outcome, Poll, RegistrySource, RegistrySources

log = logging.getLogger("xgate.reload")


async def follow_sources(sources: RegistrySources, fetcher: Callable[[], RemoteFetcher | None],
                         stop: asyncio.Event, reload: Callable[[str], Awaitable[Any]],
                         failed: Callable[[], None]) -> None:
    """Poll each source when due until `stop`. `fetcher` gives the fetcher of the settings in force (a reload
    may change them), `reload(reason)` applies a change, `failed()` counts a poll that failed."""
    with contextlib.suppress(asyncio.CancelledError):
        while not stop.is_set():
            due = sources.due(time.monotonic())
            polls = await asyncio.gather(*(_poll(sources, source, fetcher(), failed) for source in due))
            changed = [p.source.url for p in polls if p.outcome is Outcome.CHANGED]
            if changed:
                await reload(f"source changed: {', '.join(changed)}")
            upcoming = sources.next_due()
            wait = 1.0 if upcoming is None else min(max(upcoming - time.monotonic(), 0.05), 1.0)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), wait)


async def _poll(sources: RegistrySources, source: RegistrySource, fetcher: RemoteFetcher | None,
                failed: Callable[[], None]) -> Poll:
    before = sources.state(source).error
    poll = await asyncio.to_thread(sources.poll, source, fetcher)
    if poll.outcome is Outcome.FAILED:
        failed()
        if poll.detail != before:
            log.warning("source %s: %s; its last good copy stays in force", source.request_url, poll.detail)
    elif before is not None:
        log.info("source %s: answering again (%s)", source.request_url, poll.outcome.value)
    return poll
