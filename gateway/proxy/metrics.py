"""The proxy's counts under the metric names `xgate run` exports (gateway/metrics/names.py), so one dashboard
reads both: messages by verdict and violations by rule per judged endpoint, produced records settled as
`forwarded` (to the topic), `rejected` (refused to the producer) or `deadlettered` (observe's copies), the
judging time, and `xgate_adapter_up{role="proxy"}` while the upstream cluster answers.
"""

from __future__ import annotations

from gateway.metrics import names
from gateway.metrics.instruments import VERDICTS, GatewayMetrics, observe_repeated
from gateway.proxy.judging import BatchVerdicts

ROLE = "proxy"


class _Children:
    """One judged endpoint's label children, bound on its first batch: `labels()` takes a lock and checks its
    arguments each call, and three calls a partition's batch cost more than judging it."""

    __slots__ = ("forwarded", "messages", "rejected", "validation")

    def __init__(self, metrics: GatewayMetrics, endpoint: str) -> None:
        self.messages = {verdict: metrics[names.MESSAGES].labels(endpoint, verdict) for verdict in VERDICTS}
        self.rejected = metrics[names.ROUTED].labels(endpoint, "", "rejected")
        self.forwarded = metrics[names.ROUTED].labels(endpoint, "", "forwarded")
        self.validation = metrics[names.VALIDATION_SECONDS].labels(endpoint)


class ProxyMetrics:
    def __init__(self, metrics: GatewayMetrics | None = None) -> None:
        self.metrics = metrics if metrics is not None else GatewayMetrics()
        self._endpoints: set[str] = set()
        self._children: dict[str, _Children] = {}

    def endpoints(self, endpoint_ids: set[str], definitions: int) -> None:
        """The judged endpoints of the rules in force (at start and after each reload)."""
        self._endpoints = set(endpoint_ids)
        self.metrics[names.DEFINITIONS].set(definitions)

    def judged(self, endpoint: str, verdicts: BatchVerdicts, seconds: float, refused: bool) -> None:
        """One partition's batch: its verdicts, and what became of its records."""
        total = verdicts.count
        if not total:
            return
        children = self._children.get(endpoint)
        if children is None:
            children = self._children[endpoint] = _Children(self.metrics, endpoint)
        failed = verdicts.failed
        if failed:
            unmatched = sum(1 for _, verdict in failed if verdict.messageid is None)
            for verdict_name, count in (("nonconformant", len(failed) - unmatched), ("unmatched", unmatched)):
                if count:
                    children.messages[verdict_name].inc(count)
            violations = self.metrics[names.VIOLATIONS]
            for _, verdict in failed:
                for violation in verdict.violations:
                    violations.labels(endpoint, violation.rule.value).inc()
        if total > len(failed):
            children.messages["conformant"].inc(total - len(failed))
        (children.rejected if refused else children.forwarded).inc(total)
        observe_repeated(children.validation, seconds / total, total)

    def dead_lettered(self, endpoint: str, destination: str, count: int) -> None:
        self.metrics[names.ROUTED].labels(endpoint, destination, "deadlettered").inc(count)

    def upstream(self, up: bool) -> None:
        for endpoint in self._endpoints:
            self.metrics[names.ADAPTER_UP].labels(endpoint, ROLE).set(1 if up else 0)

    def reloaded(self, outcome: str) -> None:
        self.metrics[names.RELOADS].labels(outcome).inc()

    def watching(self, up: bool) -> None:
        self.metrics[names.CONFIG_WATCH_UP].set(1 if up else 0)
