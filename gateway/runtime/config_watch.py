"""Watch a config directory and reload once it has been quiet: the watch of `xgate run` and `xgate proxy`.

Quiet means no relevant change for `debounce` seconds (gateway.yaml `runtime.reload_debounce`): every change
starts the wait again, so a document copied in several writes is read once it is whole. watchfiles' own
`debounce` is only the longest it groups changes; it yields after 50 ms without one, which applied a YAML
document written in three chunks 200 ms apart half-written (issue 35, item 5).

The watch survives whatever the folder holds. A reload that raises counts as a failed one and is logged; a
watch that ends on an error is started again (after 1 s, doubling to 30 s), and meanwhile `on_state(False)`
lets /readyz and `xgate_config_watch_up` say so. SIGHUP reloads either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from gateway.loader.discover import is_document
from gateway.runtime.waiting import either
from gateway.settings import SETTINGS_FILES

log = logging.getLogger("xgate.reload")

# the link a Kubernetes ConfigMap (or Secret) volume swaps to a new hidden version directory in one rename:
# that swap is the moment every document in the volume changes, and the files written into the new
# directory before it may never be seen by the watch
ATOMIC_SWAP_LINK = "..data"
RESTART_FIRST, RESTART_MAX = 1.0, 30.0  # seconds before a failed watch is started again


def relevant(_change: Any, path: str) -> bool:
    """Documents, gateway.yaml and the swap link: logs or editor swap files in the folder do not reload."""
    candidate = Path(path)
    return is_document(candidate) or candidate.name in SETTINGS_FILES or candidate.name == ATOMIC_SWAP_LINK


async def watch_quietly(directory: Path, debounce: float, stop: asyncio.Event,
                        reload: Callable[[], Awaitable[Any]], on_state: Callable[[bool], None],
                        on_failed_reload: Callable[[], None], also: tuple[Path, ...] = ()) -> None:
    """Call `reload` after each quiet spell that follows a change, until `stop`. `also`: folders outside
    `directory` whose changes reload too (a shadow candidate named in gateway.yaml), watched where they exist."""
    changed = asyncio.Event()
    watcher = asyncio.create_task(_watch(directory, stop, changed, on_state, also), name="config-watch")
    try:
        while await _first_change(changed, stop):
            while True:  # quiet for `debounce` seconds: a change in between starts the wait again
                changed.clear()
                try:
                    await asyncio.wait_for(changed.wait(), debounce)
                except TimeoutError:
                    break
            if stop.is_set():
                return
            try:
                await reload()
            except Exception:  # a reload that raised changed nothing: the rules in force stay
                on_failed_reload()
                log.exception("reload after a change in %s failed; the rules in force stay", directory)
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


async def _first_change(changed: asyncio.Event, stop: asyncio.Event) -> bool:
    """Wait for a change (True) or for `stop` (False)."""
    await either(changed, stop)
    return not stop.is_set()


async def _watch(directory: Path, stop: asyncio.Event, changed: asyncio.Event,
                 on_state: Callable[[bool], None], also: tuple[Path, ...] = ()) -> None:
    """Set `changed` on every relevant change; a watch that fails is started again, with backoff."""
    from watchfiles import awatch

    delay = RESTART_FIRST
    while not stop.is_set():
        on_state(True)
        try:
            folders = [directory, *(folder for folder in also if folder.is_dir())]
            async for _ in awatch(*folders, stop_event=stop, recursive=True, watch_filter=relevant):
                changed.set()
                delay = RESTART_FIRST
            return  # stopped
        except Exception as exc:
            on_state(False)
            log.error("the watch of %s failed (%s); started again in %.0f s, SIGHUP reloads meanwhile",
                      directory, exc, delay)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), delay)
        delay = min(delay * 2, RESTART_MAX)
