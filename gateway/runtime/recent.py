"""The last messages each endpoint received, kept in memory for a registry write's dry run to judge.

Bounded twice per endpoint: about `RECENT_MESSAGES` messages and `RECENT_BYTES` of payload, the oldest batches
going first (whole batches: the bounds hold within one batch). A Kafka to Kafka route hands its records as they
came (record_lane.py), or the batches it read in place, with the function that makes Envelopes of one, so
nothing is built for a message unless a dry run asks; other routes hand the Envelopes they made anyway.
Keeping a batch is one append and a sum of its payload sizes, so the hot path pays a few tens of nanoseconds
a message.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Sequence
from typing import Any

from gateway.envelope import Envelope

RECENT_MESSAGES = 10_000
RECENT_BYTES = 16 * 1024 * 1024
OVERHEAD_BYTES = 256  # headers and bookkeeping a message costs beyond its payload, roughly


class _Batch:
    __slots__ = ("bytes", "count", "envelope_of", "items", "many")

    def __init__(self, envelope_of: Callable[[Any], Any] | None, items: Sequence[Any], size: int,
                 count: int | None = None) -> None:
        self.envelope_of, self.items, self.bytes = envelope_of, items, size
        # items that stand for several messages each: `envelope_of` makes a list of an item
        self.many = count is not None
        self.count = len(items) if count is None else count


class _Endpoint:
    __slots__ = ("batches", "bytes", "messages")

    def __init__(self) -> None:
        self.batches: collections.deque[_Batch] = collections.deque()
        self.messages = 0
        self.bytes = 0


class RecentTraffic:
    def __init__(self, messages: int = RECENT_MESSAGES, byte_cap: int = RECENT_BYTES) -> None:
        self.messages, self.byte_cap = messages, byte_cap
        self._endpoints: dict[str, _Endpoint] = {}
        self._lock = threading.Lock()  # a dry run copies while the routes add (the write runs in a thread)

    def add_envelopes(self, endpoint: str, envelopes: Sequence[Envelope]) -> None:
        size = sum(len(e.body or b"") for e in envelopes) + OVERHEAD_BYTES * len(envelopes)
        self._add(endpoint, _Batch(None, envelopes, size))

    def add_records(self, endpoint: str, envelope_of: Callable[[Any], Envelope], handles: Sequence[Any]) -> None:
        """Kafka (TopicPartition, ConsumerRecord) handles, made Envelopes by `envelope_of` only when sampled."""
        size = sum(len(h[1].value or b"") for h in handles) + OVERHEAD_BYTES * len(handles)
        self._add(endpoint, _Batch(envelope_of, handles, size))

    def add_batches(self, endpoint: str, envelopes_of: Callable[[Any], list[Envelope]], handles: Sequence[Any],
                    count: int, size: int) -> None:
        """Kafka batches read in place (`count` messages, `size` bytes), made Envelopes by `envelopes_of` (a list
        a handle) only when sampled."""
        self._add(endpoint, _Batch(envelopes_of, handles, size, count))

    def _add(self, endpoint: str, batch: _Batch) -> None:
        with self._lock:
            kept = self._endpoints.get(endpoint)
            if kept is None:
                kept = self._endpoints[endpoint] = _Endpoint()
            kept.batches.append(batch)
            kept.messages += batch.count
            kept.bytes += batch.bytes
            while len(kept.batches) > 1 and (kept.messages - kept.batches[0].count >= self.messages
                                             or kept.bytes > self.byte_cap):
                oldest = kept.batches.popleft()
                kept.messages -= oldest.count
                kept.bytes -= oldest.bytes

    def sample(self) -> dict[str, list[Envelope]]:
        """Every endpoint's kept messages, oldest first, as Envelopes (the last `messages` of them at most)."""
        with self._lock:
            copied = {endpoint: list(kept.batches) for endpoint, kept in self._endpoints.items()}
        out: dict[str, list[Envelope]] = {}
        for endpoint, batches in copied.items():
            envelopes: list[Envelope] = []
            for batch in batches:
                if batch.many:
                    for item in batch.items:
                        envelopes += batch.envelope_of(item)  # type: ignore[misc]  # set with `many`
                elif batch.envelope_of is not None:
                    envelopes += [batch.envelope_of(item) for item in batch.items]
                else:
                    envelopes += batch.items
            out[endpoint] = envelopes[-self.messages:]
        return out
