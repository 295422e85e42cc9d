"""The latest nonconformant and unmatched messages of each route, kept in memory for the console (gateway/console).

Bounded twice: `per_route` messages per route and `max_bytes` in all (payload plus a fixed overhead a
message), the oldest going first. Keeping one is an append of references the route already holds (the
Envelope and its Verdict, nothing copied or rendered): the console renders a message only when someone looks
at it. Only nonconformant and unmatched messages reach here (whatever their route does with them: dead-letter,
forward, drop), so conformant traffic pays nothing; at high rates a full ring takes a batch a tenth of a
second (KEEP_INTERVAL).
"""

from __future__ import annotations

import collections
import itertools
import time
from dataclasses import dataclass

from gateway.envelope import Envelope
from gateway.verdict import Verdict

OVERHEAD_BYTES = 512  # the Envelope, its headers and the verdict beyond the payload, roughly
# a full ring takes a route's next batch only this long after the last one: at full rate the console shows the
# latest batch of every tenth of a second rather than every message, and the messages it holds live long
# enough to be promoted to the collector's older generations ten times a second per route, not thousands
KEEP_INTERVAL = 0.1


@dataclass(frozen=True, slots=True)
class DeadLetter:
    number: int       # increasing over the process's life: the console's link to one message
    route: str        # the source endpoint of the route that judged it
    received: float   # wall-clock time it was judged
    envelope: Envelope
    verdict: Verdict
    size: int


# what a deque holds: (number, route, received, envelope, verdict, size); a DeadLetter is made when read
_Kept = tuple[int, str, float, Envelope, Verdict, int]


class DeadLetters:
    def __init__(self, per_route: int, max_bytes: int, interval: float = KEEP_INTERVAL) -> None:
        self.per_route, self.max_bytes, self.interval = per_route, max_bytes, interval
        self._routes: dict[str, collections.deque[_Kept]] = {}
        self._bytes = 0
        self._numbers = itertools.count(1)
        self._kept_at: dict[str, float] = {}  # by route: when a batch was last kept
        self.kept_total = 0  # every message handed over, kept or not, for the page's "N since start"

    def add(self, route: str, envelope: Envelope, verdict: Verdict) -> None:
        self.add_many(route, [(envelope, verdict)])

    def room(self, route: str) -> int:
        """How many of a batch's last messages `add_many` would keep now: `per_route`, or none while the route's
        ring is full and took a batch less than `interval` ago (a caller that makes its Envelopes on demand, the
        record lane, makes no more than that)."""
        kept = self._routes.get(route)
        if kept is not None and len(kept) >= self.per_route and \
                time.time() - self._kept_at.get(route, 0.0) < self.interval:
            return 0
        return self.per_route

    def add_many(self, route: str, items: list[tuple[Envelope, Verdict]], count: int | None = None) -> None:
        """A batch's nonconformant and unmatched messages (on the hot path, once per batch): a tuple each, at
        most `per_route` of them, and not again for `interval` seconds once the route's ring is full. `count`:
        how many messages the batch had, where `items` holds only its last ones (`room`)."""
        self.kept_total += len(items) if count is None else count
        kept = self._routes.get(route)
        if kept is None:
            kept = self._routes[route] = collections.deque()
        now = time.time()
        if not items or len(kept) >= self.per_route and now - self._kept_at.get(route, 0.0) < self.interval:
            return
        self._kept_at[route] = now
        numbers, limit = self._numbers, self.per_route
        added = 0
        for envelope, verdict in items[-limit:]:
            size = len(envelope.body) + OVERHEAD_BYTES
            kept.append((next(numbers), route, now, envelope, verdict, size))
            added += size
            if len(kept) > limit:
                added -= kept.popleft()[5]
        self._bytes += added
        while self._bytes > self.max_bytes:
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        oldest = min((kept for kept in self._routes.values() if kept), key=lambda kept: kept[0][0])
        self._bytes -= oldest.popleft()[5]

    def latest(self, route: str | None = None) -> list[DeadLetter]:
        """Newest first: one route's, or every route's."""
        chosen = [self._routes.get(route, collections.deque())] if route is not None else self._routes.values()
        return sorted((DeadLetter(*item) for kept in chosen for item in kept), key=lambda letter: -letter.number)

    def find(self, number: int) -> DeadLetter | None:
        for kept in self._routes.values():
            for item in kept:
                if item[0] == number:
                    return DeadLetter(*item)
        return None

    @property
    def bytes(self) -> int:
        return self._bytes
