"""Running counts per route, for the live summary (Prometheus metrics build on the same events)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class RouteStats:
    source: str
    verdicts: Counter[str] = field(default_factory=Counter)
    actions: Counter[str] = field(default_factory=Counter)
    rules: Counter[str] = field(default_factory=Counter)
    retries: int = 0
    delivery_failures: int = 0
    inflight: int = 0

    @property
    def received(self) -> int:
        return sum(self.verdicts.values())

    def line(self) -> str:
        verdicts = " ".join(f"{k}={v}" for k, v in sorted(self.verdicts.items()))
        actions = " ".join(f"{k}={v}" for k, v in sorted(self.actions.items()))
        top = ",".join(f"{rule}:{count}" for rule, count in self.rules.most_common(3))
        return (f"{self.source}: received={self.received} {verdicts} | {actions} | inflight={self.inflight} "
                f"retries={self.retries}" + (f" | top rules {top}" if top else ""))


@dataclass
class GatewayStats:
    routes: dict[str, RouteStats] = field(default_factory=dict)

    def route(self, source: str) -> RouteStats:
        return self.routes.setdefault(source, RouteStats(source))

    def render(self) -> str:
        return "\n".join(stats.line() for stats in self.routes.values())
