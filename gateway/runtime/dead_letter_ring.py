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


class DeadLetters:
    def __init__(self, per_route: int, max_bytes: int) -> None:
        self.per_route, self.max_bytes = per_route, max_bytes
        self._routes: dict[str, collections.deque[DeadLetter]] = {}
        self._bytes = 0
        self._numbers = itertools.count(1)
        self.kept_total = 0  # every message ever kept, for the page's "N since start"

    def add(self, route: str, envelope: Envelope, verdict: Verdict) -> None:
        kept = self._routes.get(route)
        if kept is None:
            kept = self._routes[route] = collections.deque()
        letter = DeadLetter(next(self._numbers), route, time.time(), envelope, verdict,
                            len(envelope.body) + OVERHEAD_BYTES)
        kept.append(letter)
        self._bytes += letter.size
        self.kept_total += 1
        if len(kept) > self.per_route:
            self._bytes -= kept.popleft().size
        while self._bytes > self.max_bytes:
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        oldest = min((kept for kept in self._routes.values() if kept), key=lambda kept: kept[0].number)
        self._bytes -= oldest.popleft().size

    def latest(self, route: str | None = None) -> list[DeadLetter]:
        """Newest first: one route's, or every route's."""
        chosen = [self._routes.get(route, collections.deque())] if route is not None else self._routes.values()
        return sorted((letter for kept in chosen for letter in kept), key=lambda letter: -letter.number)

    def find(self, number: int) -> DeadLetter | None:
        for kept in self._routes.values():
            for letter in kept:
                if letter.number == number:
                    return letter
        return None

    @property
    def bytes(self) -> int:
        return self._bytes
