"""Retry delays (gateway/backoff.py): doubling, jittered within [d/2, d], capped, and never overflowing."""

from __future__ import annotations

import itertools

from gateway import backoff


def test_each_delay_lies_in_the_upper_half_of_its_doubling_step() -> None:
    for attempt, delay in enumerate(itertools.islice(backoff.delays(0.1, 30.0), 12)):
        step = min(30.0, 0.1 * 2 ** attempt)
        assert step / 2 <= delay <= step, (attempt, delay)


def test_the_ceiling_holds_however_long_the_streak() -> None:
    assert 15.0 <= backoff.delay_at(10_000, 0.1, 30.0) <= 30.0


def test_the_delays_spread_out() -> None:
    assert len({round(backoff.delay_at(5, 0.1, 30.0), 6) for _ in range(50)}) > 1
