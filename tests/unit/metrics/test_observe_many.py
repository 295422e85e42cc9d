"""observe_many and observe_repeated write what one observe per amount writes."""

from __future__ import annotations

import random

from prometheus_client import CollectorRegistry, Histogram, generate_latest

from gateway.metrics.instruments import LATENCY_BUCKETS, observe_many, observe_repeated


def _histogram() -> tuple[CollectorRegistry, Histogram]:
    registry = CollectorRegistry()
    return registry, Histogram("xgate_probe_seconds", "probe", ("endpoint",), registry=registry,
                               buckets=LATENCY_BUCKETS)


def test_a_batch_observed_at_once_exposes_what_one_observe_per_amount_exposes() -> None:
    rng = random.Random(7)
    # amounts on bucket bounds, between them, below the first and above the last
    amounts = [*LATENCY_BUCKETS, 0.0, 1e-7, 45.0, 1e9] + [rng.expovariate(200) for _ in range(500)]
    one_by_one, histogram = _histogram()
    for amount in amounts:
        histogram.labels("e").observe(amount)
    at_once, batched = _histogram()
    observe_many(batched.labels("e"), amounts[:300])
    observe_many(batched.labels("e"), amounts[300:])
    observe_many(batched.labels("e"), [])
    batched_lines, single_lines = _samples(at_once), _samples(one_by_one)
    # every bucket and the count exactly; the sum up to float rounding (added in another order)
    assert {k: v for k, v in batched_lines.items() if "_sum" not in k} == \
        {k: v for k, v in single_lines.items() if "_sum" not in k}
    total = 'xgate_probe_seconds_sum{endpoint="e"}'
    assert abs(batched_lines[total] - single_lines[total]) <= 1e-9 * single_lines[total]
    assert batched_lines['xgate_probe_seconds_count{endpoint="e"}'] == len(amounts)


def test_one_amount_observed_many_times_at_once_exposes_what_as_many_observes_expose() -> None:
    one_by_one, histogram = _histogram()
    at_once, batched = _histogram()
    # on a bound, between bounds, below the first and past the last; a count of 0 observes nothing
    for amount, count in ((LATENCY_BUCKETS[3], 4), (0.0007, 17), (0.0, 1), (1e9, 3), (0.002, 0)):
        for _ in range(count):
            histogram.labels("e").observe(amount)
        observe_repeated(batched.labels("e"), amount, count)
    batched_lines, single_lines = _samples(at_once), _samples(one_by_one)
    total = 'xgate_probe_seconds_sum{endpoint="e"}'
    assert {k: v for k, v in batched_lines.items() if k != total} == \
        {k: v for k, v in single_lines.items() if k != total}
    assert abs(batched_lines[total] - single_lines[total]) <= 1e-9 * single_lines[total]
    assert batched_lines['xgate_probe_seconds_count{endpoint="e"}'] == 25


def _samples(registry: CollectorRegistry) -> dict[str, float]:
    lines = generate_latest(registry).decode().splitlines()
    pairs = [line.rsplit(" ", 1) for line in lines if not line.startswith("#") and "_created" not in line]
    return {name: float(value) for name, value in pairs}
