"""The last messages each endpoint received, kept in memory for a registry write's dry run to judge.

Bounded twice per endpoint: about `RECENT_MESSAGES` messages and `RECENT_BYTES` of payload, the oldest batches
going first (whole batches: the bounds hold within one batch). A Kafka to Kafka route hands its records as they
came (record_lane.py), with the function that makes an Envelope of one, so nothing is built for a message
unless a dry run asks; other routes hand the Envelopes they made anyway. Keeping a batch is one append and a
sum of its payload sizes, so the hot path pays a few tens of nanoseconds a message.
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
    __slots__ = ("bytes", "envelope_of", "items")

    def __init__(self, envelope_of: Callable[[Any], Envelope] | None, items: Sequence[Any], size: int) -> None:
        self.envelope_of, self.items, self.bytes = envelope_of, items, size


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

    def _add(self, endpoint: str, batch: _Batch) -> None:
        with self._lock:
            kept = self._endpoints.get(endpoint)
            if kept is None:
                kept = self._endpoints[endpoint] = _Endpoint()
            kept.batches.append(batch)
            kept.messages += len(batch.items)
            kept.bytes += batch.bytes
            while len(kept.batches) > 1 and (kept.messages - len(kept.batches[0].items) >= self.messages
                                             or kept.bytes > self.byte_cap):
                oldest = kept.batches.popleft()
                kept.messages -= len(oldest.items)
                kept.bytes -= oldest.bytes

    def sample(self) -> dict[str, list[Envelope]]:
        """Every endpoint's kept messages, oldest first, as Envelopes (the last `messages` of them at most)."""
        with self._lock:
            copied = {endpoint: list(kept.batches) for endpoint, kept in self._endpoints.items()}
        out: dict[str, list[Envelope]] = {}
        for endpoint, batches in copied.items():
            envelopes = [batch.envelope_of(item) if batch.envelope_of is not None else item
                         for batch in batches for item in batch.items]
            out[endpoint] = envelopes[-self.messages:]
        return out
