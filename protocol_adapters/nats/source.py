"""NatsSource: a JetStream durable pull consumer (at-least-once), or a core NATS subscription (at-most-once).

JetStream mode (option `stream` set): the stream is created when missing, the
durable consumer (explicit ack, `ackwait`, filter subject) likewise; a
background task fetches in batches into a bounded buffer and only fetches
when the buffer has room, so a runtime that stops pulling stops the fetching.
`ack` acks the message at the server, `nack` naks it (redelivered at once);
closing the source naks whatever was fetched and not acknowledged, so another
consumer sees it without waiting `ackwait`.

Core mode (no `stream`): a plain (or queue group) subscription. Core NATS
keeps nothing: a message is delivered once, to whoever is subscribed at that
moment, so `ack` and `nack` are no-ops and a message in flight when the
gateway stops or the connection drops is lost. When the runtime stops
pulling, the client buffers up to `pendinglimit` messages, then drops
(counted in `dropped`). Use JetStream mode for at-least-once.

Both modes ride out a broker restart: the client reconnects with exponential
backoff and jitter and resubscribes; JetStream redelivers what was not acked.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import replace
from types import TracebackType
from typing import Any, Self

import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext, api

from gateway import backoff
from gateway.envelope import Envelope
from protocol_adapters.base import Delivery, EndpointConfig
from protocol_adapters.nats.connection import BACKOFF_INITIAL, confirm_written, connect, ensure_stream
from protocol_adapters.nats.errors import adapter_error, is_retriable
from protocol_adapters.nats.mapping import envelope_from_msg
from protocol_adapters.nats.options import NatsOptions, source_options

RECHECK_IDLE = 10.0  # seconds of empty fetches after which the source checks its consumer still exists
PULL_EXPIRY_MARGIN = 0.1  # seconds past a pull request's expiry before closing releases messages
# a failed ack/nack only means a (later) redelivery: never worth an exception in the runtime
_ACK_FAILURES = (nats.errors.Error, OSError)  # OSError covers TimeoutError


async def _ensure_consumer(js: JetStreamContext, options: NatsOptions) -> None:
    assert options.stream is not None
    try:
        await js.consumer_info(options.stream, options.durable)
        return
    except nats.js.errors.NotFoundError:
        pass
    config = api.ConsumerConfig(
        durable_name=options.durable, ack_policy=api.AckPolicy.EXPLICIT, deliver_policy=api.DeliverPolicy.ALL,
        ack_wait=options.ack_wait, max_ack_pending=options.max_ack_pending, filter_subject=options.listen_subject,
    )
    await js.add_consumer(options.stream, config)


class _Buffer:
    """A bounded FIFO between the fetcher (or the subscription callback) and the runtime's iteration."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: deque[Msg] = deque()
        self.closed = False
        self._changed = asyncio.Condition()

    async def room(self) -> int:
        """Free slots, waiting until there is at least one; 0 once closed."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.closed or len(self.items) < self.size)
            return 0 if self.closed else self.size - len(self.items)

    async def put(self, msgs: list[Msg]) -> None:
        async with self._changed:
            self.items.extend(msgs)
            self._changed.notify_all()

    def take(self, limit: int) -> list[Msg]:
        """Up to `limit` messages already here, without waiting; the fetcher learns of the room at the next get."""
        items = self.items
        return [items.popleft() for _ in range(min(limit, len(items)))]

    async def get(self) -> Msg | None:
        """The next message; None once closed and empty."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.closed or bool(self.items))
            if not self.items:
                return None
            msg = self.items.popleft()
            self._changed.notify_all()
            return msg

    async def close(self) -> None:
        async with self._changed:
            self.closed = True
            self._changed.notify_all()


class NatsSource:
    def __init__(self, options: NatsOptions) -> None:
        self.options = options
        self.dropped = 0  # core mode: messages the client dropped because the runtime did not keep up
        self._client: Client | None = None
        self._js: JetStreamContext | None = None
        self._sub: Any = None  # Subscription (core) or JetStreamContext.PullSubscription
        self._buffer = _Buffer(options.batch)
        self._fetcher: asyncio.Task[None] | None = None
        self._unacked: dict[str, Msg] = {}  # JetStream: reply (ack) subject -> message handed out
        self._stopped = asyncio.Event()
        self._failure: Exception | None = None  # why the fetcher gave up, raised by the iteration
        self._pull_expires = 0.0  # when the server drops the last pull request (monotonic clock)

    async def __aenter__(self) -> Self:
        options = self.options
        self._client = await connect(options, self._on_error)
        try:
            if options.jetstream:
                await self._bind()
                self._fetcher = asyncio.create_task(self._fetch(), name=f"nats-fetch-{options.endpoint_id}")
            else:
                self._sub = await self._client.subscribe(
                    options.listen_subject or "", queue=options.queue_group, cb=self._on_message,
                    pending_msgs_limit=options.pending_limit)
                # messages published from now on reach it: the server has processed the SUB
                await confirm_written(self._client, options.publish_timeout)
        except BaseException as exc:
            await self._close_client()
            if isinstance(exc, Exception):
                raise adapter_error(options.endpoint_id, f"subscribe to {options.listen_subject}", exc) from exc
            raise
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()
        if self._fetcher is not None:
            # a fetch in progress ends within fetchtimeout; what it brings is released below
            try:
                await asyncio.wait_for(asyncio.shield(self._fetcher), self.options.fetch_timeout + 1.0)
            except Exception:
                self._fetcher.cancel()
                with contextlib.suppress(BaseException):
                    await self._fetcher
        if self._sub is not None and not isinstance(self._sub, Subscription):
            # a pull request the server still holds would take a message released below and lose it until
            # ackwait: drop the pull inbox and let the last request expire first
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
            await asyncio.sleep(max(0.0, self._pull_expires + PULL_EXPIRY_MARGIN - time.monotonic()))
        # fetched but not acknowledged: release now rather than after ackwait
        for msg in [*self._unacked.values(), *self._buffer.items]:
            with contextlib.suppress(*_ACK_FAILURES):
                await msg.nak()
        self._unacked.clear()
        self._buffer.items.clear()
        await self._close_client()

    async def __aiter__(self) -> AsyncIterator[Envelope]:
        endpoint, jetstream, buffer = self.options.endpoint_id, self.options.jetstream, self._buffer
        unacked = self._unacked
        while True:
            msg = await buffer.get()
            if msg is None:
                if self._failure is not None:
                    raise self._failure
                return
            if jetstream:
                unacked[msg.reply] = msg
            yield envelope_from_msg(msg, endpoint, jetstream=jetstream)

    def take_ready(self, limit: int) -> list[Envelope]:
        """Messages already fetched, without waiting: the pipeline judges and delivers them as one batch."""
        endpoint, jetstream, unacked = self.options.endpoint_id, self.options.jetstream, self._unacked
        taken = []
        for msg in self._buffer.take(limit):
            if jetstream:
                unacked[msg.reply] = msg
            taken.append(envelope_from_msg(msg, endpoint, jetstream=jetstream))
        return taken

    async def ack(self, envelope: Envelope, delivery: Delivery | None = None) -> None:
        msg = self._unacked.pop(getattr(envelope.ack, "reply", ""), None)
        if msg is None:
            return  # core mode (nothing to acknowledge), or already acked/nacked
        with contextlib.suppress(*_ACK_FAILURES):
            if self.options.ack_sync:
                await msg.ack_sync(timeout=self.options.publish_timeout)
            else:
                await msg.ack()

    async def nack(self, envelope: Envelope) -> None:
        msg = self._unacked.pop(getattr(envelope.ack, "reply", ""), None)
        if msg is None:
            return
        with contextlib.suppress(*_ACK_FAILURES):
            await msg.nak()

    async def stop(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        await self._buffer.close()
        if isinstance(self._sub, Subscription):
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()

    async def _bind(self) -> None:
        """Stream, durable consumer and pull subscription (idempotent: rerun after the server lost them)."""
        assert self._client is not None and self.options.stream is not None
        if self._js is None:
            self._js = self._client.jetstream(timeout=self.options.publish_timeout)
        await ensure_stream(self._js, self.options)
        if self.options.ephemeral:
            if self._sub is None:  # its own consumer, gone when it disconnects: the durable's acks are not touched
                config = api.ConsumerConfig(ack_policy=api.AckPolicy.EXPLICIT, deliver_policy=api.DeliverPolicy.ALL,
                                            ack_wait=self.options.ack_wait)
                self._sub = await self._js.pull_subscribe(self.options.listen_subject or "", stream=self.options.stream,
                                                          config=config)
            return
        await _ensure_consumer(self._js, self.options)
        if self._sub is None:
            self._sub = await self._js.pull_subscribe_bind(durable=self.options.durable, stream=self.options.stream)

    async def _fetch(self) -> None:
        try:
            await self._fetch_forever()
        except Exception as exc:
            self._failure = adapter_error(self.options.endpoint_id, f"fetch from stream {self.options.stream}", exc)
            await self._buffer.close()

    async def _fetch_forever(self) -> None:
        """Fetch while there is room in the buffer; back off on errors (a broker restart) and go on."""
        assert self._client is not None
        client, batch, timeout = self._client, self.options.batch, self.options.fetch_timeout
        delays = backoff.delays(BACKOFF_INITIAL, self.options.reconnect_wait_max)
        bound_after = client.stats["reconnects"]
        recheck_at = time.monotonic() + RECHECK_IDLE
        while not self._stopped.is_set():
            room = await self._buffer.room()
            if not room:
                return
            try:
                self._pull_expires = time.monotonic() + timeout
                msgs = await self._sub.fetch(min(room, batch), timeout=timeout)
            except TimeoutError:
                # nothing to fetch, or a consumer that is gone: nats-py reports its 404/409/503 statuses as
                # timeouts too, so after a reconnect (a server restarted without its store) or a long idle
                # spell, make sure the stream and consumer still exist
                if client.stats["reconnects"] != bound_after or time.monotonic() >= recheck_at:
                    bound_after, recheck_at = client.stats["reconnects"], time.monotonic() + RECHECK_IDLE
                    with contextlib.suppress(Exception):
                        await self._bind()
                continue
            except Exception as exc:
                if not is_retriable(exc) and not isinstance(exc, nats.js.errors.APIError):
                    raise
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopped.wait(), next(delays))
                with contextlib.suppress(Exception):
                    await self._bind()
                continue
            delays = backoff.delays(BACKOFF_INITIAL, self.options.reconnect_wait_max)
            recheck_at = time.monotonic() + RECHECK_IDLE
            await self._buffer.put(msgs)

    async def _on_message(self, msg: Msg) -> None:
        # core mode: waiting here makes the client buffer (then drop) rather than this source
        if await self._buffer.room():
            await self._buffer.put([msg])

    async def _on_error(self, exc: Exception) -> None:
        if isinstance(exc, nats.errors.SlowConsumerError):
            self.dropped += 1

    async def _close_client(self) -> None:
        client, self._client = self._client, None
        if client is None or client.is_closed:
            return
        with contextlib.suppress(Exception):
            await confirm_written(client, 2.0)  # acks and naks processed before the connection goes
        with contextlib.suppress(Exception):
            await client.close()


def create_source(config: EndpointConfig) -> NatsSource:
    return NatsSource(source_options(config))


def create_observer(config: EndpointConfig) -> NatsSource:
    """Reads beside the gateway: JetStream through an ephemeral consumer, core NATS without the queue group."""
    return NatsSource(replace(source_options(config), ephemeral=True, queue_group=""))
