"""Kafka to Kafka batches as records (gateway/runtime/record_lane.py), with stand-ins for the Kafka source and
sink that keep what they were handed: conformant records reach their destination as the consumer gave them,
the rest as the general path makes them, and every record is acknowledged once, after it landed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Self

import pytest

from gateway.compiler.core import native_available
from gateway.envelope import Envelope
from gateway.errors import AdapterError, adapter_failure
from gateway.routes.resolve import Route
from gateway.runtime.engine import Engine
from gateway.runtime.pipeline import BATCH_MAX
from gateway.runtime.remap import outgoing
from protocol_adapters.base import EndpointConfig
from protocol_adapters.kafka.mapping import forwarded_record, outgoing_record, record_envelope
from tests.unit.runtime.test_pipeline import reference_ruleset, run_until

pytestmark = pytest.mark.skipif(not native_available(), reason="the native core is not built (make install)")


def record(kind: str, number: int) -> Any:
    headers = (("ce_specversion", b"1.0"), ("ce_id", str(number).encode()), ("ce_source", b"/s"),
               ("ce_type", b"com.example.reading" if kind != "unknown" else b"com.example.other"),
               ("content-type", b"application/json"), ("trace", None))
    body = {"v": number} if kind != "invalid" else {"v": "not a number"}
    return SimpleNamespace(topic="in", partition=number % 2, offset=number, key=f"k{number}".encode(),
                           value=json.dumps(body).encode(), headers=headers, timestamp=1_700_000_000_000 + number)


class Source:
    """Hands out (partition, record) handles as a KafkaSource does; keeps what was acknowledged or released."""

    forwards_records = True

    def __init__(self, records: list[Any]) -> None:
        self.options = SimpleNamespace(endpoint_id="in")
        self.ready = [(r.partition, r) for r in records]
        self.acked: list[int] = []
        self.released: list[int] = []
        self.stopping = asyncio.Event()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def handles(self) -> Any:
        while self.ready:
            yield self.ready.pop(0)
        await self.stopping.wait()

    def take_ready_handles(self, limit: int) -> list[Any]:
        taken, self.ready = self.ready[:limit], self.ready[limit:]
        return taken

    def envelope(self, handle: Any) -> Envelope:
        return record_envelope(handle[1], "in", handle)

    async def ack_handles(self, handles: list[Any]) -> None:
        self.acked += [h[1].offset for h in handles]

    async def ack(self, envelope: Envelope, delivery: Any = None) -> None:
        self.acked.append(envelope.ack[1].offset)

    async def nack(self, envelope: Envelope) -> None:
        await self.nack_handle(envelope.ack)

    async def nack_handle(self, handle: Any) -> None:
        self.released.append(handle[1].offset)

    async def stop(self) -> None:
        self.stopping.set()


class Sink:
    """Keeps each record as it would be produced; the first `refuse` records handed over by `send_records` fail
    once (retriable), and `send` (the pipeline's retry) then takes them."""

    def __init__(self, refuse: int = 0) -> None:
        self.records: list[Any] = []
        self.by_records = 0
        self.refuse = refuse

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def send_records(self, records: list[Any],
                           added: list[list[tuple[str, str]] | None] | None = None) -> list[AdapterError | None]:
        failures: list[AdapterError | None] = []
        for r, extra in zip(records, added or [None] * len(records), strict=True):
            if self.refuse:
                self.refuse -= 1
                failures.append(adapter_failure("broker away", retriable=True))
            else:
                self.records.append(forwarded_record(r, added=extra or ()))
                self.by_records += 1
                failures.append(None)
        return failures

    async def send_many(self, envelopes: list[Envelope]) -> list[AdapterError | None]:
        self.records += [outgoing_record(e) for e in envelopes]
        return [None] * len(envelopes)

    async def send(self, envelope: Envelope) -> None:
        self.records.append(outgoing_record(envelope))


def _engine(tmp_path: Path, records: list[Any], refuse: int = 0,
            inflight: int = 100) -> tuple[Engine, Source, dict[str, Sink]]:
    ruleset = reference_ruleset(tmp_path)
    source = Source(records)
    sinks = {"valid": Sink(refuse), "dlq": Sink(), "unknown": Sink()}

    def config(name: str) -> EndpointConfig:
        return EndpointConfig(name, "KAFKA", ("127.0.0.1:9",), {"topic": name})

    route = Route(config("in"), config("valid"), config("dlq"), config("unknown"), "forward", inflight)
    engine = Engine([route], ruleset, create_source=lambda _: source,
                    create_sink=lambda c: sinks[c.endpoint_id])
    return engine, source, sinks


def test_conformant_records_go_as_they_came_and_the_rest_with_their_reason(tmp_path: Path) -> None:
    records = [record(kind, n) for n, kind in enumerate(["ok", "invalid", "unknown", "ok"] * 30)]
    engine, source, sinks = _engine(tmp_path, records)
    run_until(engine, lambda: len(source.acked) == len(records))
    assert sorted(source.acked) == list(range(len(records))) and source.released == []
    valid, dlq, unknown = sinks["valid"], sinks["dlq"], sinks["unknown"]
    assert (len(valid.records), len(dlq.records), len(unknown.records)) == (60, 30, 30)
    # the lane forwarded every conformant record itself, byte for byte what the envelope path would produce
    assert valid.by_records == 60
    expected = {r.key: outgoing_record(record_envelope(r, "in")) for r in records}
    assert all(out == expected[out.key] for out in valid.records)
    for letter in dlq.records:
        added = dict(letter.headers[len(expected[letter.key].headers):])
        assert added["xgate-verdict"] == b"nonconformant" and json.loads(added["xgate-violations"])[0]["rule"] == "schema"
    # the dead letters went as records too, with their headers added (none was a batch's only letter here)
    assert (dlq.by_records, unknown.by_records) == (30, 30)
    stats = engine.stats.route("in")
    assert stats.verdicts == {"conformant": 60, "nonconformant": 30, "unmatched": 30}
    assert stats.actions == {"forwarded": 60, "deadlettered": 60}


def test_records_the_destination_refused_are_retried_and_acknowledged_once(tmp_path: Path) -> None:
    records = [record("ok", n) for n in range(20)]
    engine, source, sinks = _engine(tmp_path, records, refuse=5)
    run_until(engine, lambda: len(source.acked) == len(records))
    assert sorted(source.acked) == list(range(20)) and source.released == []
    assert len(sinks["valid"].records) == 20 and sinks["valid"].by_records == 15
    assert engine.stats.route("in").actions == {"forwarded": 20}


def test_conformant_records_keep_their_order_across_batches_of_one_and_of_several_destinations(
        tmp_path: Path) -> None:
    # a window wider than a batch: the first BATCH_MAX records (one dead letter among them: two destinations)
    # and the three after them become two batches handed over at once, the second with one destination only
    first = BATCH_MAX
    records = [record("invalid" if n == 5 else "ok", n) for n in range(first + 3)]
    engine, source, sinks = _engine(tmp_path, records, inflight=first * 2)
    run_until(engine, lambda: len(source.acked) == len(records))
    valid = [out.key for out in sinks["valid"].records]
    assert valid == [r.key for r in records if r.offset != 5]
    assert len(sinks["dlq"].records) == 1


def test_forwarded_record_is_the_envelope_paths_record() -> None:
    letter = [("xgate-verdict", "nonconformant"), ("xgate-source-address", "in/ü"), ("d", "from the letter")]
    for r in (record("ok", 1), SimpleNamespace(topic="t", partition=0, offset=0, key=None, value=None,
                                                headers=(), timestamp=-1)):
        for key, headers in ((None, ()), (b"dk", (("d", b"1"), ("trace", b"x")))):
            assert forwarded_record(r, key, headers) == outgoing_record(record_envelope(r, "in"), key, headers)
            # a dead letter: its headers after the record's (a null one kept in place), the sink's defaults last
            assert forwarded_record(r, key, headers, letter) == outgoing_record(
                outgoing(record_envelope(r, "in"), "KAFKA", letter), key, headers)
