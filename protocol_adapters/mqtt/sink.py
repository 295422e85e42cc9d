"""MqttSink: publishes each envelope to the endpoint's own topic and returns once the broker confirmed it.

One connection carries many publishes at once: `send` returns at the PUBACK (QoS 1) or PUBCOMP (QoS 2)
of its own packet, and up to `maxinflight` publishes (on MQTT 5 at most the broker's Receive Maximum)
wait for theirs together. QoS 0 returns once the packet is written. A PUBACK reason code of 0x80 or more
(MQTT 5) is an error: retriable when the broker is busy or over quota, otherwise not. A lost connection
fails every waiting `send` with a retriable AdapterError (the runtime sends them again: a duplicate, never
a loss) and the next `send` connects again. On MQTT 5 the broker's Maximum Packet Size (CONNACK) is checked
before each publish: a larger message is a MessageTooLarge for it alone (a broker that receives one closes
the connection). The session is clean and the client id unique per sink, so
gateway replicas never take over each other's connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import ssl
from types import TracebackType
from typing import Any, Self

import aiomqtt
import paho.mqtt.client as mqtt
from paho.mqtt.properties import Properties

from gateway.envelope import Envelope
from gateway.errors import AdapterError, MessageTooLarge, TransientAdapterError, adapter_failure, too_large
from protocol_adapters.base import EndpointConfig
from protocol_adapters.mqtt.errors import connect_error, connection_lost, publish_refused, reason_value
from protocol_adapters.mqtt.mapping import publish_properties
from protocol_adapters.mqtt.options import (
    MqttOptions,
    TlsAlerts,
    build_options,
    client_for,
    disconnected_of,
    paho_of,
    require_topic,
    ssl_context,
)

# paho's publish() results that retrying cannot fix
_PERMANENT = {mqtt.MQTT_ERR_PAYLOAD_SIZE, mqtt.MQTT_ERR_INVAL, mqtt.MQTT_ERR_NOT_SUPPORTED}


class MqttSink:
    def __init__(self, options: MqttOptions) -> None:
        require_topic(options)
        self.options = options
        self._topic: str = options.topic or ""
        self._client_id = f"{options.client_id}-pub-{secrets.token_hex(4)}"
        self._client: aiomqtt.Client | None = None
        self._paho: mqtt.Client | None = None
        self._window = asyncio.Semaphore(options.max_inflight)
        self._pending: dict[int, asyncio.Future[int | None]] = {}
        self._connecting = asyncio.Lock()
        self._attempts = 0
        self._failure: AdapterError | None = None
        self._tls: ssl.SSLContext | None = None
        self._broker = 0
        self._where = str(options.brokers[0])
        self._max_packet: int | None = None  # the broker's Maximum Packet Size (MQTT 5 CONNACK), when it said one

    async def __aenter__(self) -> Self:
        self._tls = await asyncio.to_thread(ssl_context, self.options)
        try:
            await self._connected()
        except AdapterError as exc:
            if not exc.retriable:
                raise  # a broker that is down now may be up at the first send; bad credentials stay bad
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        client, self._client, self._paho = self._client, None, None
        if client is not None:
            with contextlib.suppress(aiomqtt.MqttError, OSError):
                await client.__aexit__(None, None, None)
        self._fail_pending(connection_lost(self._where, RuntimeError("sink closed")))

    async def send(self, envelope: Envelope) -> None:
        properties = publish_properties(envelope.fields) if self.options.v5 else None
        paho = await self._connected()
        window = self._window
        async with window:
            if self._paho is not paho:  # the connection changed while this send waited for room
                paho = await self._connected()
            await self._publish(paho, envelope.body, properties)

    async def _publish(self, paho: mqtt.Client, body: bytes, properties: Properties | None) -> None:
        # paho takes bytes or bytearray only (AMQP bodies, for one, may arrive as memoryview)
        payload = body if isinstance(body, (bytes, bytearray)) else bytes(body)
        if self._max_packet is not None:
            size = publish_packet_size(self._topic, payload, self.options.qos, properties, self.options.v5)
            if size > self._max_packet:
                raise too_large(f"MQTT publish to {self._topic!r} on {self._where}", size, self._max_packet,
                                "Maximum Packet Size")
        try:
            info = paho.publish(self._topic, payload, self.options.qos, self.options.retain, properties)
        except (TypeError, ValueError) as exc:  # e.g. a payload beyond MQTT's 256 MB
            raise MessageTooLarge(f"MQTT cannot publish this message to {self._topic!r}: {exc}") from exc
        if info.rc == mqtt.MQTT_ERR_PAYLOAD_SIZE:
            raise MessageTooLarge(f"MQTT publish to {self._topic!r}: payload beyond MQTT's 268435455 bytes")
        if info.rc != mqtt.MQTT_ERR_SUCCESS:
            raise adapter_failure(f"MQTT publish to {self._topic!r} on {self._where} failed: "
                                  f"{mqtt.error_string(info.rc)}", retriable=info.rc not in _PERMANENT)
        if info.is_published():
            return
        confirmed: asyncio.Future[int | None] = asyncio.get_running_loop().create_future()
        self._pending[info.mid] = confirmed
        try:
            code = await asyncio.wait_for(confirmed, self.options.publish_timeout)
        except TimeoutError:
            raise TransientAdapterError(f"MQTT broker {self._where} did not confirm a publish to {self._topic!r} "
                                        f"within {self.options.publish_timeout}s") from None
        finally:
            if self._pending.get(info.mid) is confirmed:
                del self._pending[info.mid]
        if code is not None and code >= 0x80:
            raise publish_refused(code, self._topic)

    async def _connected(self) -> mqtt.Client:
        paho = self._paho
        if paho is not None:
            return paho
        attempts = self._attempts
        async with self._connecting:
            if self._paho is not None:
                return self._paho
            # sends that queued behind a failed attempt fail with it instead of each trying again
            if self._attempts != attempts and self._failure is not None:
                raise self._failure
            self._attempts += 1
            self._failure = None
            brokers = self.options.brokers
            for attempt in range(len(brokers)):
                index = (self._broker + attempt) % len(brokers)
                try:
                    return await self._connect_to(index)
                except AdapterError as exc:
                    self._failure = exc
                    if not exc.retriable:
                        raise
            assert self._failure is not None
            raise self._failure

    async def _connect_to(self, index: int) -> mqtt.Client:
        broker = self.options.brokers[index]
        client = client_for(self.options, broker, self._client_id, persistent=False, tls_context=self._tls)
        paho = paho_of(client)
        receive_maximum: list[int] = []
        maximum_packet: list[int | None] = []
        aiomqtt_on_connect: Any = paho.on_connect  # paho types it as the union of its two callback APIs

        def on_connect(c: mqtt.Client, userdata: Any, flags: Any, reason: Any, properties: Any = None) -> None:
            # MQTT 5: the broker says how many unconfirmed publishes it accepts at once
            receive_maximum.append(int(getattr(properties, "ReceiveMaximum", 65535)))
            limit = getattr(properties, "MaximumPacketSize", None)
            maximum_packet.append(int(limit) if limit else None)
            if aiomqtt_on_connect is not None:
                aiomqtt_on_connect(c, userdata, flags, reason, properties)
        paho.on_connect = on_connect
        paho.on_publish = self._on_publish
        alerts = TlsAlerts(client)
        try:
            await client.__aenter__()
        except Exception as exc:
            if paho.socket() is not None:
                with contextlib.suppress(Exception):
                    paho.disconnect()
            raise connect_error(exc, str(broker), alerts.alert) from exc
        window = self.options.max_inflight
        if self.options.v5 and receive_maximum:
            window = min(window, receive_maximum[-1])
        self._window = asyncio.Semaphore(window)
        self._max_packet = maximum_packet[-1] if self.options.v5 and maximum_packet else None
        self._broker, self._where = index, str(broker)
        self._client, self._paho = client, paho
        disconnected_of(client).add_done_callback(lambda fut: self._on_lost(client, fut))
        return paho

    def _on_publish(self, client: mqtt.Client, userdata: Any, mid: int, reason: Any, properties: Any) -> None:
        confirmed = self._pending.get(mid)
        if confirmed is not None and not confirmed.done():
            confirmed.set_result(reason_value(reason))

    def _on_lost(self, client: aiomqtt.Client, fut: asyncio.Future[None]) -> None:
        cause = None if fut.cancelled() else fut.exception()
        if self._client is client:
            self._client = self._paho = None
            self._fail_pending(connection_lost(self._where, cause))

    def _fail_pending(self, error: AdapterError) -> None:
        pending, self._pending = self._pending, {}
        for confirmed in pending.values():
            if not confirmed.done():
                confirmed.set_exception(error)


def publish_packet_size(topic: str, payload: bytes | bytearray, qos: int, properties: Properties | None,
                        v5: bool = True) -> int:
    """Bytes of the PUBLISH packet paho writes: fixed header, topic, packet id (QoS > 0), properties, payload."""
    remaining = 2 + len(topic.encode()) + (2 if qos else 0) + len(payload)
    if properties is not None:
        remaining += len(properties.pack())  # type: ignore[no-untyped-call]  # MQTT 5: the property length varint and the properties
    elif v5:
        remaining += 1  # an empty property length
    length_bytes = 1 if remaining < 128 else 2 if remaining < 16384 else 3 if remaining < 2097152 else 4
    return 1 + length_bytes + remaining


def create_sink(config: EndpointConfig) -> MqttSink:
    return MqttSink(build_options(config))
