"""Rates by verdict over the last minutes, from the gateway's own counters (runtime/stats.py): no Prometheus.

A sample of every route's verdict counters every `interval` seconds (a dict copy per route: microseconds,
off the hot path), `keep` samples back. A rate is the difference of two samples over their time apart.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import time
from collections import Counter

from gateway.runtime.stats import GatewayStats

INTERVAL = 5.0
KEEP = 120  # ten minutes at INTERVAL
KINDS = ("conformant", "nonconformant", "unmatched")


class RateHistory:
    def __init__(self, stats: GatewayStats, interval: float = INTERVAL, keep: int = KEEP) -> None:
        self.stats, self.interval = stats, interval
        self._samples: collections.deque[tuple[float, dict[str, Counter[str]]]] = collections.deque(maxlen=keep)

    def sample(self, now: float | None = None) -> None:
        self._samples.append((time.monotonic() if now is None else now,
                              {source: Counter(route.verdicts) for source, route in self.stats.routes.items()}))

    async def run(self) -> None:
        """Sample until cancelled."""
        while True:
            self.sample()
            await asyncio.sleep(self.interval)

    def rates(self, source: str, window: float = 60.0, now: float | None = None) -> dict[str, float]:
        """Messages a second by verdict over about the last `window` seconds, up to now's counters."""
        now = time.monotonic() if now is None else now
        current = Counter(self.stats.routes[source].verdicts) if source in self.stats.routes else Counter()
        past = [(at, counts) for at, counts in self._samples if now - at <= window + self.interval / 2]
        if not past:
            return dict.fromkeys(KINDS, 0.0)
        at, counts = past[0]
        elapsed = max(now - at, 1e-9)
        before = counts.get(source, Counter())
        return {kind: max(current[kind] - before[kind], 0) / elapsed for kind in KINDS}

    def series(self, source: str) -> list[dict[str, float]]:
        """Rates by verdict between each two samples kept, oldest first (the page's sparkline)."""
        out = []
        samples = list(self._samples)
        for (start, old), (end, new) in itertools.pairwise(samples):
            elapsed = max(end - start, 1e-9)
            a, b = old.get(source, Counter()), new.get(source, Counter())
            out.append({kind: max(b[kind] - a[kind], 0) / elapsed for kind in KINDS})
        return out
