"""The accepting pass against the full judge: identical verdicts on mutated conformant messages (issue 18).

Conformant seeds come from the reference workload (bench/workload.py: 50 definitions, shared `type`s told
apart by `source` templates, Kafka binary and structured) and from config/demo's traffic (Kafka, HTTP,
AMQP, MQTT, NATS). Every seed is mutated by every kind of change of tests/unit/compiler/mutations.py and
native_mutations.py (aimed at what the native pass relies on: patterns, bounds, nulls, duplicates, nesting);
`Ruleset.classify` (accept fast, explain once) and `Ruleset.judge_fully` (every candidate's closures) must
agree on the verdict, the message ids and, for failures, every violation.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from bench import workload
from gateway.compiler import Ruleset
from gateway.compiler.accepting import UNSURE, Failed
from gateway.envelope import Envelope
from gateway.recorded import envelope_from_record
from gateway.testing import traffic
from gateway.verdict import Verdict
from tests.unit.compiler.mutations import MUTATIONS, mutated
from tests.unit.compiler.native_mutations import NATIVE_MUTATIONS

KINDS = {**MUTATIONS, **NATIVE_MUTATIONS}



def _shape(verdict: Verdict) -> tuple[Any, ...]:
    return (verdict.outcome.value, verdict.messagegroupid, verdict.messageid,
            [v.as_dict() for v in verdict.violations])


def _differ(ruleset: Ruleset, seeds: list[dict[str, Any]], per_kind: int, seed: int) -> tuple[Counter[str], Counter[str]]:
    """Mutate, judge both ways, fail on the first disagreement; counts of messages by kind and by decision."""
    rng = random.Random(seed)
    kinds: Counter[str] = Counter()
    decided: Counter[str] = Counter()
    for kind, changed, envelope in mutated(seeds, KINDS, per_kind, rng):
        fast, full = ruleset.classify(envelope), ruleset.judge_fully(envelope)
        assert _shape(fast) == _shape(full), (kind, changed)
        kinds[kind] += 1
        decided[_decision(ruleset, envelope, fast)] += 1
    return kinds, decided


def _decision(ruleset: Ruleset, envelope: Envelope, verdict: Verdict) -> str:
    rules = ruleset.endpoints[envelope.endpoint] if envelope.endpoint else ruleset.default_endpoint()
    assert rules is not None
    index = rules.index_for(envelope.protocol)
    found = index.acceptor.accept(envelope, rules.envelope_mode, True)
    return "fail" if isinstance(found, Failed) else "unsure" if found is UNSURE else "accepted"


def test_the_seeds_conform_and_are_accepted_by_the_fast_pass(workload_ruleset: Ruleset, demo_ruleset: Ruleset) -> None:
    seeds = [s.record for s in workload.samples(400) if s.kind == workload.OK]
    demo = traffic.generate(300, seed=18, defect_rate=0.0)
    for ruleset, records in ((workload_ruleset, seeds), (demo_ruleset, demo)):
        for record in records:
            envelope = envelope_from_record(record)
            assert ruleset.classify(envelope).conformant and ruleset.judge_fully(envelope).conformant
    accepted = Counter(_decision(workload_ruleset, e, workload_ruleset.classify(e))
                       for e in map(envelope_from_record, seeds))
    assert accepted == Counter(accepted=len(seeds))  # every conformant workload message decided fast


def test_the_accepting_pass_agrees_with_the_full_judge_on_mutated_workload_messages(workload_ruleset: Ruleset) -> None:
    seeds = [s.record for s in workload.samples(600) if s.kind == workload.OK]
    assert {structured for structured in (s.get("headers", {}).get("content-type", "").startswith("application/cloud")
                                          for s in seeds)} == {True, False}  # both modes are seeds
    kinds, decided = _differ(workload_ruleset, seeds, per_kind=240, seed=18)
    assert len(kinds) >= 40 and sum(kinds.values()) >= 10000, kinds
    # not vacuous: the fast pass decides both ways, and the full judge is left only what it cannot read
    assert decided["accepted"] > 500 and decided["fail"] > 3000, decided


def test_the_accepting_pass_agrees_with_the_full_judge_on_mutated_demo_messages(demo_ruleset: Ruleset) -> None:
    seeds = traffic.generate(400, seed=19, defect_rate=0.0)
    assert {r["protocol"] for r in seeds} == {"KAFKA", "HTTP", "AMQP/1.0", "MQTT/5.0", "NATS"}
    kinds, decided = _differ(demo_ruleset, seeds, per_kind=80, seed=19)
    assert len(kinds) >= 30 and sum(kinds.values()) >= 3000, kinds
    assert decided["accepted"] > 100, decided


def test_a_verdict_of_the_reference_traffic_is_the_same_both_ways(workload_ruleset: Ruleset) -> None:
    for sample in workload.samples(1500, seed=7):
        envelope = envelope_from_record(sample.record)
        assert _shape(workload_ruleset.classify(envelope)) == _shape(workload_ruleset.judge_fully(envelope)), sample
