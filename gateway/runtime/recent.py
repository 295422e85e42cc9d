"""The last messages each endpoint received, kept in memory for a registry write's dry run to judge.

Bounded twice per endpoint: at most `RECENT_MESSAGES` messages and `RECENT_BYTES` of payload (the oldest go
first). A Kafka to Kafka route hands its records as they came (record_lane.py), with the function that makes
an Envelope of one, so nothing is built for a message unless a dry run asks; other routes hand the Envelopes
they made anyway. Keeping a batch costs a deque extend and a size sum: a fraction of a microsecond a message.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterable
from typing import Any

from gateway.envelope import Envelope

RECENT_MESSAGES = 10_000
RECENT_BYTES = 16 * 1024 * 1024
OVERHEAD_BYTES = 256  # headers and bookkeeping a message costs beyond its payload, roughly


class _Endpoint:
    __slots__ = ("bytes", "items", "sizes")

    def __init__(self) -> None:
        self.items: collections.deque[tuple[Callable[[Any], Envelope] | None, Any]] = collections.deque()
        self.sizes: collections.deque[int] = collections.deque()
        self.bytes = 0


class RecentTraffic:
    def __init__(self, messages: int = RECENT_MESSAGES, byte_cap: int = RECENT_BYTES) -> None:
        self.messages, self.byte_cap = messages, byte_cap
        self._endpoints: dict[str, _Endpoint] = {}
        self._lock = threading.Lock()  # a dry run copies while the routes add (the write runs in a thread)

    def add_envelopes(self, endpoint: str, envelopes: Iterable[Envelope]) -> None:
        batch = list(envelopes)
        self._add(endpoint, [(None, e) for e in batch], [len(e.body or b"") + OVERHEAD_BYTES for e in batch])

    def add_records(self, endpoint: str, envelope_of: Callable[[Any], Envelope], handles: list[Any]) -> None:
        """Kafka (TopicPartition, ConsumerRecord) handles, made Envelopes by `envelope_of` only when sampled."""
        self._add(endpoint, [(envelope_of, h) for h in handles],
                  [len(h[1].value or b"") + OVERHEAD_BYTES for h in handles])

    def _add(self, endpoint: str, items: list[Any], sizes: list[int]) -> None:
        with self._lock:
            kept = self._endpoints.get(endpoint)
            if kept is None:
                kept = self._endpoints[endpoint] = _Endpoint()
            kept.items.extend(items)
            kept.sizes.extend(sizes)
            kept.bytes += sum(sizes)
            while kept.items and (len(kept.items) > self.messages or kept.bytes > self.byte_cap):
                kept.items.popleft()
                kept.bytes -= kept.sizes.popleft()

    def sample(self) -> dict[str, list[Envelope]]:
        """Every endpoint's kept messages, oldest first, as Envelopes."""
        with self._lock:
            copied = {endpoint: list(kept.items) for endpoint, kept in self._endpoints.items()}
        return {endpoint: [make(item) if make is not None else item for make, item in items]
                for endpoint, items in copied.items()}
