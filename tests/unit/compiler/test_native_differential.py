"""The native core against the Python judge: every verdict field equal on mutated messages (issue 31).

Seeds and mutations are those of test_accepting_differential.py (the reference workload: 50 definitions,
Kafka binary and structured; config/demo's traffic for every protocol) plus quirks.py's (where two judges
could read text differently: trailing newlines, timestamp offsets and fractions, percent signs, non-ASCII).
Each mutated message is judged by `NativeJudge.judge` (Kafka messages in one call of the core per batch) and
by `Ruleset.judge_fully` (every candidate's closures, the reference); outcome, message ids and every
violation's path, rule, expected, actual and message must be equal.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from bench import workload
from gateway.compiler import Ruleset
from gateway.compiler.core import NativeJudge, kafka_record, native_available
from gateway.envelope import Envelope
from gateway.recorded import envelope_from_record
from gateway.testing import traffic
from tests.unit.compiler.mutations import mutated
from tests.unit.compiler.native_quirks import QUIRKS
from tests.unit.compiler.test_accepting_differential import KINDS, _shape

pytestmark = pytest.mark.skipif(not native_available(), reason="the native core is not built (make install)")
ALL_KINDS = {**KINDS, **QUIRKS}


def _mutated(seeds: list[dict[str, Any]], per_kind: int, seed: int) -> list[tuple[str, Envelope]]:
    return [(kind, envelope) for kind, _, envelope in mutated(seeds, ALL_KINDS, per_kind, random.Random(seed))]


def _agree(ruleset: Ruleset, messages: list[tuple[str, Envelope]]) -> Counter[str]:
    """Judge in batches of 500 both ways; fail on the first disagreement. Counts by how the core judged."""
    judge = NativeJudge(ruleset)
    counted: Counter[str] = Counter()
    for start in range(0, len(messages), 500):
        batch = messages[start:start + 500]
        envelopes = [envelope for _, envelope in batch]
        for (kind, envelope), native in zip(batch, judge.judge(envelopes)):
            full = ruleset.judge_fully(envelope)
            assert _shape(native) == _shape(full), (kind, envelope)
        for kind, envelope in batch:
            counted[_how(judge, envelope)] += 1
            counted[f"kind:{kind}"] += 1
    return counted


def _how(judge: NativeJudge, envelope: Envelope) -> str:
    """Whether the core judged the message ("native") or left it to the Python judge."""
    position = judge.endpoint_position(envelope.endpoint) if envelope.protocol == "KAFKA" else None
    if position is None:
        return "python"
    result = judge.judge_records(position, [kafka_record(envelope)])[0]
    return "deferred" if result is None else "native"


def test_the_core_agrees_with_the_python_judge_on_mutated_workload_messages(workload_ruleset: Ruleset) -> None:
    seeds = [s.record for s in workload.samples(600) if s.kind == workload.OK]
    counted = _agree(workload_ruleset, _mutated(seeds, per_kind=240, seed=31))
    kinds = [key for key in counted if key.startswith("kind:")]
    assert len(kinds) >= 40, kinds
    # not vacuous: the core itself judged at least 10,000 of them, on every verdict field
    assert counted["native"] >= 10_000, counted


def test_the_core_agrees_on_mutated_demo_messages(demo_ruleset: Ruleset) -> None:
    seeds = traffic.generate(400, seed=32, defect_rate=0.0)
    counted = _agree(demo_ruleset, _mutated(seeds, per_kind=40, seed=32))
    assert counted["native"] >= 300, counted


def test_the_reference_traffic_is_judged_natively_and_alike(workload_ruleset: Ruleset) -> None:
    samples = workload.samples(2000, seed=7)
    envelopes = [envelope_from_record(sample.record) for sample in samples]
    judge = NativeJudge(workload_ruleset)
    verdicts = judge.judge(envelopes)
    for envelope, verdict in zip(envelopes, verdicts):
        assert _shape(verdict) == _shape(workload_ruleset.judge_fully(envelope)), envelope
    how = Counter(_how(judge, envelope) for envelope in envelopes)
    assert how == Counter(native=len(envelopes)), how  # the whole workload is lowered: nothing deferred
    outcomes = Counter(verdict.outcome.value for verdict in verdicts)
    assert outcomes["conformant"] > 500 and outcomes["nonconformant"] > 500, outcomes


def test_header_values_given_as_bytearray_are_judged_natively_as_their_bytes(workload_ruleset: Ruleset) -> None:
    """A client may hand header values as bytearray: the core copies them as it copies bytes, same results."""
    samples = [s for s in workload.samples(400, seed=9) if s.record["headers"].get("ce_type")]
    assert len(samples) > 50  # binary-mode records: their CloudEvent is in the headers
    judge = NativeJudge(workload_ruleset)
    envelopes = [envelope_from_record(sample.record) for sample in samples]
    position = judge.endpoint_position(envelopes[0].endpoint)
    assert position is not None
    as_bytes = [kafka_record(envelope) for envelope in envelopes]
    as_bytearray = [(*record[:3], [(name, bytearray(value)) for name, value in record[3]], *record[4:])
                    for record in as_bytes]
    expected = judge.judge_records(position, as_bytes)
    assert None not in expected
    assert judge.judge_records(position, as_bytearray) == expected
