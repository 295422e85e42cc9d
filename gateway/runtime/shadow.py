"""Shadow rules: a candidate set of documents judged beside the active one on live traffic, routing nothing.

A platform team tightening a contract wants to know what the new version
would dead-letter before it does. The candidate is the active documents
with the config directory's `shadow/` folder laid over them: a file there
replaces the active file of the same name (a tightened copy of
`telemetry.xreg.json`, say), a new name adds documents. The loader leaves
the folder out of the active registry; the candidate is compiled like the
active documents and swapped on every reload. For each message the
pipeline judged, the candidate judges it too; a different verdict (another
outcome, or another message definition) is counted in
`xgate_shadow_disagreements_total{endpoint, active, candidate, messageid, rule}` (over
`xgate_shadow_judged_total{endpoint}`: a rate)
and the latest ones are kept, bounded, for `GET /shadow`. Promoting the
candidate is moving its files up into the config directory.

gateway.yaml's `runtime.shadow_dir` may name another folder, outside the config directory, laid over it the
same way (watched for changes too). Off (no such folder, or one holding no document), the pipeline pays one
attribute read per batch.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gateway.compiler import Ruleset, compile_registry
from gateway.envelope import Envelope
from gateway.errors import Severity
from gateway.limits import DEFAULT_LIMITS, Limits
from gateway.loader import load_snapshot
from gateway.loader.overlay import overlaid
from gateway.metrics import names
from gateway.metrics.instruments import GatewayMetrics
from gateway.recorded import record_from_envelope
from gateway.runtime.router import kind_of
from gateway.settings import shadow_folder
from gateway.verdict import Verdict

LATEST_KEPT = 50


class ShadowJudge:
    """The candidate ruleset and what it disagreed about."""

    def __init__(self, ruleset: Ruleset, metrics: GatewayMetrics, source: str) -> None:
        self.ruleset = ruleset
        self.source = source
        self._counter = metrics[names.SHADOW_DISAGREEMENTS]
        self._judged_counter = metrics[names.SHADOW_JUDGED]
        self._children: dict[tuple[str, ...], Any] = {}
        self.latest: deque[dict[str, Any]] = deque(maxlen=LATEST_KEPT)
        self.judged = 0
        self.disagreements = 0

    def judge(self, endpoint: str, judged: Iterable[tuple[Envelope, Verdict]]) -> None:
        """Judge a batch the active rules judged; count and keep the messages the candidate sees otherwise."""
        classify = self.ruleset.classify
        count = 0
        for envelope, active in judged:
            count += 1
            candidate = classify(envelope)
            if candidate.outcome is active.outcome and candidate.messageid == active.messageid \
                    and candidate.messagegroupid == active.messagegroupid:
                continue
            self._disagree(endpoint, envelope, active, candidate)
        self.judged += count
        self._judged_counter.labels(endpoint).inc(count)

    def _disagree(self, endpoint: str, envelope: Envelope, active: Verdict, candidate: Verdict) -> None:
        self.disagreements += 1
        explaining = candidate.violations or active.violations  # the refusal that makes them differ
        key = (endpoint, kind_of(active).value, kind_of(candidate).value,
               candidate.messageid or active.messageid or "", explaining[0].rule.value if explaining else "")
        child = self._children.get(key)
        if child is None:  # labels are registry ids and fixed words: bounded
            child = self._children[key] = self._counter.labels(*key)
        child.inc()
        self.latest.append({"at": time.time(), "endpoint": endpoint, "message": record_from_envelope(envelope),
                            "active": active.as_dict(), "candidate": candidate.as_dict()})

    def view(self) -> dict[str, Any]:
        """What `GET /shadow` answers."""
        return {"candidate": {"source": self.source, "definitions": self.ruleset.definition_count,
                              "digest": self.ruleset.digest},
                "judged": self.judged, "disagreements": self.disagreements, "latest": list(self.latest)}


def load_shadow(config_dir: str | Path, metrics: GatewayMetrics, limits: Limits = DEFAULT_LIMITS,
                named: str | None = None) -> tuple[ShadowJudge | None, list[str]]:
    """The candidate: DIR's documents with `DIR/shadow/` (or the folder gateway.yaml's `runtime.shadow_dir`
    names) laid over them by file name (loader/overlay.py); None without the folder or with nothing in it.
    Problems as lines for the log; a candidate with errors is judged with what compiled."""
    folder = shadow_folder(config_dir, named)
    documents = overlaid(config_dir, folder) if folder.is_dir() else None
    if documents is None:  # no folder, or an empty one: no candidate
        return None, []
    snapshot = load_snapshot(documents)
    ruleset = compile_registry(snapshot.registry, snapshot.digest, limits)
    problems = [str(d) for d in (*snapshot.diagnostics, *ruleset.diagnostics) if d.severity is Severity.ERROR]
    return ShadowJudge(ruleset, metrics, str(folder)), problems
