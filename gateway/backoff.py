"""How long to wait before trying again: exponential delays with jitter, one copy for every retry in xgate
(a route's delivery and reconnects, the engine restarting a route, the Kafka and NATS adapters).

The n-th delay is drawn from [d/2, d] with d = initial · 2ⁿ, capped at `ceiling`: half of it fixed, so that
retries never come back at once, half random, so that many clients that failed together spread out.
"""

from __future__ import annotations

import random
from collections.abc import Iterator


def delay_at(attempt: int, initial: float, ceiling: float) -> float:
    """The jittered delay before try number `attempt` + 1 (0: the first retry)."""
    delay = min(ceiling, initial * 2 ** min(attempt, 62))
    return random.uniform(delay / 2, delay)


def delays(initial: float, ceiling: float) -> Iterator[float]:
    """The delays of one streak of failures, forever; start a new iterator after a success."""
    attempt = 0
    while True:
        yield delay_at(attempt, initial, ceiling)
        attempt += 1
