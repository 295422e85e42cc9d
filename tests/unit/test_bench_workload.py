"""The benchmark workload means what it says: its proportions hold, and xgate and the naive baseline agree on it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bench import workload
from bench.naive import NaiveValidator
from gateway.check import judge_lines
from gateway.compiler import Ruleset, compile_registry
from gateway.errors import Severity
from gateway.loader import load_snapshot

COUNT = 4000
SEED = 3


@pytest.fixture(scope="module")
def samples() -> list[workload.Sample]:
    return workload.samples(COUNT, SEED)


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return workload.registry_document(SEED)


@pytest.fixture(scope="module")
def ruleset(tmp_path_factory: pytest.TempPathFactory, document: dict[str, Any]) -> Ruleset:
    path = tmp_path_factory.mktemp("workload") / "workload.xreg.json"
    path.write_text(json.dumps(document))
    snapshot = load_snapshot([path])
    assert not snapshot.errors
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    assert not [d for d in ruleset.diagnostics if d.severity is Severity.ERROR]
    return ruleset


@pytest.fixture(scope="module")
def verdicts(ruleset: Ruleset, samples: list[workload.Sample]) -> list[bool]:
    return [v.conformant for v in judge_lines(ruleset, (json.dumps(s.record) for s in samples))]


def test_deterministic_for_a_seed(tmp_path: Path) -> None:
    assert workload.messages(300, SEED) == workload.messages(300, SEED)
    assert workload.messages(300, SEED) != workload.messages(300, SEED + 1)
    assert workload.registry_document(SEED) == workload.registry_document(SEED)
    first = workload.write(tmp_path / "a", 200, SEED)
    second = workload.write(tmp_path / "b", 200, SEED)
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    assert [p.name for p in first] == ["workload.xreg.json", "messages.jsonl"]
    assert len(first[1].read_text().splitlines()) == 200


def test_fifty_definitions_in_five_groups_with_one_shared_type_each(document: dict[str, Any]) -> None:
    groups = document["messagegroups"]
    assert len(groups) == 5
    for group in groups.values():
        messages = group["messages"]
        assert len(messages) == 10
        by_type = Counter(m["envelopemetadata"]["type"]["value"] for m in messages.values())
        shared = [t for t, n in by_type.items() if n == 2]
        assert len(shared) == 1 and len(by_type) == 9
        sources = {m["envelopemetadata"]["source"]["value"] for m in messages.values()
                   if m["envelopemetadata"]["type"]["value"] == shared[0]}
        assert len(sources) == 2
        for message in messages.values():
            assert len(message["envelopemetadata"]) >= 10
    endpoint = document["endpoints"][workload.ENDPOINT]
    assert endpoint["usage"] == ["consumer"] and len(endpoint["messagegroups"]) == 5


def test_proportions(samples: list[workload.Sample]) -> None:
    kinds = Counter(s.kind for s in samples)
    assert abs(kinds[workload.OK] / COUNT - 0.80) < 0.02
    assert 0.002 < kinds[workload.MALFORMED] / COUNT < 0.01
    assert abs(sum(s.structured for s in samples) / COUNT - 0.70) < 0.02
    defects = [k for k in kinds if k in workload.DEFECTS]
    assert len(defects) == len(workload.DEFECTS) >= 15
    assert all(s.record["protocol"] == "KAFKA" and s.record["endpoint"] == workload.ENDPOINT for s in samples)
    assert all(("ce_type" in s.record["headers"]) != s.structured for s in samples)


def test_zipf_skew_and_size(samples: list[workload.Sample]) -> None:
    popularity = Counter(s.messageid for s in samples).most_common()
    assert popularity[0][1] > 10 * popularity[-1][1]
    ok = [workload.wire_size(s.record) for s in samples if s.kind == workload.OK]
    assert 850 < sum(ok) / len(ok) < 1150


def test_every_defect_is_nonconformant_and_every_ok_conformant(samples: list[workload.Sample],
                                                                verdicts: list[bool]) -> None:
    wrong = Counter(s.kind for s, conformant in zip(samples, verdicts, strict=True)
                    if conformant != (s.kind == workload.OK))
    assert not wrong
    assert abs(sum(verdicts) / COUNT - 0.80) < 0.02


def test_naive_baseline_agrees_with_xgate(document: dict[str, Any], samples: list[workload.Sample],
                                          verdicts: list[bool]) -> None:
    # the cheaper payload form keeps the test fast; both forms judge the same (bench/naive.py)
    naive = NaiveValidator(document, recheck_schemas=False)
    picked = samples[:1500]
    agree = sum(naive.judge(s.record) == conformant for s, conformant in zip(picked, verdicts, strict=False))
    assert agree / len(picked) >= 0.99


def test_naive_literal_validate_agrees_on_every_kind(document: dict[str, Any], samples: list[workload.Sample],
                                                      verdicts: list[bool]) -> None:
    naive = NaiveValidator(document)
    first: dict[str, int] = {}
    for index, s in enumerate(samples):
        first.setdefault(s.kind, index)
    assert set(first) == set(workload.KINDS)
    assert all(naive.judge(samples[i].record) == verdicts[i] for i in first.values())


def test_afternoon_script_gives_xgate_verdict_on_every_message(document: dict[str, Any], ruleset: Ruleset,
                                                                samples: list[workload.Sample]) -> None:
    # the reference baseline must do the same job: outcome and message id on every message, every kind
    from bench.afternoon import AfternoonValidator
    from bench.hotpath import split
    from protocol_adapters.kafka.mapping import kafka_envelope

    afternoon = AfternoonValidator(document)
    kinds: Counter[str] = Counter()
    for sample, (topic, partition, key, value, headers, timestamp) in zip(samples, split(samples)["mix"],
                                                                         strict=True):
        verdict = ruleset.classify(kafka_envelope(topic, partition, 0, key, value, headers, timestamp,
                                                  workload.ENDPOINT))
        assert afternoon.judge(headers, value) == (verdict.messageid if verdict.conformant else None), sample.kind
        kinds[sample.kind] += 1
    assert set(kinds) == set(workload.KINDS)
