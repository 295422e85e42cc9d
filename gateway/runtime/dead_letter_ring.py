"""The latest nonconformant and unmatched messages of each route, kept in memory for the console (gateway/console).

Bounded twice: `per_route` messages per route and `max_bytes` in all (payload plus a fixed overhead a
message), the oldest going first. Keeping one is an append of references the route already holds (the
Envelope and its Verdict, nothing copied or rendered): the console renders a message only when someone looks
at it. Only nonconformant and unmatched messages reach here (whatever their route does with them: dead-letter,
forward, drop), so conformant traffic pays nothing.
"""

from __future__ import annotations

import collections
import itertools
import time
from dataclasses import dataclass

from gateway.envelope import Envelope
from gateway.verdict import Verdict

OVERHEAD_BYTES = 512  # the Envelope, its headers and the verdict beyond the payload, roughly


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
    def __init__(self, per_route: int, max_bytes: int) -> None:
        self.per_route, self.max_bytes = per_route, max_bytes
        self._routes: dict[str, collections.deque[_Kept]] = {}
        self._bytes = 0
        self._numbers = itertools.count(1)
        self.kept_total = 0  # every message ever kept, for the page's "N since start"

    def add(self, route: str, envelope: Envelope, verdict: Verdict) -> None:
        """On the hot path for every nonconformant or unmatched message: a tuple appended, nothing more."""
        kept = self._routes.get(route)
        if kept is None:
            kept = self._routes[route] = collections.deque()
        size = len(envelope.body) + OVERHEAD_BYTES
        kept.append((next(self._numbers), route, time.time(), envelope, verdict, size))
        self._bytes += size
        self.kept_total += 1
        if len(kept) > self.per_route:
            self._bytes -= kept.popleft()[5]
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
