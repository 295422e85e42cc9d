"""One /metrics for `xgate run --workers N`: the workers' expositions combined as the metric table says."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from gateway.metrics import names
from gateway.metrics.instruments import GatewayMetrics
from gateway.metrics.merge import WorkerTotals, merge_expositions, merge_families


def _samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text.decode()) for s in family.samples}


def _two_workers() -> tuple[GatewayMetrics, GatewayMetrics]:
    first, second = GatewayMetrics(), GatewayMetrics()
    first[names.MESSAGES].labels("in", "conformant").inc(3)
    second[names.MESSAGES].labels("in", "conformant").inc(4)
    second[names.MESSAGES].labels("in", "unmatched").inc(2)  # a series only one worker has
    first[names.VALIDATION_SECONDS].labels("in").observe(0.001)
    second[names.VALIDATION_SECONDS].labels("in").observe(0.5)
    first[names.ADAPTER_UP].labels("in", "source").set(1)
    second[names.ADAPTER_UP].labels("in", "source").set(0)
    first[names.INFLIGHT].labels("in").set(5)
    second[names.INFLIGHT].labels("in").set(7)
    first[names.DEFINITIONS].set(12)
    second[names.DEFINITIONS].set(11)  # a worker whose reload failed still runs its last good ruleset
    first[names.LAST_RELOAD].set(2000.0)
    second[names.LAST_RELOAD].set(1000.0)
    return first, second


def test_counters_and_histograms_add_up() -> None:
    merged = _samples(merge_expositions(generate_latest(m.registry).decode() for m in _two_workers()))
    assert merged[("xgate_messages_total", (("endpoint", "in"), ("verdict", "conformant")))] == 7
    assert merged[("xgate_messages_total", (("endpoint", "in"), ("verdict", "unmatched")))] == 2
    assert merged[("xgate_validation_seconds_count", (("endpoint", "in"),))] == 2
    assert merged[("xgate_validation_seconds_sum", (("endpoint", "in"),))] == 0.501
    # bucket by bucket: 0.001 counts from the 0.001 bucket on, 0.5 only in the wide ones
    buckets = {dict(labels)["le"]: value for (name, labels), value in merged.items()
               if name == "xgate_validation_seconds_bucket"}
    assert (buckets["0.0005"], buckets["0.001"], buckets["+Inf"]) == (0, 1, 2)


def test_gauges_combine_by_their_meaning() -> None:
    merged = _samples(merge_expositions(generate_latest(m.registry).decode() for m in _two_workers()))
    assert merged[("xgate_inflight_messages", (("endpoint", "in"),))] == 12           # sum: in flight anywhere
    assert merged[("xgate_adapter_up", (("endpoint", "in"), ("role", "source")))] == 0  # min: one worker is down
    assert merged[("xgate_compiled_definitions", ())] == 12                          # max
    assert merged[("xgate_last_reload_success_timestamp_seconds", ())] == 1000.0     # min: the stalest worker


def test_every_gauge_in_the_table_says_how_it_merges() -> None:
    for metric in names.ALL:
        assert metric.merge in ("sum", "min", "max"), metric
        if metric.kind != "gauge":
            assert metric.merge == "sum", f"{metric.name}: counters and histograms only add up"


def test_one_worker_is_the_identity() -> None:
    (first, _) = _two_workers()
    alone = generate_latest(first.registry)
    assert _samples(merge_expositions([alone.decode()])) == _samples(alone)


def _scrape(workers: list[WorkerTotals], texts: list[str | None]) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    for totals, text in zip(workers, texts, strict=True):
        totals.update(text)
    return _samples(merge_families(totals.families() for totals in workers))


CONFORMANT = ("xgate_messages_total", (("endpoint", "in"), ("verdict", "conformant")))
UNMATCHED = ("xgate_messages_total", (("endpoint", "in"), ("verdict", "unmatched")))
VALIDATED = ("xgate_validation_seconds_count", (("endpoint", "in"),))


def test_a_worker_that_misses_a_scrape_counts_with_its_last_exposition() -> None:
    first, second = _two_workers()
    workers = [WorkerTotals(), WorkerTotals()]
    both = [generate_latest(m.registry).decode() for m in (first, second)]
    assert _scrape(workers, both)[CONFORMANT] == 7
    first[names.MESSAGES].labels("in", "conformant").inc(10)
    merged = _scrape(workers, [generate_latest(first.registry).decode(), None])  # the second did not answer
    assert merged[CONFORMANT] == 17 and merged[UNMATCHED] == 2


def test_a_restarted_worker_adds_to_what_its_earlier_life_counted() -> None:
    """Combined counters never fall: Prometheus would read the fall as a reset and rate() would spike."""
    first, second = _two_workers()
    workers = [WorkerTotals(), WorkerTotals()]
    before = _scrape(workers, [generate_latest(m.registry).decode() for m in (first, second)])
    reborn = GatewayMetrics()  # the second worker again, counting from zero, its unmatched series not made yet
    reborn[names.MESSAGES].labels("in", "conformant").inc(1)
    reborn[names.VALIDATION_SECONDS].labels("in").observe(0.2)
    after = _scrape(workers, [generate_latest(first.registry).decode(), generate_latest(reborn.registry).decode()])
    assert after[CONFORMANT] == before[CONFORMANT] + 1 == 8
    assert after[UNMATCHED] == before[UNMATCHED] == 2  # carried, though the new life has no such series yet
    assert after[VALIDATED] == before[VALIDATED] + 1 == 3
    assert all(after[key] >= value for key, value in before.items() if key[0].endswith(("_total", "_count", "_bucket")))
    # a gauge is the new life's own value, never carried
    assert after[("xgate_inflight_messages", (("endpoint", "in"),))] == 5


def test_a_second_restart_keeps_both_earlier_lives() -> None:
    totals = WorkerTotals()
    for life in (5, 3, 2):
        metrics = GatewayMetrics()
        metrics[names.MESSAGES].labels("in", "conformant").inc(life)
        merged = _scrape([totals], [generate_latest(metrics.registry).decode()])
    assert merged[CONFORMANT] == 10


def test_a_worker_that_ended_keeps_its_counts_while_it_is_down_and_after() -> None:
    """The supervisor says when a worker's process ended: its next life is counted on top even when it has
    already counted past the old totals by the first scrape (no fall to detect)."""
    totals = WorkerTotals()
    old = GatewayMetrics()
    old[names.MESSAGES].labels("in", "conformant").inc(4)
    old[names.INFLIGHT].labels("in").set(3)
    _scrape([totals], [generate_latest(old.registry).decode()])
    totals.ended()
    down = _scrape([totals], [None])
    assert down[CONFORMANT] == 4 and ("xgate_inflight_messages", (("endpoint", "in"),)) not in down
    new = GatewayMetrics()
    new[names.MESSAGES].labels("in", "conformant").inc(9)
    assert _scrape([totals], [generate_latest(new.registry).decode()])[CONFORMANT] == 13
