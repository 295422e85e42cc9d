"""The native judging core (native/, the `xgate_core` extension) over a compiled Ruleset.

`NativeJudge` lowers the ruleset once (lower.py) and judges batches: Kafka records go to the core in one
call each batch, which returns every verdict field (validation rule 6), so Python judges none of them
again. What the core does not take stays with the Python judge (`Ruleset.classify`), each message once:
other protocols, and messages whose candidates include a definition the plan could not lower (lower.py says
which). Without the extension installed (a checkout whose `make install` did not build it), every message
goes to the Python judge and `NativeJudge.available` says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from gateway.compiler.lower import LoweredPlan, lower_ruleset
from gateway.compiler.ruleset import Ruleset
from gateway.envelope import Envelope
from gateway.verdict import Outcome, Rule, Verdict, Violation

try:  # the extension is built by `make install`; a checkout without it still judges, in Python
    import xgate_core
except ImportError:  # pragma: no cover - exercised where the extension is absent
    xgate_core = None  # type: ignore[assignment]

__all__ = ["RULES", "NativeJudge", "kafka_record", "native_available", "xgate_core"]

# native/src/verdict.rs numbers the rules in gateway/verdict.py's order
RULES = tuple(Rule)
KAFKA = "KAFKA"
_new = tuple.__new__


def native_available() -> bool:
    return xgate_core is not None


class NativeJudge:
    """One ruleset's native core; `judge` gives the verdicts `Ruleset.classify` would give."""

    __slots__ = ("available", "conformant", "core", "ids", "plan", "positions", "ruleset")

    def __init__(self, ruleset: Ruleset) -> None:
        self.ruleset = ruleset
        self.available = xgate_core is not None
        self.plan: LoweredPlan | None = None
        self.core: Any = None
        self.positions: dict[str, int] = {}
        self.ids: list[tuple[str, str]] = []
        self.conformant: list[Verdict] = []
        # the Python judge's accepting pass, built now for the endpoints it judges (all of them without the
        # core, else all but Kafka ones; ruleset.py builds it on first use otherwise): made at start-up, it is
        # frozen with the rest of the compiled registry (gateway/runtime/heap.py)
        for rules in ruleset.endpoints.values():
            if rules.protocol is not None and (not self.available or rules.protocol != KAFKA):
                rules.index_for(rules.protocol).acceptor  # noqa: B018 - built for its effect
        if not self.available:
            return
        self.plan = lower_ruleset(ruleset)
        self.core = xgate_core.Core(self.plan.text, self.plan.text_of, self.plan.constants)
        self.positions = {endpoint_id: self.core.endpoint(endpoint_id) for endpoint_id in ruleset.endpoints}
        self.ids = [(d.groupid, d.messageid) for d in self.plan.definitions]
        # one conformant Verdict per definition, shared by every message that conforms to it
        self.conformant = [Verdict(Outcome.CONFORMANT, group, message) for group, message in self.ids]

    def endpoint_position(self, endpoint: str | None) -> int | None:
        """The core's number for the endpoint a message names (as Ruleset.classify finds it), or None."""
        if not self.available:
            return None
        if endpoint is None:
            rules = self.ruleset.default_endpoint()
            return self.positions.get(rules.endpoint_id) if rules is not None else None
        return self.positions.get(endpoint)

    def judge_records(self, position: int, records: Sequence[Any]) -> list[Any]:
        """The core's raw results for Kafka records of one endpoint (lib.rs says their shape)."""
        return self.core.judge_kafka(position, records)  # type: ignore[no-any-return]

    def judge_batches(self, position: int, topic: str, partition: int,
                      data: bytes) -> tuple[int, list[tuple[int, Any]]] | None:
        """Kafka record batches (a produce request's partition data) read and judged in the core: the record
        count and (index, raw result) of each record that did not conform; None when the core does not read
        such data (compressed, not v2, corrupt) and the caller must decode it (lib.rs `judge_batches`)."""
        return self.core.judge_batches(position, topic, partition, data)  # type: ignore[no-any-return]

    def judge_fetched(self, position: int, batches: list[tuple[str, int, bytes, int, int]],
                      reasons: Any = None) -> tuple[Any, list[Any], list[Any] | None] | None:
        """A Kafka source's fetched batches read in place, each `(topic, partition, data, start, end)`: the records
        as the core read them (a `Fetched`, native/src/fetched.rs), the raw result of each and, given a
        `reason_writer`, each nonconformant record's `xgate-*` headers as remap.reason_headers writes them (None
        for the others and where reason_headers must write them); None when a batch does not read (the caller
        reads it with its Kafka client)."""
        return self.core.judge_fetched(position, batches, reasons)  # type: ignore[no-any-return]

    def violation_tables(self) -> tuple[list[str], list[str | None]]:
        """What the core repeats when it writes violations as orjson writes `Violation.as_dict()`
        (native/src/reasons.rs): each rule's name as JSON, by number, and each plan constant as JSON (None for
        one orjson does not write: an integer past 64 bits)."""
        assert self.plan is not None
        constants: list[str | None] = []
        for constant in self.plan.constants:
            try:
                constants.append(orjson.dumps(constant, default=str).decode())
            except TypeError:
                constants.append(None)
        return [orjson.dumps(rule.value).decode() for rule in RULES], constants

    def reason_writer(self, source_endpoint: str) -> Any:
        """The core's writer of the `xgate-*` headers of dead letters read on `source_endpoint` (`judge_fetched`)."""
        rule_names, constants = self.violation_tables()
        return xgate_core.ReasonWriter(rule_names, constants, self.ids, Outcome.NONCONFORMANT.value, source_endpoint)

    def verdict(self, result: Any, envelope: Envelope | None = None) -> Verdict | None:
        """A raw result as a Verdict; None for a deferred one when no envelope is given to judge in Python."""
        if result.__class__ is int:
            return self.conformant[result]
        if result is None:
            return self.ruleset.classify(envelope) if envelope is not None else None
        index, violations = result
        group, message = self.ids[index] if index is not None else (None, None)
        # tuple.__new__ straight: a NamedTuple's own __new__ is a Python function around that same call
        return _new(Verdict, (Outcome.NONCONFORMANT, group, message,
                              tuple([_new(Violation, (path, RULES[rule], expected, actual, text))
                                     for path, rule, expected, actual, text in violations]), None))

    def violation_dicts(self, result: tuple[int | None, list[Any]]) -> list[dict[str, Any]]:
        """A nonconformant raw result's violations as `Violation.as_dict` gives them, with no Verdict made (the
        record lane's dead-letter headers): Violation.as_dict stays the one author of that shape."""
        return [_new(Violation, (path, RULES[rule], expected, actual, text)).as_dict()
                for path, rule, expected, actual, text in result[1]]

    def results(self, positions: Sequence[int | None], records: Sequence[Any]) -> list[Any]:
        """The core's raw results for records, each judged on the endpoint at its position, the records of one
        endpoint in one call; None where the position is None (for the Python judge to decide)."""
        results: list[Any] = [None] * len(records)
        batches: dict[int, list[int]] = {}
        for number, position in enumerate(positions):
            if position is not None:
                batches.setdefault(position, []).append(number)
        for position, numbers in batches.items():
            for number, result in zip(numbers, self.core.judge_kafka(position, [records[n] for n in numbers])):
                results[number] = result
        return results

    def judge(self, envelopes: Sequence[Envelope]) -> list[Verdict]:
        """Verdicts in order: the Kafka messages of each endpoint in one call of the core, the rest in Python."""
        positions = [self.endpoint_position(e.endpoint) if e.protocol == KAFKA else None for e in envelopes]
        records = [None if p is None else kafka_record(e) for e, p in zip(envelopes, positions)]
        # a None result (not Kafka, or left to Python by the core) is classified by `verdict`
        return [self.verdict(result, envelope)  # type: ignore[misc]  # given an envelope: a Verdict
                for result, envelope in zip(self.results(positions, records), envelopes)]


def kafka_record(envelope: Envelope) -> tuple[Any, ...]:
    """An Envelope's Kafka fields as the core reads a record."""
    fields = envelope.fields
    return (fields.get("topic"), fields.get("partition"), fields.get("key"), fields.get("headers"), envelope.body,
            fields.get("timestamp"))
