"""The NATS connection both roles share: connecting (fast first failure, then reconnecting forever with
backoff and jitter), confirming what was published, and the JetStream stream both may create."""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable
from typing import Any

import nats.errors
import nats.js.errors
from nats.aio.client import Client, Server
from nats.js import JetStreamContext

from gateway import backoff
from gateway.errors import AdapterError
from protocol_adapters.nats.errors import adapter_error, is_retriable
from protocol_adapters.nats.mapping import HeaderKeepingClient
from protocol_adapters.nats.options import NatsOptions
from protocol_adapters.nats.tls_probe import refusal_reason
from protocol_adapters.tls import tls_refusal

BACKOFF_INITIAL = 0.1


ErrorCallback = Callable[[Exception], Awaitable[None]]


async def connect(options: NatsOptions, error_cb: ErrorCallback | None = None) -> Client:
    """Connect once (two quick attempts: an unreachable broker fails fast and retriably), then let the
    client reconnect forever with exponential backoff and jitter after a connection is lost."""
    ceiling = options.reconnect_wait_max

    def next_server(servers: list[Server], _info: dict[str, Any]) -> tuple[Server | None, float]:
        server = min(servers, key=lambda s: s.reconnects)
        return server, backoff.delay_at(server.reconnects, BACKOFF_INITIAL, ceiling)

    # nats-py reports a refused TLS handshake to the error callback and then never returns from connect
    # (closing the broken TLS transport hangs): the first refusal ends the attempt here instead
    refused: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def quiet(exc: Exception) -> None:
        # nats-py logs every reconnect attempt at ERROR by default; callers count what matters
        if not refused.done() and (reason := tls_refusal(exc)) is not None:
            refused.set_result(reason)
        if error_cb is not None:
            await error_cb(exc)

    client = HeaderKeepingClient()
    settings: dict[str, Any] = {
        "servers": list(options.servers), "name": f"xgate-{options.endpoint_id}",
        "connect_timeout": options.connect_timeout, "reconnect_time_wait": 0.2,
        "max_reconnect_attempts": 1, "error_cb": quiet, "reconnect_to_server_handler": next_server,
        "tls": await asyncio.to_thread(options.ssl_context), "user": options.username, "password": options.password,
        "token": options.token, "user_credentials": options.creds_file, "nkeys_seed": options.nkey_seed_file,
    }
    where = ", ".join(options.servers)
    failure = await _first_connect(client, settings, refused, options.connect_timeout)
    if failure is None:
        refused.cancel()
        # the limit above was for the first connect only: from now on, never give up
        client.options["max_reconnect_attempts"] = -1
        return client
    reason = refused.result() if refused.done() else None
    if reason is None and settings["tls"] is not None and is_retriable(failure):
        # a refusal can reach nats-py as a plain reset (tls_probe.py): ask the server once more, quietly
        reason = await refusal_reason(options.servers, settings["tls"], min(options.connect_timeout, 10.0))
    if reason is not None:
        failure = AdapterError(f"NATS endpoint {options.endpoint_id!r}: TLS handshake with {where} failed: {reason}")
    with contextlib.suppress(Exception):
        async with asyncio.timeout(options.connect_timeout):
            await client.close()
    raise adapter_error(options.endpoint_id, f"connect to {where}", failure) from failure


async def _first_connect(client: Client, settings: dict[str, Any], refused: asyncio.Future[str],
                         timeout: float) -> BaseException | None:
    """nats-py's connect, abandoned as soon as `refused` is set; why it failed, or None once connected."""
    connecting = asyncio.ensure_future(client.connect(**settings))
    either: set[asyncio.Future[Any]] = {connecting, refused}
    try:
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not connecting.done():  # refused, or our caller was cancelled
            connecting.cancel()
            await asyncio.wait({connecting}, timeout=timeout)
    if not connecting.done() or connecting.cancelled():
        return TimeoutError("the connection attempt did not finish")
    return connecting.exception()


async def confirm_written(client: Client, timeout: float) -> None:
    """Return once the server has processed everything published on `client` so far.

    nats-py's flush() writes its PING straight to the socket, ahead of commands still waiting in its
    pending buffer, so its PONG alone proves nothing about them: first queue a marker for the client's
    flusher task, which resolves it after writing everything queued before it.
    """
    queue = client._flush_queue
    if queue is None or client.is_closed:
        raise nats.errors.ConnectionClosedError
    marker: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    await asyncio.wait_for(queue.put(marker), timeout)
    await asyncio.wait_for(marker, timeout)
    await client.flush(timeout=max(1, math.ceil(timeout)))


async def ensure_stream(js: JetStreamContext, options: NatsOptions) -> None:
    """The stream exists afterwards (created with `stream_subjects` when missing and allowed)."""
    assert options.stream is not None
    try:
        await js.stream_info(options.stream)
        return
    except nats.js.errors.NotFoundError:
        if not options.create_stream:
            raise nats.js.errors.BadRequestError(
                description=f"stream {options.stream!r} does not exist and createstream is false") from None
    try:
        await js.add_stream(name=options.stream, subjects=list(options.stream_subjects))
    except nats.js.errors.BadRequestError as refused:
        try:  # created meanwhile by another replica?
            await js.stream_info(options.stream)
        except nats.js.errors.NotFoundError:
            raise refused from None  # e.g. its subjects overlap another stream's
