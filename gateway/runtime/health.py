"""Whether a route's destinations still take messages: a destination that fails every send for
`DESTINATION_GRACE` seconds is down (readiness false, `xgate_destination_up` 0, one warning), and up again
at its next confirmed send (one info line saying how long it was down).

The grace is timed from the first failure of a streak with `call_later`, not checked at the next failure:
with backoff the next failure can be 30 s away, and an operator must see a wedged destination within seconds.
A message the destination refused for itself (MessageRefused) says nothing about the destination.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

log = logging.getLogger("xgate.pipeline")
# failures without one success for this long make the destination down; a broker restart takes ~1 s here
DESTINATION_GRACE = 3.0


class DestinationHealth:
    def __init__(self, source: str, gauges: dict[str, Any], sink_up: Any, grace: float | None = None) -> None:
        self.source = source
        self.grace = DESTINATION_GRACE if grace is None else grace
        self._gauges = gauges  # destination id -> xgate_destination_up child
        self._sink_up = sink_up  # xgate_adapter_up{role="sink"}: 0 while any destination is down
        self._failing: dict[str, tuple[float, str]] = {}  # destination -> (monotonic start of streak, last error)
        self._down: set[str] = set()
        self._timers: dict[str, asyncio.TimerHandle] = {}
        for gauge in gauges.values():
            gauge.set(1)

    def healthy(self) -> bool:
        """No destination has been failing for longer than the grace (checked now, not at the next failure)."""
        now = time.monotonic()
        return not any(now - since >= self.grace for since, _ in self._failing.values())

    def down(self) -> dict[str, str]:
        """Destinations down now, with their last error."""
        return {destination: self._failing[destination][1] for destination in self._down}

    def failed(self, destination: str, error: BaseException) -> None:
        streak = self._failing.get(destination)
        self._failing[destination] = (streak[0] if streak else time.monotonic(), str(error))
        if streak is None:
            loop = asyncio.get_running_loop()
            self._timers[destination] = loop.call_later(self.grace, self._check, destination)

    def succeeded(self, destination: str) -> None:
        streak = self._failing.pop(destination, None)
        if streak is None:
            return
        timer = self._timers.pop(destination, None)
        if timer is not None:
            timer.cancel()
        if destination in self._down:
            self._down.discard(destination)
            log.info("route %s: destination %s delivers again after %.1f s down", self.source, destination,
                     time.monotonic() - streak[0])
            self._set_gauges()

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    def _check(self, destination: str) -> None:
        self._timers.pop(destination, None)
        streak = self._failing.get(destination)
        if streak is None or destination in self._down:
            return
        self._down.add(destination)
        log.warning("route %s: destination %s down: every send failed for %.1f s (last: %s); messages stay at "
                    "the source and are retried", self.source, destination, time.monotonic() - streak[0], streak[1])
        self._set_gauges()

    def _set_gauges(self) -> None:
        for destination, gauge in self._gauges.items():
            gauge.set(0 if destination in self._down else 1)
        self._sink_up.set(0 if self._down else 1)
