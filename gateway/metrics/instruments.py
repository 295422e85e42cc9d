"""The instruments of names.py in an injected CollectorRegistry, with label children bound ahead of time.

The pipeline counts a batch locally and then calls `inc(n)` once per child it
looked up in plain dicts, and `observe_many` (or `observe_repeated`) once per histogram: no `labels()`
call and no lock per message. Children are bound when a route starts and when
a ruleset is swapped in.
"""

from __future__ import annotations

import platform
from bisect import bisect_left
from collections import Counter as Tally
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from gateway import __version__
from gateway.metrics import names
from gateway.verdict import Rule

LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                   5.0, 10.0, 30.0)
VERDICTS = ("conformant", "nonconformant", "unmatched")
ACTIONS = ("forwarded", "deadlettered", "rejected", "dropped")
# MessageRefused.cause of gateway.errors, and records a source could not read (a Kafka batch: skipped)
UNDELIVERABLE_CAUSES = ("too-large", "refused", "unreadable")


def _make(metric: names.MetricName, registry: CollectorRegistry) -> Any:
    name = metric.name.removesuffix("_total") if metric.kind == "counter" else metric.name
    if metric.kind == "counter":
        return Counter(name, metric.help, metric.labels, registry=registry)
    if metric.kind == "gauge":
        return Gauge(name, metric.help, metric.labels, registry=registry)
    return Histogram(name, metric.help, metric.labels, registry=registry, buckets=LATENCY_BUCKETS)


def observe_many(histogram: Any, amounts: list[float]) -> None:
    """`histogram.observe(a)` for every amount, with one update of each bucket touched instead of one lock per
    amount. prometheus_client has no batch observe: this writes the child's own bucket and sum values, which
    `observe` itself updates (tests/unit/metrics pin the two to the same exposition)."""
    if not amounts:
        return
    histogram._raise_if_not_observable()
    bounds = histogram._upper_bounds  # ends with +Inf: every amount has a bucket
    buckets = histogram._buckets
    for index, count in Tally([bisect_left(bounds, amount) for amount in amounts]).items():
        buckets[index].inc(count)
    histogram._sum.inc(sum(amounts))


def observe_repeated(histogram: Any, amount: float, count: int) -> None:
    """`observe_many(histogram, [amount] * count)` in one bucket update: a batch's records share one judging
    time (the batch's, divided) and one end-to-end time, and a list of them cost more than the update itself."""
    if count <= 0:
        return
    histogram._raise_if_not_observable()
    histogram._buckets[bisect_left(histogram._upper_bounds, amount)].inc(count)
    histogram._sum.inc(amount * count)


@dataclass
class RouteMetrics:
    """The children one route uses, bound once."""

    endpoint: str
    verdicts: dict[str, Any]
    rules: dict[str, Any]
    routed: dict[tuple[str, str], Any]
    validation: Any
    end_to_end: Any
    inflight: Any
    failures: dict[tuple[str, bool], Any]
    up: dict[str, Any]
    reconnects: dict[str, Any]
    undeliverable: dict[tuple[str, str], Any] = field(default_factory=dict)  # (destination, cause)
    destination_up: dict[str, Any] = field(default_factory=dict)
    definitions: dict[tuple[str, str, str], Any] = field(default_factory=dict)


class GatewayMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.instruments = {m.name: _make(m, self.registry) for m in names.ALL}
        self.instruments[names.BUILD_INFO.name].labels(__version__, platform.python_version()).set(1)

    def __getitem__(self, metric: names.MetricName) -> Any:
        return self.instruments[metric.name]

    def route(self, endpoint: str, destinations: list[str]) -> RouteMetrics:
        targets = sorted(set(destinations)) + [""]
        return RouteMetrics(
            endpoint,
            {v: self[names.MESSAGES].labels(endpoint, v) for v in VERDICTS},
            {r.value: self[names.VIOLATIONS].labels(endpoint, r.value) for r in Rule},
            {(d, a): self[names.ROUTED].labels(endpoint, d, a) for d in targets for a in ACTIONS},
            self[names.VALIDATION_SECONDS].labels(endpoint),
            self[names.END_TO_END_SECONDS].labels(endpoint),
            self[names.INFLIGHT].labels(endpoint),
            {(d, r): self[names.DELIVERY_FAILURES].labels(endpoint, d, "true" if r else "false")
             for d in targets for r in (True, False)},
            {role: self[names.ADAPTER_UP].labels(endpoint, role) for role in ("source", "sink")},
            {role: self[names.ADAPTER_RECONNECTS].labels(endpoint, role) for role in ("source", "sink")},
            {(d, cause): self[names.UNDELIVERABLE].labels(endpoint, d, cause)
             for d in targets for cause in UNDELIVERABLE_CAUSES},
            {d: self[names.DESTINATION_UP].labels(endpoint, d) for d in targets if d},
        )

    def definition_children(self, endpoint: str, definitions: list[tuple[str, str]]
                            ) -> dict[tuple[str, str, str], Any]:
        """A route's children of xgate_definition_messages_total: every (group, message) its endpoint can name,
        by verdict, and one for unmatched messages (a reload makes them in a thread: 10,000 take a quarter of
        a second)."""
        bound: dict[tuple[str, str, str], Any] = {}
        counter = self[names.DEFINITION_MESSAGES]
        for group, message in definitions:
            for verdict in ("conformant", "nonconformant"):
                bound[(group, message, verdict)] = counter.labels(endpoint, group, message, verdict)
        bound[("", "", "unmatched")] = counter.labels(endpoint, "", "", "unmatched")
        return bound
