"""AmqpSource: a receiver link whose credit is the backpressure, settled only when the runtime says so.

The link gets `prefetch` credit once; every delivery uses one, and one is
given back only when a message is settled: ACCEPTED on `ack`, RELEASED on
`nack`. A runtime that stops acknowledging therefore stops the flow at
`prefetch` unsettled messages, which also bounds the local buffer. The
MODIFIED outcome is never sent (RabbitMQ ends the session on it).

Deliveries belong to one connection generation. When the connection is lost
the broker requeues whatever was unsettled, so buffered messages of that
generation are dropped and acks for them are ignored: the broker delivers
them again (duplicates, never loss). On close, messages still unsettled are
released before the link detaches.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from proton import Connection, Delivery, Event, Link, Terminus

from gateway.envelope import Envelope
from gateway.errors import AdapterError, ObserverRefused
from protocol_adapters.amqp.bridge import ProtonBridge, configure_terminus, link_properties
from protocol_adapters.amqp.mapping import PROTOCOL, decode_message
from protocol_adapters.amqp.options import AmqpOptions, build_options
from protocol_adapters.base import Delivery as Outcome
from protocol_adapters.base import EndpointConfig


@dataclass(frozen=True, slots=True)
class AckHandle:
    generation: int
    delivery_id: int


def delivery_tag(delivery: Delivery) -> int | str:
    """The tag as an int (a tag of up to 8 bytes, RabbitMQ's counter) or hex; proton's own `tag` property
    decodes it as UTF-8, which binary tags are not."""
    try:
        from cproton import ffi, lib  # type: ignore[import-untyped]  # proton's C binding
        raw = lib.pn_delivery_tag(delivery._impl)
        tag = bytes(ffi.unpack(raw.start, raw.size))
    except Exception:  # a proton without this binding: its own (UTF-8) reading
        return str(delivery.tag)
    return int.from_bytes(tag, "big") if len(tag) <= 8 else tag.hex()


class _Receiving:
    """The proton-thread half: owns the receiver link, its credit and its unsettled deliveries."""

    def __init__(self, source: AmqpSource) -> None:
        self.source = source
        self.options = source.options
        self.bridge: ProtonBridge | None = None
        self._link: Link | None = None
        self._generation = 0
        self._unsettled: dict[int, Delivery] = {}
        self._ids = itertools.count()
        self._stopped = False

    def _notify(self, action: Any, *args: Any) -> None:
        assert self.bridge is not None
        self.bridge.notify(action, *args)

    def open_link(self, connection: Connection, name: str) -> Link:
        session = connection.session()
        session.open()
        link = session.receiver(name)
        configure_terminus(link.source, self.options.node, self.options)
        if self.options.distribution_mode is not None:
            link.source.distribution_mode = (Terminus.DIST_MODE_COPY if self.options.distribution_mode == "copy"
                                             else Terminus.DIST_MODE_MOVE)
        link.snd_settle_mode = Link.SND_UNSETTLED
        link.rcv_settle_mode = Link.RCV_FIRST
        link.properties = link_properties(self.options)
        link.open()
        return link

    def connecting(self) -> None:
        pass

    def ready(self, link: Link, generation: int) -> None:
        self._link = link
        self._generation = generation
        self._notify(self.source._attached, generation)
        if not self._stopped:
            link.flow(self.options.prefetch)

    def lost(self, error: AdapterError, generation: int) -> None:
        self._link = None
        self._unsettled.clear()  # the broker requeues them; their wrappers are void
        self._notify(self.source._detached, generation)

    def gave_up(self, error: AdapterError) -> None:
        self._notify(self.source._failed, error)

    def flow(self, event: Event) -> None:
        pass

    def delivery(self, event: Event) -> None:
        dlv = event.delivery
        link = self._link
        if link is None or dlv is None:
            return
        if dlv.aborted:
            dlv.settle()
            self._replenish()
            return
        if not dlv.readable or dlv.partial:
            return
        encoded = link.recv(dlv.pending) or b""
        link.advance()
        try:
            fields, body = decode_message(encoded)
        except AdapterError:
            fields, body = {}, bytes(encoded)  # handed on as is, so the runtime dead-letters it
        delivery_id = next(self._ids)
        self._unsettled[delivery_id] = dlv
        envelope = Envelope(PROTOCOL, fields, body, self.options.endpoint_id,
                            {"address": self.options.node, "delivery_tag": delivery_tag(dlv)},
                            AckHandle(self._generation, delivery_id))
        self._notify(self.source._arrived, self._generation, envelope)

    def _replenish(self) -> None:
        if self._link is not None and not self._stopped:
            self._link.flow(1)

    def settle(self, handle: AckHandle, outcome: int) -> None:
        if handle.generation != self._generation:
            return  # a previous connection's delivery: the broker has requeued it already
        dlv = self._unsettled.pop(handle.delivery_id, None)
        if dlv is None:
            return
        dlv.update(outcome)
        dlv.settle()
        self._replenish()

    def stop(self) -> None:
        self._stopped = True

    def closing(self) -> None:
        for dlv in self._unsettled.values():
            dlv.update(Delivery.RELEASED)
            dlv.settle()
        self._unsettled.clear()


class AmqpSource:
    def __init__(self, options: AmqpOptions) -> None:
        self.options = options
        self._buffer: deque[Envelope] = deque()
        self._changed = asyncio.Event()
        self._live: int | None = None
        self._error: AdapterError | None = None
        self._stopping = False
        self._closed = False
        self._receiving = _Receiving(self)
        self._bridge: ProtonBridge | None = None

    async def __aenter__(self) -> Self:
        bridge = ProtonBridge(self.options, self._receiving, asyncio.get_running_loop(), "source")
        self._receiving.bridge = bridge
        self._bridge = bridge
        bridge.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self._closed = True
        self._changed.set()
        if self._bridge is not None:
            await self._bridge.close()  # releases what is unsettled, then detaches

    def __aiter__(self) -> AsyncIterator[Envelope]:
        return self._messages()

    async def _messages(self) -> AsyncIterator[Envelope]:
        while True:
            if self._buffer:
                yield self._buffer.popleft()
                continue
            if self._stopping or self._closed:
                return
            if self._error is not None:
                raise self._error
            self._changed.clear()
            await self._changed.wait()

    def take_ready(self, limit: int) -> list[Envelope]:
        """Deliveries already received (within the credit window), without waiting: one batch for the pipeline."""
        buffer = self._buffer
        return [buffer.popleft() for _ in range(min(limit, len(buffer)))]

    async def ack(self, envelope: Envelope, delivery: Outcome | None = None) -> None:
        self._settle(envelope, Delivery.ACCEPTED)

    async def nack(self, envelope: Envelope) -> None:
        self._settle(envelope, Delivery.RELEASED)

    def _settle(self, envelope: Envelope, outcome: int) -> None:
        handle = envelope.ack
        if isinstance(handle, AckHandle) and self._bridge is not None:
            # queued behind earlier work on the proton thread; a lost connection makes it a no-op (redelivery)
            self._bridge.call(lambda: self._receiving.settle(handle, outcome))

    async def stop(self) -> None:
        self._stopping = True
        self._changed.set()
        if self._bridge is not None:
            self._bridge.call(self._receiving.stop)

    # -- called on the event loop by the proton thread, in order ------------------------------------------

    def _attached(self, generation: int) -> None:
        self._live = generation

    def _detached(self, generation: int) -> None:
        if self._live == generation:
            self._live = None
            self._buffer.clear()  # unsettled at the broker, which delivers them again

    def _arrived(self, generation: int, envelope: Envelope) -> None:
        if generation == self._live:
            self._buffer.append(envelope)
            self._changed.set()

    def _failed(self, error: AdapterError) -> None:
        self._error = error
        self._changed.set()


def create_source(config: EndpointConfig) -> AmqpSource:
    return AmqpSource(build_options(config))


def create_observer(config: EndpointConfig) -> AmqpSource:
    """An AMQP queue hands each message to one receiver: reading it takes it from the gateway."""
    raise ObserverRefused(f"AMQP endpoint {config.endpoint_id!r}: capturing from a queue takes its messages away "
                          "from the gateway (a queue gives each message to one receiver); pass --destructive to "
                          "capture anyway")
