"""MqttSource: a persistent MQTT session whose QoS 1/2 messages are acknowledged only when the runtime says so.

The session survives the gateway (3.1.1 `cleansession` false, 5.0 `cleanstart` false with a session
expiry), so the broker queues messages while the gateway is away and sends every message that was not
acknowledged again when the client reconnects. paho's manual acknowledgement holds the PUBACK (QoS 1) or
PUBCOMP (QoS 2) back until `ack`.

- Every connection is a generation. When a connection is lost, the QoS 1 messages still buffered are
  dropped and the acknowledgements of those already yielded are skipped: the broker delivers all of them
  again on the next connection (a PUBACK sent on a new connection could hit a different message that
  reuses the packet id). QoS 2 messages are kept: paho answers PUBREC on receipt, which hands the message
  over to the client, so they survive reconnects only in memory (and a gateway crash loses them: subscribe
  with QoS 1, the default, for at-least-once across restarts).
- `nack`: MQTT has no negative acknowledgement; the message stays unacknowledged at the broker (so a
  reconnect or restart delivers it again) and is yielded again locally.
- Backpressure: the broker limits unacknowledged deliveries (5.0: our Receive Maximum; 3.1.1: its
  `max_inflight_messages`), but Mosquitto 2.0 releases more per PUBACK than it should, so the source also
  stops reading the socket while `receivemaximum` messages wait in its buffer. A pause longer than about
  two `keepalive` periods costs a reconnect (paho misses a PINGRESP): the unacknowledged messages then
  come again, as duplicates, never lost.
- `stop`: incoming messages are no longer buffered (they stay unacknowledged, for the next session);
  iteration ends once the buffer is empty; `ack` keeps working until the source is closed.
- `ack(envelope, Delivery(rejected=True))` on MQTT 5 answers QoS 1 with the PUBACK reason code
  `rejectreasoncode` (paho has no public call for it; see `_puback_with_reason`).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import secrets
import ssl
import struct
from collections import deque
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any, Self

import aiomqtt
import paho.mqtt.client as mqtt
from paho.mqtt.subscribeoptions import SubscribeOptions

from gateway.envelope import Envelope
from gateway.errors import AdapterError
from protocol_adapters.base import Delivery, EndpointConfig
from protocol_adapters.mqtt.errors import connect_error, connection_lost, reason_value, subscribe_refused
from protocol_adapters.mqtt.mapping import accept_bom_in_received_strings, envelope_from_message
from protocol_adapters.mqtt.options import (
    MqttOptions,
    TlsAlerts,
    build_options,
    client_for,
    disconnected_of,
    paho_of,
    require_subscription,
    ssl_context,
)

PUBACK = 0x40
RECONNECT_FIRST_WAIT = 0.1

accept_bom_in_received_strings()


@dataclass(slots=True)
class _Ticket:
    """The ack handle of one delivery: which connection it came on, its packet id and QoS."""

    generation: int
    mid: int
    qos: int
    settled: bool = False


class MqttSource:
    def __init__(self, options: MqttOptions) -> None:
        require_subscription(options)
        self.options = options
        self._ready: deque[Envelope] = deque()
        self._arrived = asyncio.Event()
        self._lost = asyncio.Event()
        self._generation = 0
        self._installed = 0  # the generation of the connection that finished connecting and subscribing
        self._client: aiomqtt.Client | None = None
        self._paho: mqtt.Client | None = None
        self._paused = False
        self._stopping = False
        self._closing = False
        self._failure: AdapterError | None = None
        self._runner: asyncio.Task[None] | None = None
        self._tls: ssl.SSLContext | None = None
        self._broker = 0
        # QoS 2 messages acknowledged while disconnected: their PUBCOMP goes out on the next connection
        self._pubcomp_owed: list[int] = []
        self._high = options.receive_maximum
        self._low = max(1, options.receive_maximum // 2)

    async def __aenter__(self) -> Self:
        self._tls = await asyncio.to_thread(ssl_context, self.options)
        await self._connect()
        self._runner = asyncio.create_task(self._reconnect_forever(), name=f"mqtt-source-{self.options.endpoint_id}")
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self._closing = self._stopping = True
        if self._runner is not None:
            # the flag ends the loop even when aiomqtt's wait_for swallowed the cancellation (Python 3.11)
            self._lost.set()
            self._runner.cancel()
            await asyncio.wait({self._runner}, timeout=self.options.connect_timeout + 1)
        client, self._client, self._paho = self._client, None, None
        if client is not None:
            # a clean DISCONNECT keeps the session: what was not acknowledged is delivered to the next one
            with contextlib.suppress(aiomqtt.MqttError, OSError):
                await client.__aexit__(None, None, None)
        self._ready.clear()

    def __aiter__(self) -> MqttSource:
        return self

    async def __anext__(self) -> Envelope:
        while True:
            if self._ready:
                envelope = self._ready.popleft()
                if self._paused and len(self._ready) <= self._low:
                    self._resume_reading()
                return envelope
            if self._failure is not None:
                raise self._failure
            if self._stopping:
                raise StopAsyncIteration
            self._arrived.clear()
            await self._arrived.wait()

    def take_ready(self, limit: int) -> list[Envelope]:
        """Messages already received, without waiting: the pipeline judges and delivers them as one batch."""
        ready = self._ready
        taken = [ready.popleft() for _ in range(min(limit, len(ready)))]
        if taken and self._paused and len(ready) <= self._low:
            self._resume_reading()
        return taken

    async def ack(self, envelope: Envelope, delivery: Delivery | None = None) -> None:
        ticket = envelope.ack
        if not isinstance(ticket, _Ticket) or ticket.settled:
            return
        ticket.settled = True
        paho = self._paho
        if ticket.qos == 1:
            # a delivery of an earlier connection comes again on this one: its packet id means nothing now
            if paho is None or ticket.generation != self._generation:
                return
            if delivery is not None and delivery.rejected and self.options.v5:
                self._puback_with_reason(paho, ticket.mid, self.options.reject_reason_code)
            else:
                paho.ack(ticket.mid, 1)
        elif ticket.qos == 2:
            if paho is None:
                self._pubcomp_owed.append(ticket.mid)
            else:
                paho.ack(ticket.mid, 2)

    async def nack(self, envelope: Envelope) -> None:
        ticket = envelope.ack
        if not isinstance(ticket, _Ticket) or ticket.settled:
            return
        if ticket.qos == 1 and ticket.generation != self._generation:
            return  # the broker delivers it again on the current connection
        self._ready.appendleft(envelope)
        self._arrived.set()

    async def stop(self) -> None:
        self._stopping = True
        self._arrived.set()

    # --- connection -------------------------------------------------------------------------------

    async def _connect(self) -> None:
        """Connect (trying each broker uri once) and subscribe; raise the last AdapterError otherwise."""
        failure: AdapterError | None = None
        brokers = self.options.brokers
        for attempt in range(len(brokers)):
            index = (self._broker + attempt) % len(brokers)
            try:
                await self._connect_to(index)
            except AdapterError as exc:
                if not exc.retriable:
                    raise
                failure = exc
                continue
            self._broker = index
            return
        assert failure is not None
        raise failure

    async def _connect_to(self, index: int) -> None:
        broker = self.options.brokers[index]
        client = client_for(self.options, broker, self.options.client_id, persistent=not self.options.clean,
                            tls_context=self._tls)
        paho = paho_of(client)
        paho.manual_ack_set(True)
        paho.on_message = self._on_message
        # a new generation before CONNACK: a persistent session's messages arrive before our SUBSCRIBE returns
        self._generation += 1
        generation = self._generation
        self._client, self._paho, self._paused = client, paho, False
        alerts = TlsAlerts(client)
        try:
            await client.__aenter__()
        except Exception as exc:
            self._client = self._paho = None
            self._close_socket(paho)
            raise connect_error(exc, str(broker), alerts.alert) from exc
        disconnected_of(client).add_done_callback(lambda fut: self._on_lost(generation, fut))
        try:
            await self._subscribe(client, str(broker))
            if self._generation != generation:  # lost while subscribing
                raise connection_lost(str(broker))
        except BaseException:
            self._client = self._paho = None
            with contextlib.suppress(Exception):
                await client.__aexit__(None, None, None)
            raise
        # from here a lost connection wakes the reconnect loop (a failed attempt just fails)
        self._installed = generation
        if len(self._ready) >= self._high:
            self._pause_reading()
        for mid in self._pubcomp_owed:
            paho.ack(mid, 2)
        self._pubcomp_owed.clear()

    async def _subscribe(self, client: aiomqtt.Client, where: str) -> None:
        options = self.options
        topics: list[tuple[str, Any]]
        if options.v5:
            topics = [(f, SubscribeOptions(qos=options.qos, noLocal=options.no_local,
                                           retainAsPublished=options.retain_as_published,
                                           retainHandling=options.retain_handling))
                      for f in options.topic_filters]
        else:
            topics = [(f, options.qos) for f in options.topic_filters]
        try:
            granted = await client.subscribe(topics)
        except aiomqtt.MqttError as exc:
            raise connect_error(exc, f"{where} (subscribing)") from exc
        for topic_filter, code in zip(options.topic_filters, granted):
            value = reason_value(code)
            if value is not None and value >= 0x80:
                raise subscribe_refused(code, topic_filter)

    def _on_lost(self, generation: int, fut: asyncio.Future[None]) -> None:
        if not fut.cancelled():
            fut.exception()  # retrieved here: nobody else awaits it once the connection is gone
        if self._closing or generation != self._generation:
            return
        self._generation += 1
        # QoS 1 deliveries of the lost connection come again from the broker; QoS 2 ones were handed over
        self._ready = deque(e for e in self._ready if isinstance(e.ack, _Ticket) and e.ack.qos == 2)
        if generation == self._installed:
            self._lost.set()

    async def _reconnect_forever(self) -> None:
        failures = 0
        while not self._closing:
            await self._lost.wait()
            self._lost.clear()
            if self._closing:
                return
            client, self._client, self._paho = self._client, None, None
            if client is not None:
                with contextlib.suppress(Exception):
                    await client.__aexit__(None, None, None)
            while not self._closing:
                ceiling = min(self.options.reconnect_wait_max, RECONNECT_FIRST_WAIT * 2 ** failures)
                await asyncio.sleep(ceiling * random.uniform(0.5, 1.0))
                try:
                    await self._connect()
                except AdapterError as exc:
                    if not exc.retriable:
                        self._failure = exc
                        self._arrived.set()
                        return
                    failures = min(failures + 1, 30)
                    continue
                failures = 0
                break

    # --- paho callbacks and socket flow control -------------------------------------------------------

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        if self._stopping:
            return  # left unacknowledged: the broker delivers it to the next session
        ticket = _Ticket(self._generation, message.mid, message.qos)
        self._ready.append(envelope_from_message(message, self.options.protocol, self.options.endpoint_id, ticket))
        self._arrived.set()
        # not before SUBACK: a resumed session's backlog arrives first, and the SUBACK behind it must be read
        if not self._paused and len(self._ready) >= self._high and self._installed == self._generation:
            self._pause_reading()

    def _pause_reading(self) -> None:
        sock = self._paho.socket() if self._paho is not None else None
        if sock is None:
            return
        # reading stops, TCP fills up and the broker holds the rest; reading again within
        # `keepalive` keeps the connection (after that paho misses a PINGRESP and reconnects)
        asyncio.get_running_loop().remove_reader(sock.fileno())
        self._paused = True

    def _resume_reading(self) -> None:
        self._paused = False
        client, paho = self._client, self._paho
        sock = paho.socket() if paho is not None else None
        if client is None or paho is None or sock is None:
            return
        asyncio.get_running_loop().add_reader(sock.fileno(), self._read, client, paho)

    @staticmethod
    def _read(client: aiomqtt.Client, paho: mqtt.Client) -> None:
        # the same reader aiomqtt installs (which we removed to pause): a failure ends the connection
        try:
            while True:
                paho.loop_read()
                # an SSL socket may hold decrypted bytes the selector does not see
                sock = paho.socket()
                pending = getattr(sock, "pending", None)
                if pending is None or pending() <= 0:
                    break
        except Exception as exc:
            disconnected = disconnected_of(client)
            if not disconnected.done():
                disconnected.set_exception(exc)

    @staticmethod
    def _close_socket(paho: mqtt.Client) -> None:
        if paho.socket() is not None:
            with contextlib.suppress(Exception):
                paho.disconnect()

    @staticmethod
    def _puback_with_reason(paho: mqtt.Client, mid: int, reason: int) -> None:
        """PUBACK with an MQTT 5 reason code: paho's `ack()` always sends success, so the packet is built
        here and queued with paho's own (private) packet writer; without it, a plain PUBACK."""
        queue = getattr(paho, "_packet_queue", None)
        if queue is None:
            paho.ack(mid, 1)
            return
        queue(PUBACK, struct.pack("!BBHB", PUBACK, 3, mid, reason), mid, 1)


def create_source(config: EndpointConfig) -> MqttSource:
    return MqttSource(build_options(config))


def create_observer(config: EndpointConfig) -> MqttSource:
    """Reads beside the gateway: a plain subscription (no shared group) in a clean session of its own client id."""
    options = build_options(config)
    filters = tuple(f.split("/", 2)[2] if f.startswith("$share/") else f for f in options.topic_filters)
    return MqttSource(replace(options, topic_filters=filters, clean=True, session_expiry=0,
                              client_id=f"{options.client_id}-capture-{secrets.token_hex(4)}"))
