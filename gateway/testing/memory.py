"""An in-process broker with queues, acks and redelivery, and MemorySource / MemorySink adapters on it.

Not a mock: it keeps the same contract as the broker adapters (a message
stays unacknowledged until `ack`; `nack`, or closing the source with
messages unacknowledged, makes them available again), so the adapter
contract suite and the runtime tests run against it as they do against the
real brokers.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import AsyncIterator

from gateway.envelope import Envelope
from gateway.errors import AdapterError, MessageRefused, TransientAdapterError, too_large
from protocol_adapters.base import Delivery, EndpointConfig


@dataclass
class _Queue:
    ready: list[tuple[int, Envelope]] = field(default_factory=list)
    unacked: dict[int, Envelope] = field(default_factory=dict)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)


class MemoryBroker:
    """Named queues; one per address. `down` makes every operation fail as an unreachable broker would;
    `max_bytes` (address -> body plus header bytes) refuses larger messages as a broker's size limit does,
    and addresses in `refusing` refuse every message as a broker's policy can."""

    def __init__(self) -> None:
        self.queues: dict[str, _Queue] = {}
        self.down = False
        self.max_bytes: dict[str, int] = {}
        self.refusing: set[str] = set()
        self._ids = itertools.count()

    def queue(self, address: str) -> _Queue:
        return self.queues.setdefault(address, _Queue())

    def publish(self, address: str, envelope: Envelope) -> None:
        if self.down:
            raise TransientAdapterError(f"memory broker is down (publish to {address})")
        if address in self.refusing:
            raise MessageRefused(f"memory broker refuses messages to {address}")
        limit = self.max_bytes.get(address)
        if limit is not None:
            headers = envelope.fields.get("headers") or ()
            size = len(envelope.body) + sum(len(name) + len(value) for name, value in headers)
            if size > limit:
                raise too_large(f"memory {address}", size, limit, "max_bytes")
        queue = self.queue(address)
        queue.ready.append((next(self._ids), envelope))
        queue.arrived.set()

    def depth(self, address: str) -> int:
        queue = self.queue(address)
        return len(queue.ready) + len(queue.unacked)


BROKERS: dict[str, MemoryBroker] = {}


def memory_broker(name: str = "default") -> MemoryBroker:
    return BROKERS.setdefault(name, MemoryBroker())


def _address(config: EndpointConfig) -> tuple[MemoryBroker, str]:
    broker_name = config.uris[0].split("://", 1)[-1] if config.uris else "default"
    return memory_broker(broker_name), str(config.options.get("queue", config.endpoint_id))


class MemorySource:
    def __init__(self, config: EndpointConfig) -> None:
        self.config = config
        self.broker, self.address = _address(config)
        self._stopped = asyncio.Event()
        self._held: dict[int, Envelope] = {}

    async def __aenter__(self) -> MemorySource:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        # like a broker session ending: whatever was not acknowledged is delivered again later
        queue = self.broker.queue(self.address)
        for tag in sorted(self._held):
            queue.unacked.pop(tag, None)
            queue.ready.insert(0, (tag, self._held[tag]))
        self._held.clear()
        queue.arrived.set()

    async def __aiter__(self) -> AsyncIterator[Envelope]:
        queue = self.broker.queue(self.address)
        while not self._stopped.is_set():
            if not queue.ready:
                queue.arrived.clear()
                waiter = asyncio.ensure_future(queue.arrived.wait())
                stopper = asyncio.ensure_future(self._stopped.wait())
                await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                stopper.cancel()
                continue
            yield self._hand_out(queue)

    def take_ready(self, limit: int) -> list[Envelope]:
        """Messages already queued, without waiting (the pipeline handles them as one batch)."""
        queue = self.broker.queue(self.address)
        taken: list[Envelope] = []
        while queue.ready and len(taken) < limit and not self._stopped.is_set():
            taken.append(self._hand_out(queue))
        return taken

    def _hand_out(self, queue: _Queue) -> Envelope:
        tag, envelope = queue.ready.pop(0)
        queue.unacked[tag] = envelope
        self._held[tag] = envelope
        return replace(envelope, endpoint=self.config.endpoint_id, ack=tag, position={"queue": self.address, "tag": tag})

    async def ack(self, envelope: Envelope, delivery: Delivery | None = None) -> None:
        self._held.pop(envelope.ack, None)
        self.broker.queue(self.address).unacked.pop(envelope.ack, None)

    async def nack(self, envelope: Envelope) -> None:
        queue = self.broker.queue(self.address)
        original = self._held.pop(envelope.ack, None)
        queue.unacked.pop(envelope.ack, None)
        if original is not None:
            queue.ready.insert(0, (envelope.ack, original))
            queue.arrived.set()

    async def stop(self) -> None:
        self._stopped.set()


class MemorySink:
    def __init__(self, config: EndpointConfig) -> None:
        self.config = config
        self.broker, self.address = _address(config)

    async def __aenter__(self) -> MemorySink:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        return None

    async def send(self, envelope: Envelope) -> None:
        self.broker.publish(self.address, replace(envelope, ack=None, position={}))

    async def send_many(self, envelopes: list[Envelope]) -> list[AdapterError | None]:
        """Each envelope's failure, or None when it was published (in order)."""
        failures: list[AdapterError | None] = []
        for envelope in envelopes:
            try:
                await self.send(envelope)
                failures.append(None)
            except AdapterError as exc:
                failures.append(exc)
        return failures


def create_source(config: EndpointConfig) -> MemorySource:
    return MemorySource(config)


def create_sink(config: EndpointConfig) -> MemorySink:
    return MemorySink(config)
