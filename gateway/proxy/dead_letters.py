"""Copies of nonconformant produced records to the route's dead-letter destination, with the `xgate-*` headers
`xgate run` gives a dead letter: under `observe` beside the producer's own records, which go on to their topic
unchanged; under `reject` instead of the refused batch's. The copies are sent in order by one task per proxy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from gateway.proxy.judging import TopicRule
from gateway.proxy.metrics import ProxyMetrics
from gateway.runtime.remap import dead_letter_headers, outgoing
from gateway.verdict import Verdict
from protocol_adapters import registry
from protocol_adapters.base import EndpointConfig
from protocol_adapters.kafka.mapping import kafka_envelope

log = logging.getLogger("xgate.proxy")
QUEUE_LIMIT = 100_000


class DeadLetters:
    def __init__(self, metrics: ProxyMetrics | None = None) -> None:
        self.metrics = metrics
        self._queue: asyncio.Queue[tuple[str, EndpointConfig, Any] | None] = asyncio.Queue()  # bounded by QUEUE_LIMIT in `copy`
        self._sinks: dict[str, Any] = {}
        self._opened = contextlib.AsyncExitStack()
        self.sent = 0
        self.dropped = 0  # copies the full queue or a failed destination could not take (counted, logged)

    def copy(self, rule: TopicRule, pairs: list[tuple[tuple[Any, ...], Verdict]]) -> None:
        for record, verdict in pairs:
            destination = rule.unmatched if verdict.messageid is None else rule.nonconformant
            if destination is None:
                continue
            topic, partition, key, headers, value, timestamp = record
            envelope = kafka_envelope(topic, partition, -1, key, value, headers, timestamp, rule.endpoint_id)
            copy = outgoing(envelope, destination.protocol, dead_letter_headers(envelope, verdict, rule.endpoint_id))
            if self._queue.qsize() >= QUEUE_LIMIT:
                self.dropped += 1
                log.warning("proxy: dead-letter queue full: a copy for %s was not kept", destination.endpoint_id)
                continue
            self._queue.put_nowait((rule.endpoint_id, destination, copy))

    async def run(self) -> None:
        while (item := await self._queue.get()) is not None:
            source, destination, envelope = item
            try:
                sink: Any = self._sinks.get(destination.endpoint_id)
                if sink is None:
                    sink = await self._opened.enter_async_context(registry.create_sink(destination))
                    self._sinks[destination.endpoint_id] = sink
                await sink.send(envelope)
                self.sent += 1
                if self.metrics is not None:
                    self.metrics.dead_lettered(source, destination.endpoint_id, 1)
            except Exception as exc:  # a destination that fails is said once per copy, never stops the proxy
                self.dropped += 1
                log.warning("proxy: a dead-letter copy to %s failed: %s", destination.endpoint_id, exc)
        try:
            await self._opened.aclose()
        except Exception as exc:  # stopping: said, not raised
            log.warning("proxy: stopping a dead-letter destination: %s", exc)

    def close(self) -> None:
        """`run` sends what is queued, stops the destinations and returns."""
        self._queue.put_nowait(None)
