"""The recent traffic a dry run judges: bounded per endpoint by count and by bytes, the oldest batches dropped
first, Kafka records made Envelopes only when sampled."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from gateway.envelope import Envelope
from gateway.runtime.recent import OVERHEAD_BYTES, RecentTraffic


def _envelope(n: int, size: int = 10) -> Envelope:
    return Envelope("HTTP", {"n": n}, b"x" * size)


def test_the_oldest_go_first_past_the_count() -> None:
    recent = RecentTraffic(messages=5)
    recent.add_envelopes("a", [_envelope(n) for n in range(8)])
    recent.add_envelopes("b", [_envelope(99)])
    sample = recent.sample()
    assert [e.fields["n"] for e in sample["a"]] == [3, 4, 5, 6, 7] and len(sample["b"]) == 1


def test_bytes_bound_the_store_too_a_batch_at_a_time() -> None:
    recent = RecentTraffic(messages=1000, byte_cap=3 * (1000 + OVERHEAD_BYTES))
    for n in range(10):
        recent.add_envelopes("a", [_envelope(n, 1000)])
    assert [e.fields["n"] for e in recent.sample()["a"]] == [7, 8, 9]
    recent.add_envelopes("a", [_envelope(n, 1000) for n in range(10, 15)])  # one batch past the cap alone
    assert [e.fields["n"] for e in recent.sample()["a"]] == [10, 11, 12, 13, 14]  # the newest batch stays whole


def test_records_become_envelopes_only_when_sampled() -> None:
    made: list[Any] = []

    def envelope_of(handle: Any) -> Envelope:
        made.append(handle)
        return _envelope(handle[1].offset)

    recent = RecentTraffic()
    handles = [("tp", SimpleNamespace(offset=n, value=b"v")) for n in range(3)]
    recent.add_records("k", envelope_of, handles)
    assert made == []
    assert [e.fields["n"] for e in recent.sample()["k"]] == [0, 1, 2] and len(made) == 3


def test_batches_read_in_place_count_their_messages_and_become_envelopes_when_sampled() -> None:
    made: list[Any] = []

    def envelopes_of(handle: Any) -> list[Envelope]:
        made.append(handle)
        return [_envelope(handle[1] * 10 + n) for n in range(3)]

    recent = RecentTraffic(messages=7)
    recent.add_batches("k", envelopes_of, [("tp", 1), ("tp", 2)], 6, 100)
    recent.add_records("k", lambda handle: _envelope(handle[1].offset), [("tp", SimpleNamespace(offset=5, value=b""))])
    assert made == []
    # 7 messages kept: the batch of two handles (6 messages) and the record; the last 7 of them sampled
    assert [e.fields["n"] for e in recent.sample()["k"]] == [10, 11, 12, 20, 21, 22, 5] and len(made) == 2
    recent.add_batches("k", envelopes_of, [("tp", 3)], 3, 100)  # 10 kept: without the oldest batch 4, too few
    assert [e.fields["n"] for e in recent.sample()["k"]] == [20, 21, 22, 5, 30, 31, 32]
    recent.add_batches("k", envelopes_of, [("tp", 4)], 3, 100)  # 13: the oldest batch (6) goes
    assert [e.fields["n"] for e in recent.sample()["k"]] == [5, 30, 31, 32, 40, 41, 42]
