"""One `/metrics` for `xgate run --workers N`: the workers' expositions combined into one.

Each worker keeps its own CollectorRegistry (nothing shared per message, no
locks, no mmap files on the hot path); the supervisor reads every worker's
exposition when Prometheus scrapes and combines samples of the same series
as the metric table says (`names.MetricName.merge`): counters, histograms
and most gauges add up, "is everything up" gauges take the minimum,
"which version" gauges the maximum. Series xgate does not declare add up.
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


def merge_expositions(texts: Iterable[str]) -> bytes:
    """The text exposition of every series in `texts`, each series' samples combined across the texts."""
    families: dict[str, Metric] = {}
    values: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]] = {}
    for text in texts:
        for family in text_string_to_metric_families(text):
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
