"""A registry write's dry run (`?dryrun=true`): what the write would change, answered without doing it.

The write goes as far as a real one's check (edited, staged, loaded and compiled with the directory, refused
with the same problem details when it would not load), then stops: nothing is written, reloaded or
announced. The answer lists each contract change with whom it breaks and which compatibility modes refuse it
(gateway/compat, what `xgate diff` reports), and judges the messages each endpoint received lately
(runtime/recent.py: the last 10,000 or 16 MiB per endpoint) under the rules in force and under the candidate:
"would refuse N of the last M", with examples, and each change's share of them. A CI job gates on it with one
request, with the write's own credentials, before the real PUT.
"""

from __future__ import annotations

from typing import Any

from gateway.compat import Mode, compare_registries
from gateway.compat.evidence import Evidence
from gateway.compiler import Ruleset
from gateway.envelope import Envelope
from gateway.model.resolved import Registry
from gateway.recorded import record_from_envelope
from gateway.registry_api.candidate import Checked

EXAMPLES_KEPT = 3


def dry_run_report(active: Registry, ruleset: Ruleset, checked: Checked, recent: dict[str, list[Envelope]],
                   subject: str) -> dict[str, Any]:
    changes = compare_registries(active, checked.snapshot.registry)
    evidence = Evidence(changes)
    traffic: dict[str, Any] = {}
    number = 0
    for endpoint, envelopes in sorted(recent.items()):
        counts = {"would_refuse": 0, "would_admit": 0}
        examples: list[dict[str, Any]] = []
        for envelope in envelopes:
            number += 1
            now, after = ruleset.classify(envelope), checked.ruleset.classify(envelope)
            evidence.add(number, now, after)
            if now.conformant == after.conformant:
                continue
            counts["would_refuse" if now.conformant else "would_admit"] += 1
            if len(examples) < EXAMPLES_KEPT:
                examples.append({"message": record_from_envelope(envelope), "now": now.as_dict(),
                                 "after": after.as_dict()})
        traffic[endpoint] = {"messages": len(envelopes), **counts, "examples": examples}
    listed = []
    for change, measured in zip(changes, evidence.measured, strict=True):
        refused_by = [mode.value for mode in Mode if mode.refuses(change.breaks) and not mode.transitive]
        listed.append({**change.as_dict(), "refused_by": refused_by,
                       "recent_traffic": {"messages": measured.messages, "alone": measured.alone}})
    refused = sum(seen["would_refuse"] for seen in traffic.values())
    total = sum(seen["messages"] for seen in traffic.values())
    return {"dryrun": True, "subject": subject,
            "summary": f"{len(changes)} contract change(s); would refuse {refused} and admit "
                       f"{sum(seen['would_admit'] for seen in traffic.values())} of the last {total} message(s)",
            "changes": listed, "traffic": traffic}
