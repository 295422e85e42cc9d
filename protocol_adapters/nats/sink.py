"""NatsSink: publish to the endpoint's own subject and return once the server confirmed.

JetStream (option `stream` set): a JetStream publish that awaits the PubAck,
i.e. the message is stored in the stream (created when missing). Core NATS:
a publish, then a confirmation that the server processed it (a PING/PONG
after the client wrote it); core NATS itself keeps nothing, so a message
with no subscriber at that moment is gone, as for any core publisher.

Concurrent sends share the connection: nats-py writes whatever accumulated
in one socket write; JetStream PubAcks are awaited concurrently, and in core
mode all sends waiting at the same moment share one PING/PONG round.

While the client is reconnecting, `send` fails at once with a retriable
AdapterError (rather than letting nats-py buffer the message for later). A
client nats-py closed for good (the server ends a connection over a protocol
violation, e.g. "maximum payload exceeded") is replaced by a new one at the
next `send`, never kept. The size of each message, headers included, is
checked against the server's `max_payload` (from its INFO) before sending:
one too large is a MessageTooLarge for that message alone, and the connection
stays open.

Headers go out as ordered pairs with repeated names kept; the envelope's
`reply-to` is published as the reply subject in core mode (JetStream uses
the reply subject for its PubAck, so there it is not carried).
"""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType
from typing import Self

from nats.aio.client import Client
from nats.js import JetStreamContext

from gateway.envelope import Envelope
from gateway.errors import AdapterError, TransientAdapterError, too_large
from protocol_adapters.base import EndpointConfig
from protocol_adapters.nats.connection import confirm_written, connect, ensure_stream
from protocol_adapters.nats.errors import adapter_error
from protocol_adapters.nats.mapping import HeaderPairs, outgoing_headers, outgoing_reply
from protocol_adapters.nats.options import NatsOptions, sink_options

# seconds during which a failed reopen answers every send without trying again
_RETRY_AFTER = 0.5


class NatsSink:
    def __init__(self, options: NatsOptions) -> None:
        self.options = options
        self.subject = options.subject or ""
        self._client: Client | None = None
        self._js: JetStreamContext | None = None
        self._round: asyncio.Future[None] | None = None  # core mode: the confirmation round sends join
        self._rounds: set[asyncio.Task[None]] = set()
        self._opening = asyncio.Lock()
        self._wanted = False  # inside `async with`: a closed or missing client is replaced
        self._failure: tuple[float, AdapterError] | None = None  # the last failed reopen, shared for a moment

    async def __aenter__(self) -> Self:
        await self._open()
        self._wanted = True
        return self

    async def _open(self) -> None:
        self._client = await connect(self.options)
        if self.options.jetstream:
            self._js = self._client.jetstream(timeout=self.options.publish_timeout)
            try:
                await ensure_stream(self._js, self.options)
            except Exception as exc:
                await self._close()
                raise adapter_error(self.options.endpoint_id, f"create stream {self.options.stream}", exc) from exc

    async def _reopen(self, closed: Client | None) -> Client:
        """A new client for one nats-py closed (it never reconnects from CLOSED); sends share one attempt."""
        loop = asyncio.get_running_loop()
        async with self._opening:
            if self._client is closed:
                if self._failure is not None and loop.time() - self._failure[0] < _RETRY_AFTER:
                    raise self._failure[1]
                self._client, self._js, self._round = None, None, None
                try:
                    await self._open()
                except AdapterError as exc:
                    self._failure = (loop.time(), exc)
                    raise
                self._failure = None
        assert self._client is not None
        return self._client

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self._wanted = False
        await self._close()

    async def send(self, envelope: Envelope) -> None:
        client = self._client
        if self._wanted and (client is None or client.is_closed):
            client = await self._reopen(client)
        if client is None or not client.is_connected:
            # fail fast while reconnecting: nats-py would buffer the message and send it after the
            # reconnect, by which time the runtime has given up on it and sends it again
            state = "not open" if client is None else "not connected to the server (reconnecting)"
            raise TransientAdapterError(f"NATS sink {self.options.endpoint_id!r}: {state}")
        headers = outgoing_headers(envelope)
        size = len(envelope.body) + header_block_size(headers)
        if size > client.max_payload:
            raise too_large(f"NATS sink {self.options.endpoint_id!r} ({self.subject})", size, client.max_payload,
                            "max_payload")
        js = self._js
        try:
            if js is None:
                await client.publish(self.subject, envelope.body, reply=outgoing_reply(envelope), headers=headers)
            else:
                ack = await js.publish(self.subject, envelope.body, timeout=self.options.publish_timeout,
                                       headers=headers)
        except Exception as exc:
            raise adapter_error(self.options.endpoint_id, f"publish to {self.subject}", exc) from exc
        if js is None:
            await self._confirmed(client)
        elif ack.stream != self.options.stream:
            # stored, but elsewhere: the endpoint's subject belongs to another stream (a configuration error)
            raise AdapterError(f"NATS sink {self.options.endpoint_id!r}: subject {self.subject!r} is stored by "
                               f"stream {ack.stream!r}, not the configured {self.options.stream!r}")

    async def _confirmed(self, client: Client) -> None:
        """Join the next confirmation round: everything published before it starts is covered by it."""
        round_ = self._round
        if round_ is None:
            round_ = self._round = asyncio.get_running_loop().create_future()
            # a round nobody awaits any more must not warn about an unretrieved exception
            round_.add_done_callback(lambda done: done.cancelled() or done.exception())
            task = asyncio.create_task(self._confirm_round(client, round_))
            self._rounds.add(task)
            task.add_done_callback(self._rounds.discard)
        await asyncio.shield(round_)  # one cancelled sender must not cancel the round for the others

    async def _confirm_round(self, client: Client, round_: asyncio.Future[None]) -> None:
        self._round = None  # sends from now on publish after this round's marker: they join the next one
        try:
            await confirm_written(client, self.options.publish_timeout)
        except Exception as exc:
            if not round_.done():
                round_.set_exception(adapter_error(self.options.endpoint_id, f"publish to {self.subject}", exc))
            return
        if not round_.done():
            round_.set_result(None)

    async def _close(self) -> None:
        client, self._client, self._js = self._client, None, None
        if client is None or client.is_closed:
            return
        with contextlib.suppress(Exception):
            await confirm_written(client, 2.0)
        with contextlib.suppress(Exception):
            await client.close()


def header_block_size(headers: HeaderPairs | None) -> int:
    """Bytes of the header block nats-py writes (`NATS/1.0` line, `name: value` lines, blank line); the server
    counts them with the payload against max_payload."""
    if headers is None:
        return 0
    return 12 + sum(len(name.encode()) + len(value.encode()) + 4 for name, value in headers.items())


def create_sink(config: EndpointConfig) -> NatsSink:
    return NatsSink(sink_options(config))
