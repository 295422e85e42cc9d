"""FetchPacing: at high rates the broker holds each fetch until about `fetch_pacing_ms` of traffic has come.

With a fetch minimum of one byte, a consumer asks again as soon as it has taken the last answer, so at tens of
thousands of messages a second a route goes round (fetch, judge, produce, acknowledge) a couple of hundred
times a second, and each round has costs that do not shrink with its size: requests on both connections,
event-loop callbacks, a native call per batch. Measured at 36,500 msg/s (docs/performance.md, twenty-fourth
sitting): a fixed 400 KB minimum halved the rounds, took the gateway from 0.65 to 0.53 of a core and its p99
from above a raw pass-through's to below it. A fixed minimum would hold every fetch up to `fetch_max_wait_ms`
at low rates, so here the minimum follows the rate the source reads at: that rate times the pacing window,
per broker the source fetches from, and the configured minimum whenever that comes to less than `_FLOOR`
(at low rates a round costs nothing worth saving, and the first record of a quiet stream should not wait).
While paced, the broker's wait is bounded by a few windows, so a stream that stops short waits at most that
long before the minimum follows it down.

aiokafka reads its fetcher's `_fetch_min_bytes` and `_fetch_max_wait_ms` afresh for every fetch request it
builds; `attach` finds them there and leaves pacing off (with a log line) where a release lacks them.
"""

from __future__ import annotations

import logging
import time
from typing import Any

log = logging.getLogger("xgate.kafka")

# how often the rate is measured again; a stopped stream is noticed within this (plus one held fetch)
_UPDATE_SECONDS = 0.1
# weight of the newest measurement in the smoothed rate
_SMOOTHING = 0.5
# below this minimum pacing is off: rounds are cheap at such rates, and waiting for a few KB would only add latency
_FLOOR = 64 * 1024
# while paced, the broker holds a fetch at most this many windows (never above the configured wait)
_WAIT_WINDOWS = 3
# the minimum never asks for more than this share of what one fetch may bring back
_CEILING_SHARE = 0.5


class FetchPacing:
    """Follows the bytes a consumer hands out and sets its fetch minimum to the pacing window's worth."""

    __slots__ = ("_bytes", "_configured_min", "_configured_wait", "_consumer", "_fetcher", "_partition_bytes",
                 "_since", "_window", "paced_min", "rate")

    def __init__(self, consumer: Any, fetcher: Any, window_ms: int, partition_bytes: int) -> None:
        self._consumer, self._fetcher = consumer, fetcher
        self._window = window_ms / 1000
        self._partition_bytes = partition_bytes
        self._configured_min: int = fetcher._fetch_min_bytes
        self._configured_wait: int = fetcher._fetch_max_wait_ms
        self._since = time.monotonic()
        self._bytes = 0
        self.rate = 0.0  # bytes a second, smoothed
        self.paced_min = 0  # the minimum pacing set, 0 while it is off

    @classmethod
    def attach(cls, consumer: Any, window_ms: int, partition_bytes: int) -> FetchPacing | None:
        """Pacing for a started consumer, or None: pacing off (`window_ms` 0) or aiokafka not as expected."""
        if window_ms <= 0:
            return None
        fetcher = getattr(consumer, "_fetcher", None)
        if not all(isinstance(getattr(fetcher, name, None), int) for name in ("_fetch_min_bytes", "_fetch_max_wait_ms")):
            log.info("Kafka fetch pacing off: this aiokafka's fetcher has no fetch minimum to set")
            return None
        return cls(consumer, fetcher, window_ms, partition_bytes)

    def fetched(self, nbytes: int) -> None:
        """A poll handed out `nbytes` (0 when it came back empty); the minimum is set again every so often."""
        self._bytes += nbytes
        now = time.monotonic()
        elapsed = now - self._since
        if elapsed < _UPDATE_SECONDS:
            return
        measured = self._bytes / elapsed
        self.rate += _SMOOTHING * (measured - self.rate)
        self._since, self._bytes = now, 0
        self._set(self._minimum())

    def _minimum(self) -> int:
        """The window's worth of bytes per broker, within the ceiling; 0 when pacing should be off."""
        assigned = self._consumer.assignment()
        if not assigned:
            return 0
        per_node = _partitions_per_node(self._consumer, assigned)
        wanted = int(self.rate * self._window / max(len(per_node), 1))
        if wanted < _FLOOR:
            return 0
        ceiling = int(_CEILING_SHARE * self._partition_bytes * max(per_node.values()))
        return max(min(wanted, ceiling), self._configured_min) if ceiling >= _FLOOR else 0

    def _set(self, minimum: int) -> None:
        fetcher = self._fetcher
        if minimum:
            fetcher._fetch_min_bytes = minimum
            fetcher._fetch_max_wait_ms = min(self._configured_wait, round(_WAIT_WINDOWS * self._window * 1000))
        else:
            fetcher._fetch_min_bytes, fetcher._fetch_max_wait_ms = self._configured_min, self._configured_wait
        self.paced_min = minimum


def _partitions_per_node(consumer: Any, assigned: Any) -> dict[Any, int]:
    """How many of the assigned partitions each broker leads (a fetch goes to each leader on its own)."""
    cluster = getattr(getattr(consumer, "_client", None), "cluster", None)
    per_node: dict[Any, int] = {}
    for tp in assigned:
        node = cluster.leader_for_partition(tp) if cluster is not None else None
        per_node[node] = per_node.get(node, 0) + 1
    return per_node
