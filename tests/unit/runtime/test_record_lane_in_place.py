"""A Kafka to Kafka route whose source reads in place (protocol_adapters/kafka/in_place.py, record_lane.py): the
real KafkaSource's tracking of batches handed out whole, fed from record batches as a broker sends them (plain
ones, a compressed one aiokafka decodes), with a stand-in sink. Every record lands where the record path would
send it, byte for byte (a dead letter with the `xgate-*` headers the general path writes for it), and the
commit point passes every batch once all of it landed, also when a destination refused some records of a batch
(which is then settled record by record)."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from pathlib import Path
from typing import Any, Self

import pytest
from aiokafka.consumer import fetcher  # type: ignore[import-untyped]
from aiokafka.structs import TopicPartition  # type: ignore[import-untyped]

from gateway.compiler.core import native_available
from gateway.errors import AdapterError, adapter_failure
from gateway.routes.resolve import Route
from gateway.runtime.dead_letter_ring import DeadLetters
from gateway.runtime.engine import Engine
from gateway.runtime.remap import dead_letter_headers
from protocol_adapters.base import EndpointConfig
from protocol_adapters.kafka import in_place
from protocol_adapters.kafka.mapping import (
    OutgoingRecord,
    forwarded,
    forwarded_record,
    outgoing_record,
    record_envelope,
)
from protocol_adapters.kafka.options import source_options
from protocol_adapters.kafka.source import KafkaSource
from tests.unit.adapters.test_kafka_in_place import batch, random_record
from tests.unit.runtime.test_pipeline import reference_ruleset, run_until

pytestmark = pytest.mark.skipif(not native_available(), reason="the native core is not built (make install)")


def fetches(seed: int) -> tuple[dict[Any, list[Any]], list[Any]]:
    """Two partitions' fetched items as the marked consumer hands them out, and every record as aiokafka reads it."""
    rng = random.Random(seed)
    in_place.install()
    handed: dict[Any, list[Any]] = {}
    records: list[Any] = []
    for partition in (0, 1):
        tp = TopicPartition("in", partition)
        parts, offset = [], 0
        for codec in (0, 0, partition, 0):  # partition 1's third batch gzip: aiokafka's to decode
            count = rng.randrange(1, 30)
            parts.append(batch([random_record(rng, offset + n) for n in range(count)], offset, codec=codec))
            offset += count
        data = b"".join(parts)
        reader = fetcher.PartitionRecords(tp, fetcher.MemoryRecords(data), None, 0, None, in_place.read_in_place,
                                          True, fetcher.READ_UNCOMMITTED)
        handed[tp] = list(reader)
        plain = fetcher.PartitionRecords(tp, fetcher.MemoryRecords(data), None, 0, None, None, True,
                                         fetcher.READ_UNCOMMITTED)
        records += list(plain)
    return handed, records


class Source(KafkaSource):
    """The real source, its fetches given instead of read from a broker (no consumer: nothing is committed)."""

    def __init__(self, handed: dict[Any, list[Any]]) -> None:
        super().__init__(source_options(EndpointConfig("in", "KAFKA", ("127.0.0.1:9",), {"topic": "in"})))
        self.handed = handed
        self.expanded = 0  # batches read in place that were then settled record by record

    def expand(self, handles: list[Any]) -> list[Any]:
        self.expanded += sum(1 for handle in handles if isinstance(handle[1], in_place.InPlaceBatch))
        return super().expand(handles)

    async def __aenter__(self) -> Self:
        assert self.in_place, "the lane asks for batches read in place"
        if self.handed:
            self._take(self.handed)
            self.handed = {}
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


class Sink:
    """Keeps each record as it would be produced, whether handed a list or the core's Fetched; the first `refuse`
    records of `send_records` fail once (retriable), and `send` (the pipeline's retry) takes them."""

    def __init__(self, refuse: int = 0) -> None:
        self.records: list[OutgoingRecord] = []
        self.refuse = refuse
        self.fetched = 0

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    def takes_fetched(self) -> bool:
        return True

    async def send_records(self, records: Any, added: list[Any] | None = None) -> list[AdapterError | None]:
        if isinstance(records, list):
            listed = [forwarded_record(r, added=(added[i] if added else None) or ()) for i, r in enumerate(records)]
        else:
            self.fetched += len(records)
            listed = []
            for index in range(len(records)):
                _, stamp, _, key, value, headers = records.record(index)
                listed.append(forwarded(key, value, headers, stamp, added=(added[index] if added else None) or ()))
        failures: list[AdapterError | None] = []
        for out in listed:
            if self.refuse:
                self.refuse -= 1
                failures.append(adapter_failure("broker away", retriable=True))
            else:
                self.records.append(out)
                failures.append(None)
        return failures

    async def send_many(self, envelopes: list[Any]) -> list[AdapterError | None]:
        self.records += [outgoing_record(e) for e in envelopes]
        return [None] * len(envelopes)

    async def send(self, envelope: Any) -> None:
        self.records.append(outgoing_record(envelope))


def engine_for(tmp_path: Path, source: Source, refuse: int,
               refuse_dead_letters: int = 0) -> tuple[Engine, dict[str, Sink]]:
    ruleset = reference_ruleset(tmp_path)
    sinks = {"valid": Sink(refuse), "dlq": Sink(refuse_dead_letters), "unknown": Sink()}

    def config(name: str) -> EndpointConfig:
        return EndpointConfig(name, "KAFKA", ("127.0.0.1:9",), {"topic": name})

    # a window of 30 messages: most of a route's batches whole batches read in place, one of them mixed with
    # the records aiokafka decoded (all then settled record by record)
    route = Route(config("in"), config("valid"), config("dlq"), config("unknown"), "forward", 30)
    engine = Engine([route], ruleset, create_source=lambda _: source, create_sink=lambda c: sinks[c.endpoint_id])
    return engine, sinks


def settled(source: Source, records: list[Any]) -> bool:
    """Every partition's commit point past its last record, nothing open."""
    last: dict[Any, int] = {}
    for record in records:
        last[TopicPartition(record.topic, record.partition)] = record.offset
    return all((part := source._parts.get(tp)) is not None and part.commit_to == offset + 1 and part.messages == 0
               for tp, offset in last.items())


def run(tmp_path: Path, seed: int, refuse: int, refuse_dead_letters: int = 0,
        console: DeadLetters | None = None) -> tuple[Source, dict[str, Sink], Engine, list[Any]]:
    handed, records = fetches(seed)
    source = Source(handed)
    engine, sinks = engine_for(tmp_path, source, refuse, refuse_dead_letters)
    engine.ref.dead_letters = console
    run_until(engine, lambda: settled(source, records))
    return source, sinks, engine, records


@pytest.mark.parametrize(("seed", "refuse", "refuse_dead_letters"), [(1, 0, 0), (2, 0, 0), (3, 7, 0), (4, 40, 0),
                                                                   (6, 0, 5)])
def test_every_record_lands_once_and_the_commit_point_passes_every_batch(tmp_path: Path, seed: int, refuse: int,
                                                                         refuse_dead_letters: int) -> None:
    source, sinks, engine, records = run(tmp_path, seed, refuse, refuse_dead_letters)
    landed = [out for sink in sinks.values() for out in sink.records]
    assert len(landed) == len(records)

    # what the record path makes of each record: forwarded as it came (a dead letter with its headers after)
    def bare(out: OutgoingRecord) -> tuple[Any, ...]:
        kept = [pair for pair in out.headers if not pair[0].startswith("xgate-")]
        return (out.key, out.value, tuple(kept), out.timestamp_ms)
    assert Counter(bare(out) for out in landed) == Counter(bare(forwarded_record(r)) for r in records)
    assert all(dict(out.headers).get("xgate-verdict") == b"nonconformant"
               for out in sinks["dlq"].records + sinks["unknown"].records)
    assert not any(name.startswith("xgate-") for out in sinks["valid"].records for name, _ in out.headers)
    assert sinks["valid"].fetched > 0, "conformant records went as the core read them"
    assert sinks["dlq"].fetched > 0 and sinks["unknown"].fetched > 0, \
        "so did the dead letters, with the headers the lane wrote"
    # each dead letter's xgate-* headers as the general path writes them from the record's Envelope and Verdict
    ruleset = reference_ruleset(tmp_path / "reference")
    expected: Counter[tuple[Any, ...]] = Counter()
    rules: Counter[str] = Counter()
    for record in records:
        envelope = record_envelope(record, "in")
        verdict = ruleset.classify(envelope)
        if not verdict.conformant:
            headers = tuple((name, text.encode()) for name, text in dead_letter_headers(envelope, verdict, "in"))
            expected[(bare(forwarded_record(record)), headers)] += 1
            rules.update(violation.rule.value for violation in verdict.violations)
    dead_letters = sinks["dlq"].records + sinks["unknown"].records  # nonconformant, unmatched
    assert Counter((bare(out), tuple(pair for pair in out.headers if pair[0].startswith("xgate-")))
                   for out in dead_letters) == expected
    stats = engine.stats.route("in")
    assert sum(stats.verdicts.values()) == len(records)
    assert len(sinks["valid"].records) == stats.verdicts.get("conformant", 0)
    assert len(sinks["dlq"].records) == stats.verdicts.get("nonconformant", 0)
    assert len(sinks["unknown"].records) == stats.verdicts.get("unmatched", 0)
    assert Counter(stats.rules) == rules
    # the batch mixed with aiokafka's records was settled record by record; with refusals, those that had them too
    assert source.expanded > 0
    if refuse:
        assert source.expanded > run(tmp_path / "again", seed, 0)[0].expanded


def test_the_console_keeps_the_latest_dead_letters_as_the_general_path_would(tmp_path: Path) -> None:
    ring = DeadLetters(per_route=4, max_bytes=1 << 20, interval=0.0)
    _, sinks, _, records = run(tmp_path, 7, 0, console=ring)
    dead_letters = sinks["dlq"].records + sinks["unknown"].records
    assert sinks["dlq"].fetched > 0, "the dead letters still went as read in place"
    assert ring.kept_total == len(dead_letters)
    kept = ring.latest("in")
    assert 0 < len(kept) <= 4
    ruleset = reference_ruleset(tmp_path / "reference")
    by_position = {(r.topic, r.partition, r.offset): r for r in records}
    for letter in kept:
        envelope = letter.envelope
        record = by_position[(envelope.position["topic"], envelope.position["partition"], envelope.position["offset"])]
        assert envelope == record_envelope(record, "in", envelope.ack)
        assert letter.verdict == ruleset.classify(envelope) and not letter.verdict.conformant


def test_an_expanded_batch_commits_only_past_what_was_acknowledged() -> None:
    handed, _ = fetches(5)
    tp = TopicPartition("in", 0)
    source = Source({tp: handed[tp][:1]})  # one plain batch
    assert source.read_in_place()
    source._take(source.handed)
    [(_, item)] = source.take_ready_handles(1000)
    assert isinstance(item, in_place.InPlaceBatch) and source._parts[tp].messages == item.count
    records = source.expand([(tp, item)])
    assert [r[1].offset for r in records] == list(range(item.first, item.offset + 1))
    # its last record acknowledged, its first not: the commit point stays before the first
    asyncio.run(source.ack_many([source.envelope(records[-1])]))
    assert source._parts[tp].commit_to is None and source._parts[tp].pending(item.first)
    asyncio.run(source.ack_many([source.envelope(handle) for handle in records[:-1]]))
    assert source._parts[tp].commit_to == item.offset + 1 and source._parts[tp].messages == 0
