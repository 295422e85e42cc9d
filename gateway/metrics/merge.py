"""One `/metrics` for `xgate run --workers N`: the workers' expositions combined into one.

Each worker keeps its own CollectorRegistry (nothing shared per message, no
locks, no mmap files on the hot path); the supervisor reads every worker's
exposition when Prometheus scrapes and combines samples of the same series
as the metric table says (`names.MetricName.merge`): counters, histograms
and most gauges add up, "is everything up" gauges take the minimum,
"which version" gauges the maximum. Series xgate does not declare add up.

A worker's counts must not vanish from the sum: a worker that restarted counts from zero again, and one that
did not answer a scrape gave nothing, and either way the combined counter fell, which Prometheus takes for a
reset (`rate()` shows a false spike). `WorkerTotals` keeps, per worker, its last exposition (served again when
it misses a scrape) and what its earlier lives counted (added to every cumulative series: counters, histogram
and summary counts, sums and buckets), so each combined counter only ever grows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from prometheus_client import generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from gateway.metrics import names

_MERGE = {metric.name: metric.merge for metric in names.ALL}
_COMBINE: dict[str, Callable[[float, float], float]] = {"sum": lambda a, b: a + b, "min": min, "max": max}


def _policy(family: Metric, sample: Sample) -> str:
    if sample.name.endswith("_created"):
        return "min"  # when the series first existed anywhere
    # the parser names a counter family without its `_total`; the table names the exported series
    return _MERGE.get(family.name, _MERGE.get(family.name + "_total", "sum"))


class _Families:
    """The minimal collector `generate_latest` needs."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self._families = list(families)

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)


Series = tuple[str, str, tuple[tuple[str, str], ...]]  # (family, sample name, sorted labels)
_CUMULATIVE_TYPES = ("counter", "histogram", "summary")


def _cumulative(family: Metric, sample: Sample) -> bool:
    """A sample that only grows within one process (its `_created` timestamp is not a count)."""
    return family.type in _CUMULATIVE_TYPES and not sample.name.endswith("_created")


class WorkerTotals:
    """One worker's series as the supervisor last read them, continued across its restarts and missed scrapes."""

    def __init__(self) -> None:
        self._families: list[Metric] = []
        self._last: dict[Series, float] = {}  # each cumulative sample as last read, this life
        self._carried: dict[Series, float] = {}  # what earlier lives had counted, per series
        self._kinds: dict[str, tuple[str, str]] = {}  # family -> (documentation, type), for carried-only series

    def update(self, text: str | None) -> None:
        """The worker's exposition of this scrape; None when it did not answer (its last one stands)."""
        if text is None:
            return
        families = list(text_string_to_metric_families(text))
        now: dict[Series, float] = {}
        for family in families:
            self._kinds[family.name] = (family.documentation, family.type)
            for sample in family.samples:
                if _cumulative(family, sample):
                    now[(family.name, sample.name, tuple(sorted(sample.labels.items())))] = sample.value
        if any(value < self._last.get(key, 0.0) for key, value in now.items()):
            self.ended()  # a count went back: a new life we were not told of, counting from zero
        self._last = now
        self._families = families

    def ended(self) -> None:
        """The worker's process is gone: what it counted is carried; its gauges go with it."""
        for key, value in self._last.items():
            self._carried[key] = self._carried.get(key, 0.0) + value
        self._last = {}
        self._families = []

    def families(self) -> list[Metric]:
        """The last exposition's families, each cumulative sample with its earlier lives' counts added (and
        the series only an earlier life had, with what it counted)."""
        if not self._carried:
            return self._families
        pending = dict(self._carried)
        out: dict[str, Metric] = {}
        for family in self._families:
            continued = out[family.name] = Metric(family.name, family.documentation, family.type)
            for sample in family.samples:
                extra = pending.pop((family.name, sample.name, tuple(sorted(sample.labels.items()))), 0.0) \
                    if _cumulative(family, sample) else 0.0
                continued.add_sample(sample.name, sample.labels, sample.value + extra)
        for (name, sample_name, labels), value in pending.items():
            if name not in out:
                documentation, kind = self._kinds[name]
                out[name] = Metric(name, documentation, kind)
            out[name].add_sample(sample_name, dict(labels), value)
        return list(out.values())


def merge_expositions(texts: Iterable[str]) -> bytes:
    """The text exposition of every series in `texts`, each series' samples combined across the texts."""
    return merge_families(list(text_string_to_metric_families(text)) for text in texts)


def merge_families(workers: Iterable[Iterable[Metric]]) -> bytes:
    """`merge_expositions` over each worker's parsed families (WorkerTotals.families)."""
    families: dict[str, Metric] = {}
    values: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]] = {}
    for worker in workers:
        for family in worker:
            kept = families.setdefault(family.name, Metric(family.name, family.documentation, family.type))
            series = values.setdefault(family.name, {})
            for sample in family.samples:
                key = (sample.name, tuple(sorted(sample.labels.items())))
                if key in series:
                    series[key] = _COMBINE[_policy(kept, sample)](series[key], sample.value)
                else:
                    series[key] = sample.value
    for name, family in families.items():
        for (sample_name, labels), value in values[name].items():
            family.add_sample(sample_name, dict(labels), value)
    return generate_latest(_Families(families.values()))  # type: ignore[arg-type,unused-ignore]
