"""AmqpSink: a sender link whose `send` returns once the broker settled the delivery as ACCEPTED.

Each message is encoded on the event loop (a field with no AMQP form fails
there, not retriable), handed to the proton thread and sent unsettled as soon
as the link has credit; many concurrent sends are pipelined on the one link
and each waits for its own disposition. ACCEPTED completes the send;
REJECTED raises MessageRefused, and a message over the link's max-message-size
(the broker's attach) MessageTooLarge without being sent; RELEASED or MODIFIED, a lost
connection, a broker that cannot be reached, or no disposition within
`sendtimeout` raise TransientAdapterError. A delivery whose
disposition was lost with the connection may have arrived: the retry makes a
duplicate, never a loss.

Sends wait while a connection attempt is in progress (bounded by
`sendtimeout`) and fail at once while the broker is known to be down (the
bridge is waiting out its reconnect backoff), so the runtime's own retry
with backoff paces them.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from types import TracebackType
from typing import Self

from proton import Connection, Delivery, Event, Link

from gateway.envelope import Envelope
from gateway.errors import AdapterError, TransientAdapterError, too_large
from protocol_adapters.amqp.bridge import ProtonBridge, configure_terminus, link_properties
from protocol_adapters.amqp.errors import disconnected, rejected, released
from protocol_adapters.amqp.mapping import encode_message
from protocol_adapters.amqp.options import AmqpOptions, build_options
from protocol_adapters.base import EndpointConfig

CONNECTING, READY, DOWN, FAILED = "connecting", "ready", "down", "failed"


class _Send:
    __slots__ = ("abandoned", "future", "payload")

    def __init__(self, payload: bytes, future: asyncio.Future[None]) -> None:
        self.payload = payload
        self.future = future
        self.abandoned = False  # set by the event loop when the caller stopped waiting


def _finish(future: asyncio.Future[None], error: AdapterError | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)


class _Sending:
    """The proton-thread half: the sender link, sends waiting for credit and sends waiting for a disposition."""

    def __init__(self, options: AmqpOptions) -> None:
        self.options = options
        self.bridge: ProtonBridge | None = None
        self._link: Link | None = None
        self._state = CONNECTING
        self._error: AdapterError | None = None
        self._waiting: deque[_Send] = deque()
        self._in_flight: dict[Delivery, _Send] = {}
        self._tags = itertools.count()
        # after the broker ended the session over one of several pipelined messages: send one at a time
        # for this many accepted messages, so the retry of the culprit is alone when it fails again
        self._solo = 0
        self._ready = False

    def _finish(self, item: _Send, error: AdapterError | None) -> None:
        assert self.bridge is not None
        self.bridge.notify(_finish, item.future, error)

    def open_link(self, connection: Connection, name: str) -> Link:
        session = connection.session()
        session.open()
        link = session.sender(name)
        configure_terminus(link.target, self.options.node, self.options)
        link.source.address = name
        link.snd_settle_mode = Link.SND_UNSETTLED
        link.rcv_settle_mode = Link.RCV_FIRST
        link.properties = link_properties(self.options)
        link.open()
        return link

    def connecting(self) -> None:
        if self._state != FAILED:
            self._state = CONNECTING

    def ready(self, link: Link, generation: int) -> None:
        self._link = link
        self._state = READY
        self._ready = True
        self._pump()

    def lost(self, error: AdapterError, generation: int) -> None:
        was_ready, self._ready = self._ready, False
        self._link = None
        self._state = DOWN
        in_flight = [item for item in self._in_flight.values() if not item.abandoned]
        self._in_flight.clear()
        if was_ready and not error.retriable:
            # the broker ended the session over a message: blame it when it is the only candidate
            if len(in_flight) == 1:
                self._finish(in_flight[0], rejected(self.options.node, "session ended over this message", str(error)))
                in_flight = []
            else:
                self._solo = max(self._solo, len(in_flight))
            error = TransientAdapterError(str(error))
        self._error = error
        for item in in_flight:
            self._finish(item, disconnected(self.options.node) if error.retriable else error)
        self._fail_waiting(error)

    def gave_up(self, error: AdapterError) -> None:
        self._state = FAILED
        self._error = error
        for item in self._in_flight.values():
            self._finish(item, error)
        self._in_flight.clear()
        self._fail_waiting(error)

    def closing(self) -> None:
        self.gave_up(TransientAdapterError(f"AMQP sink {self.options.node}: closed"))

    def _fail_waiting(self, error: AdapterError) -> None:
        while self._waiting:
            self._finish(self._waiting.popleft(), error)

    def submit(self, item: _Send) -> None:
        if item.abandoned:
            return
        if self._state in (READY, CONNECTING):
            self._waiting.append(item)
            self._pump()
        else:
            self._finish(item, self._error or TransientAdapterError("AMQP sink not connected"))

    def _pump(self) -> None:
        link = self._link
        if link is None:
            return
        while self._waiting and link.credit > 0:
            if self._solo and self._in_flight:
                return
            item = self._waiting.popleft()
            if item.abandoned:
                continue
            limit = link.remote_max_message_size  # the broker's max-message-size from its attach; 0: none
            if limit and len(item.payload) > limit:
                self._finish(item, too_large(f"AMQP sink {self.options.node}", len(item.payload), limit,
                                             "max-message-size"))
                continue
            dlv = link.delivery(str(next(self._tags)))
            link.stream(item.payload)
            link.advance()
            self._in_flight[dlv] = item

    def flow(self, event: Event) -> None:
        self._pump()

    def delivery(self, event: Event) -> None:
        dlv = event.delivery
        if dlv is None or not dlv.updated:
            return
        state = dlv.remote_state
        error: AdapterError | None
        if state == Delivery.ACCEPTED:
            error = None
        elif state == Delivery.REJECTED:
            condition = dlv.remote.condition
            error = rejected(self.options.node, condition.name if condition else None,
                             condition.description if condition else None)
        elif state == Delivery.RELEASED:
            error = released(self.options.node, "released")
        elif state == Delivery.MODIFIED:
            error = released(self.options.node, "modified")
        elif dlv.settled:  # settled without an outcome: the target's default outcome is not known to be accepted
            error = released(self.options.node, "settled")
        else:
            return  # RECEIVED or another non-terminal state: keep waiting
        item = self._in_flight.pop(dlv, None)
        dlv.settle()
        if item is not None:
            self._finish(item, error)
        if self._solo:
            self._solo -= 1
            self._pump()


class AmqpSink:
    def __init__(self, options: AmqpOptions) -> None:
        self.options = options
        self._sending = _Sending(options)
        self._bridge: ProtonBridge | None = None
        self._closed = False

    def _start(self) -> ProtonBridge:
        self._sending = _Sending(self.options)
        bridge = ProtonBridge(self.options, self._sending, asyncio.get_running_loop(), "sink")
        self._sending.bridge = bridge
        self._bridge = bridge
        bridge.start()
        return bridge

    async def __aenter__(self) -> Self:
        self._closed = False
        self._start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self._closed = True
        if self._bridge is not None:
            await self._bridge.close()

    async def send(self, envelope: Envelope) -> None:
        bridge = self._bridge
        if bridge is None or self._closed:
            raise AdapterError("AMQP sink used outside 'async with'")
        if not bridge.alive:
            bridge = self._start()  # the proton thread died (a bug): a fresh one rather than a dead sink
        payload = encode_message(envelope, durable=self.options.durable)
        item = _Send(payload, asyncio.get_running_loop().create_future())
        sending = self._sending
        if not bridge.call(lambda: sending.submit(item)):
            raise TransientAdapterError(f"AMQP sink {self.options.node}: closed")
        try:
            await asyncio.wait_for(item.future, self.options.send_timeout)
        except TimeoutError:
            item.abandoned = True
            raise TransientAdapterError(f"AMQP sink {self.options.node}: no disposition within "
                                        f"{self.options.send_timeout}s") from None
        except asyncio.CancelledError:
            item.abandoned = True
            raise


def create_sink(config: EndpointConfig) -> AmqpSink:
    return AmqpSink(build_options(config))
