"""The proxy's counts under the metric names `xgate run` exports (gateway/metrics/names.py), so one dashboard
reads both: messages by verdict and violations by rule per judged endpoint, produced records settled as
`forwarded` (to the topic), `rejected` (refused to the producer) or `deadlettered` (observe's copies), the
judging time, and `xgate_adapter_up{role="proxy"}` while the upstream cluster answers.
"""

from __future__ import annotations

from gateway.metrics import names
from gateway.metrics.instruments import GatewayMetrics, observe_many
from gateway.proxy.judging import BatchVerdicts

ROLE = "proxy"


class ProxyMetrics:
    def __init__(self, metrics: GatewayMetrics | None = None) -> None:
        self.metrics = metrics if metrics is not None else GatewayMetrics()
        self._endpoints: set[str] = set()

    def endpoints(self, endpoint_ids: set[str], definitions: int) -> None:
        """The judged endpoints of the rules in force (at start and after each reload)."""
        self._endpoints = set(endpoint_ids)
        self.metrics[names.DEFINITIONS].set(definitions)

    def judged(self, endpoint: str, verdicts: BatchVerdicts, seconds: float, refused: bool) -> None:
        """One partition's batch: its verdicts, and what became of its records."""
        m = self.metrics
        total = verdicts.count
        if not total:
            return
        unmatched = sum(1 for _, verdict in verdicts.failed if verdict.messageid is None)
        nonconformant = len(verdicts.failed) - unmatched
        for verdict_name, count in (("conformant", total - len(verdicts.failed)), ("nonconformant", nonconformant),
                                    ("unmatched", unmatched)):
            if count:
                m[names.MESSAGES].labels(endpoint, verdict_name).inc(count)
        for _, verdict in verdicts.failed:
            for violation in verdict.violations:
                m[names.VIOLATIONS].labels(endpoint, violation.rule.value).inc()
        m[names.ROUTED].labels(endpoint, "", "rejected" if refused else "forwarded").inc(total)
        observe_many(m[names.VALIDATION_SECONDS].labels(endpoint), [seconds / total] * total)

    def dead_lettered(self, endpoint: str, destination: str, count: int) -> None:
        self.metrics[names.ROUTED].labels(endpoint, destination, "deadlettered").inc(count)

    def upstream(self, up: bool) -> None:
        for endpoint in self._endpoints:
            self.metrics[names.ADAPTER_UP].labels(endpoint, ROLE).set(1 if up else 0)

    def reloaded(self, outcome: str) -> None:
        self.metrics[names.RELOADS].labels(outcome).inc()

    def watching(self, up: bool) -> None:
        self.metrics[names.CONFIG_WATCH_UP].set(1 if up else 0)
