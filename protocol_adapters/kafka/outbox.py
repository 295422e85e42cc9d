"""A Kafka sink's open producer batches, one queue per partition, shared by every concurrent `send_many`.

aiokafka's producer takes one batch per partition into a produce request, and a second batch of a partition
waits until the first has left (`send_batch` waits for it to drain). When each call of the sink built its own
batches, a route with several batches in flight handed the producer many small batches per partition, one
round trip each: the throughput of a Kafka route was bound by its batches' size, not by the broker. Here
every call appends its records to the open batch of their partition, and one flusher per partition hands a
batch over as soon as the one before it has left, so that everything that arrived meanwhile leaves together.
Records of a partition keep their call order; each call waits for the batches its records went into.

A batch is what `new_builder` makes: aiokafka's own builder, or the native core's BatchWriter
(native/src/batch_writer.rs), which `extend` fills with many records of a list in one call.
"""

from __future__ import annotations

import asyncio
import collections
import functools
from collections.abc import Callable
from typing import Any

from protocol_adapters.kafka.mapping import OutgoingRecord


class Batch:
    """One producer batch being filled or handed over; `delivered` resolves as the producer's future does."""

    __slots__ = ("builder", "delivered")

    def __init__(self, builder: Any) -> None:
        self.builder = builder
        self.delivered: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # a failure is read by every caller that waits; this keeps asyncio quiet when all of them were cancelled
        self.delivered.add_done_callback(_retrieved)


class Outbox:
    """The open batches of one producer and topic, by partition (see the module docstring)."""

    def __init__(self, producer: Any, topic: str, new_builder: Callable[[], Any] | None = None) -> None:
        self.producer = producer
        self.topic = topic
        self._new_builder = producer.create_batch if new_builder is None else new_builder
        self._queues: dict[int, collections.deque[Batch]] = {}
        self._flushers: dict[int, asyncio.Task[None]] = {}
        # handed over and not yet answered: a producer stopped mid-flight may never answer them (close)
        self._handed: set[Batch] = set()
        # what the batches `close` finds still queued fail with
        self._closing: BaseException = asyncio.CancelledError()

    def add(self, partition: int, record: OutgoingRecord) -> Batch:
        """Append a record (one that fits an empty batch: the caller sends larger ones alone) to the open batch
        of its partition; the batch it joined."""
        value, key, headers, timestamp_ms = record
        queue = self._queue(partition)
        batch = queue[-1] if queue else None
        if batch is None or batch.builder.append(timestamp=timestamp_ms, key=key, value=value,
                                                 headers=headers) is None:
            # none open, or the open one is full: a new one behind it
            batch = Batch(self._new_builder())
            queue.append(batch)
            batch.builder.append(timestamp=timestamp_ms, key=key, value=value, headers=headers)
        self._flushing(partition)
        return batch

    def extend(self, partition: int, records: list[Any], indexes: list[int], default_key: bytes | None,
               added: list[Any] | None) -> list[tuple[Batch, list[int]]]:
        """`add` for `records[i]` for each i in `indexes` (BatchWriter builders only: native/src/batch_writer.rs
        says how a record is read, its `added` headers and default key); the batches they joined, each with the
        indexes that went into it."""
        queue = self._queue(partition)
        joined: list[tuple[Batch, list[int]]] = []
        batch = queue[-1] if queue else None
        start = 0
        while start < len(indexes):
            if batch is None:
                batch = Batch(self._new_builder())
                queue.append(batch)
            stop = batch.builder.extend(records, indexes, start, default_key, added)
            if stop > start:
                joined.append((batch, indexes[start:stop]))
            start, batch = stop, None  # the rest, if any, did not fit: a new batch behind this one
        self._flushing(partition)
        return joined

    def _queue(self, partition: int) -> collections.deque[Batch]:
        queue = self._queues.get(partition)
        if queue is None:
            queue = self._queues[partition] = collections.deque()
        return queue

    def _flushing(self, partition: int) -> None:
        if partition not in self._flushers:
            self._flushers[partition] = asyncio.create_task(self._flush(partition))

    async def _flush(self, partition: int) -> None:
        """Hand the partition's batches over in order, each once the producer took the one before it."""
        queue = self._queues[partition]
        handing: Batch | None = None
        try:
            while queue:
                handing = queue.popleft()  # nothing joins it from here on
                handing.builder.close()
                try:
                    future = await self.producer.send_batch(handing.builder, self.topic, partition=partition)
                except Exception as exc:  # noqa: BLE001 - every kind of refusal is the waiting callers' to see
                    _settle(handing, None, exc)
                    continue
                self._handed.add(handing)
                future.add_done_callback(functools.partial(self._answered, handing))
                handing = None
        except asyncio.CancelledError:
            # closing: what was never handed over (the one waiting for the producer too) fails, so that its
            # callers release their records for redelivery or send them again
            for batch in ([handing] if handing is not None else []) + list(queue):
                _settle(batch, None, self._closing)
            queue.clear()
            raise
        finally:
            del self._flushers[partition]

    def _answered(self, batch: Batch, future: asyncio.Future[Any]) -> None:
        self._handed.discard(batch)
        _settle(batch, future)

    async def close(self, failure: BaseException | None = None) -> None:
        """Stop handing batches over (the producer is about to stop); the batches still queued fail with
        `failure`, CancelledError when None (the sink is closing: their callers release their records)."""
        if failure is not None:
            self._closing = failure
        flushers = list(self._flushers.values())
        for flusher in flushers:
            flusher.cancel()
        await asyncio.gather(*flushers, return_exceptions=True)
        for queue in self._queues.values():
            for batch in queue:
                _settle(batch, None, self._closing)
            queue.clear()

    def abandon(self, failure: BaseException) -> None:
        """After the producer stopped: the batches it took and never answered fail with `failure` (a stop cut
        short by its timeout leaves them unanswered), so that no caller waits for them forever."""
        for batch in list(self._handed):
            _settle(batch, None, failure)
        self._handed.clear()


def _settle(batch: Batch, future: asyncio.Future[Any] | None, failure: BaseException | None = None) -> None:
    if batch.delivered.done():
        return
    if future is not None:
        if future.cancelled():
            failure = asyncio.CancelledError()
        else:
            failure = future.exception()
    if failure is None:
        batch.delivered.set_result(None)
    else:
        batch.delivered.set_exception(failure)


def _retrieved(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()
