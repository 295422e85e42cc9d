"""HttpSource: a webhook ingress. Each accepted request becomes one Envelope; the answer waits for the runtime.

HTTP is push, so there is no broker to hold unacknowledged messages: the request itself is held open until
the runtime calls `ack` (202, or 422 when the message was rejected, with the verdict as JSON) or `nack`
(503 + Retry-After). The client's retry of a 5xx is the redelivery: at-least-once as far as the client
retries. `respond: receipt` answers 202 as soon as a request is queued instead (at-most-once).

A CloudEvents batch (`application/cloudevents-batch+json`) stays one envelope: the core judges every event.
Requests outside the uri's path get 404; API-key failures 401; bodies over `maxbodysize` 413; a body not
received within `bodytimeout` 408; when `maxinflight` requests are unacknowledged, a new one waits up to
`queuetimeout`, then gets 503. Header timeout, connection limit and malformed requests: guard.py.
"""

from __future__ import annotations

import asyncio
import errno
import hmac
from collections.abc import AsyncIterator
from enum import Enum
from types import TracebackType

from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError

from gateway.envelope import Envelope
from gateway.errors import adapter_failure
from protocol_adapters.base import Delivery, EndpointConfig
from protocol_adapters.http.guard import GuardedServer
from protocol_adapters.http.mapping import allowed_path, envelope_from_request, error_body, verdict_body
from protocol_adapters.http.options import RESPOND_RECEIPT, HttpSourceOptions, source_options

JSON = "application/json"
CHUNK = 64 * 1024
# what a request may take on the wire beyond `maxbodysize`: its head and the framing of a chunked body
WIRE_SLACK = 1024 * 1024


class _Signal(Enum):
    NACK = "delivery failed; retry"
    TIMEOUT = "no verdict in time; retry"
    CLOSED = "shutting down; retry"


_Outcome = Delivery | _Signal | None


class _Handle:
    """The held request of one envelope: `settle` answers it once and frees its in-flight slot."""

    __slots__ = ("reply", "settled")

    def __init__(self, reply: asyncio.Future[_Outcome]) -> None:
        self.reply = reply
        self.settled = False


def _answer(status: int, body: bytes, **headers: str) -> web.Response:
    return web.Response(status=status, body=body, content_type=JSON, headers=headers or None)


def _retry_later(message: str) -> web.Response:
    return _answer(503, error_body(message), **{"Retry-After": "1"})


class HttpSource:
    def __init__(self, options: HttpSourceOptions) -> None:
        self.options = options
        self.port: int | None = None  # the bound port, once entered (useful with port 0)
        self._runner: web.ServerRunner | None = None
        self._slots = asyncio.Semaphore(options.max_in_flight)
        # the semaphore bounds it (one extra place for the stop wake-up); requests that timed out while
        # queued no longer hold a slot, so a full queue is still possible and answered 503
        self._queue: asyncio.Queue[Envelope | None] = asyncio.Queue(options.max_in_flight + 1)
        self._pending: set[_Handle] = set()
        self._stopping = False
        self._allow = ", ".join(sorted(options.methods | {"OPTIONS", "HEAD"}))

    async def __aenter__(self) -> HttpSource:
        options = self.options
        # no access log: nothing is logged per message
        server = GuardedServer(self._handle, endpoint_id=options.endpoint_id, header_timeout=options.header_timeout,
                               max_connections=options.max_connections, max_per_client=options.max_per_client,
                               max_request_bytes=options.max_body_size + WIRE_SLACK, access_log=None)
        runner = web.ServerRunner(server, shutdown_timeout=5.0)
        await runner.setup()
        site = web.TCPSite(runner, options.host, options.port, ssl_context=options.ssl,
                           reuse_port=options.reuse_port or None)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            # a port in use may come free (a previous process ending); a bad address or no permission will not
            raise adapter_failure(f"HTTP source {options.endpoint_id!r} cannot listen on {options.host}:{options.port}: "
                                  f"{exc}", retriable=exc.errno == errno.EADDRINUSE) from exc
        self._runner = runner
        self.port = site.port
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()
        # held requests are answered 503 so their clients retry them elsewhere or later
        for handle in list(self._pending):
            self._settle(handle, _Signal.CLOSED)
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    def __aiter__(self) -> AsyncIterator[Envelope]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Envelope]:
        queue = self._queue
        while True:
            if self._stopping and queue.empty():
                return
            envelope = await queue.get()
            # None is the stop wake-up; a settled request was already answered (timeout): its client retries
            if envelope is not None and not envelope.ack.settled:
                yield envelope

    async def ack(self, envelope: Envelope, delivery: Delivery | None = None) -> None:
        if isinstance(envelope.ack, _Handle):
            self._settle(envelope.ack, delivery)

    async def nack(self, envelope: Envelope) -> None:
        # nothing to put back: the 503 makes the client send it again
        if isinstance(envelope.ack, _Handle):
            self._settle(envelope.ack, _Signal.NACK)

    async def stop(self) -> None:
        if not self._stopping:
            self._stopping = True
            try:
                self._queue.put_nowait(None)
            except asyncio.QueueFull:  # an iterator is not waiting then, and the check at its top ends it
                pass

    def _settle(self, handle: _Handle, outcome: _Outcome) -> None:
        if handle.settled:
            return
        handle.settled = True
        self._pending.discard(handle)
        self._slots.release()
        if not handle.reply.done():
            handle.reply.set_result(outcome)

    # -- the request handler --------------------------------------------------------------------------

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        options = self.options
        if not allowed_path(request.path, options.base_path):
            return _answer(404, error_body("no such endpoint"))
        method = request.method
        if method == "OPTIONS":
            return self._handshake(request)
        if method == "HEAD":
            return web.Response(status=503 if self._stopping else 200, headers={"Allow": self._allow})
        if method not in options.methods:
            return _answer(405, error_body(f"method {method} not allowed"), Allow=self._allow)
        if self._stopping:
            return _retry_later("not accepting requests")
        if options.api_key is not None and not self._authorized(request):
            return _answer(401, error_body("missing or invalid API key"))
        if request.content_length is not None and request.content_length > options.max_body_size:
            return self._too_large()
        if request.headers.get("Expect", "").lower() == "100-continue" and request.version >= (1, 1):
            # only now, after the checks above, does the client send the body
            await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        try:
            async with asyncio.timeout(options.body_timeout):
                body = await self._read(request)
        except TimeoutError:  # a body slower than the limit (or shorter than its Content-Length) holds nothing
            request.content.feed_eof()
            response = _answer(408, error_body(f"body not received within {options.body_timeout:g} s"))
            response.force_close()
            return response
        except (RequestPayloadError, ConnectionError) as exc:  # a coding that does not decode; a client gone
            # mark the body read: aiohttp would otherwise drain the failed stream and log the error again
            request.content.feed_eof()
            response = _answer(400, error_body(f"unreadable body: {exc}"))
            response.force_close()
            return response
        if body is None:
            return self._too_large()
        return await self._admit(request, body)

    async def _admit(self, request: web.BaseRequest, body: bytes) -> web.StreamResponse:
        options = self.options
        try:
            async with asyncio.timeout(options.queue_timeout):
                await self._slots.acquire()
        except TimeoutError:
            return _retry_later(f"{options.max_in_flight} requests in flight; retry")
        handle = _Handle(asyncio.get_running_loop().create_future())
        if self._stopping:
            self._slots.release()
            return _retry_later("not accepting requests")
        envelope = envelope_from_request(method=request.method, path=request.path,
                                         raw_query=request.rel_url.raw_query_string,
                                         raw_headers=request.raw_headers, body=body,
                                         endpoint=options.endpoint_id, remote=request.remote,
                                         credential=options.api_key, handle=handle)
        try:
            self._queue.put_nowait(envelope)
        except asyncio.QueueFull:  # requests that timed out while queued still fill it: the runtime is stuck
            self._slots.release()
            return _retry_later(f"{options.max_in_flight} requests queued; retry")
        self._pending.add(handle)
        if options.respond == RESPOND_RECEIPT:
            return _answer(202, b"{}", **self._private())
        try:
            async with asyncio.timeout(options.response_timeout):
                outcome = await handle.reply
        except TimeoutError:
            self._settle(handle, _Signal.TIMEOUT)
            outcome = _Signal.TIMEOUT
        if isinstance(outcome, _Signal):
            return _retry_later(outcome.value)
        status = 422 if outcome is not None and outcome.rejected else 202
        return _answer(status, verdict_body(outcome), **self._private())

    def _private(self) -> dict[str, str]:
        # CloudEvents webhook 3.2: answers to a request with a token in its URI are not cached
        key = self.options.api_key
        return {"Cache-Control": "private"} if key is not None and key.where == "query" else {}

    def _too_large(self) -> web.Response:
        # the connection is not reused: aiohttp drains the unread rest (briefly) and closes it
        response = _answer(413, error_body(f"body larger than {self.options.max_body_size} bytes"))
        response.force_close()
        return response

    async def _read(self, request: web.BaseRequest) -> bytes | None:
        """The body, or None past the limit (counted after decompression, so a zip bomb stops early)."""
        limit = self.options.max_body_size
        body = bytearray()
        while chunk := await request.content.read(CHUNK):
            body += chunk
            if len(body) > limit:
                return None
        return bytes(body)

    def _authorized(self, request: web.BaseRequest) -> bool:
        key = self.options.api_key
        assert key is not None
        if key.where == "query":
            presented = request.rel_url.query.get(key.name)
        else:
            presented = request.headers.get(key.name)
            if presented is not None and key.name.lower() == "authorization" and presented[:7].lower() == "bearer ":
                # the CloudEvents webhook spec carries tokens as `Authorization: Bearer <token>`
                presented = presented[7:].strip()
        if presented is None:
            return False
        return hmac.compare_digest(presented.encode("utf-8", "surrogateescape"), key.value.encode("utf-8"))

    def _handshake(self, request: web.BaseRequest) -> web.Response:
        """CORS-free OPTIONS, and the CloudEvents webhook validation handshake (http-webhook.md 4)."""
        headers = {"Allow": self._allow}
        origin = request.headers.get("WebHook-Request-Origin")
        if origin is not None:
            allowed = self.options.allowed_origins
            if allowed is not None and origin.strip().lower() not in allowed:
                return _answer(403, error_body(f"origin {origin!r} is not allowed"), **headers)
            headers["WebHook-Allowed-Origin"] = origin
            headers["WebHook-Allowed-Rate"] = "*"
        return web.Response(status=200, headers=headers)


def create_source(config: EndpointConfig) -> HttpSource:
    return HttpSource(source_options(config))
