"""The webhook's aiohttp server with the limits a public listener needs.

- `header_timeout`: a connection must deliver a complete request head within it, counted from its opening
  or from the previous answer (aiohttp's keep-alive timer, which closes a connection still waiting for a
  request head when it fires; so partial headers and idle keep-alive connections both end there).
- `max_connections`: when that many are open, a new connection takes the place of the one idle longest
  (open, and not in a request: between keep-alive requests, or sending a head slowly); with none idle, it is
  answered 503 and closed before anything is read from it. Idle connections held open in bulk cannot keep
  real requests out (issue 35, item 8).
- `max_per_client`: connections from one client address at once; one more is answered 503 and closed.
- `max_request_bytes`: the bytes one request may take on the wire, head and body framing included. A
  chunked body's size lines and chunk extensions are not body, so `maxbodysize` alone did not bound them
  (a 20 MB chunk extension was read to its end); past this, the request is answered 413 and the connection
  closed.
- A request aiohttp cannot parse (`Content-Length: -1`, a broken head) is answered 400 by aiohttp and costs
  one log line here, not a traceback that repeats the client's bytes.

The body timeout lives in the request handler (source.py), which reads the body.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestHandler

log = logging.getLogger("xgate.http")
BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
TOO_LARGE = b"HTTP/1.1 413 Request Entity Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
# characters of a parse error kept in the log line (it may quote what the client sent)
ERROR_CHARS = 160


class GuardedServer(web.Server):
    def __init__(self, handler: Any, *, endpoint_id: str, header_timeout: float, max_connections: int,
                 max_per_client: int | None = None, max_request_bytes: int | None = None, **kwargs: Any) -> None:
        super().__init__(self._in_request(handler), keepalive_timeout=header_timeout, **kwargs)
        self.endpoint_id = endpoint_id
        self.max_connections = max_connections
        self.max_per_client = max_per_client or max_connections
        self.open_connections = 0
        self.refused = 0  # connections turned away (no idle one to take the place of, or over max_per_client)
        self.evicted = 0  # idle connections closed to make room
        self.malformed = 0  # requests aiohttp could not parse
        self.max_request_bytes = max_request_bytes
        self.oversized = 0  # requests cut off past max_request_bytes
        self.wire_bytes: dict[RequestHandler, int] = {}  # per connection, since its last request ended
        # open connections in the order they last became idle (dicts keep insertion order), with their client
        self._idle_since: dict[RequestHandler, None] = {}
        self._client: dict[RequestHandler, str] = {}
        self._per_client: dict[str, int] = {}

    def __call__(self) -> RequestHandler:
        return _GuardedHandler(self, loop=self._loop, **self._kwargs)

    def _in_request(self, handler: Any) -> Any:
        """The request handler, with its connection marked busy while it runs (no eviction meanwhile)."""
        async def handle(request: web.BaseRequest) -> web.StreamResponse:
            connection = request.protocol
            self._idle_since.pop(connection, None)
            try:
                return await handler(request)  # type: ignore[no-any-return]
            finally:
                self.wire_bytes.pop(connection, None)
                if connection in self._client:
                    self._idle_since[connection] = None  # idle again: the newest, evicted last
        return handle

    def connection_made(self, handler: RequestHandler, transport: asyncio.Transport) -> None:
        super().connection_made(handler, transport)
        self.open_connections += 1
        peer = transport.get_extra_info("peername")
        client = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
        self._client[handler] = client
        self._per_client[client] = self._per_client.get(client, 0) + 1
        if self._per_client[client] > self.max_per_client or \
                self.open_connections > self.max_connections and not self._evict_one():
            self.refused += 1
            transport.write(BUSY)
            handler.force_close()  # the transport sends the answer, then closes
            return
        self._idle_since[handler] = None

    def _evict_one(self) -> bool:
        """Close the connection idle longest to make room; False when every connection is in a request."""
        for connection in self._idle_since:
            del self._idle_since[connection]
            self.evicted += 1
            connection.force_close()
            return True
        return False

    def connection_lost(self, handler: RequestHandler, exc: BaseException | None = None) -> None:
        self.open_connections -= 1
        self._idle_since.pop(handler, None)
        self.wire_bytes.pop(handler, None)
        client = self._client.pop(handler, None)
        if client is not None:
            left = self._per_client.get(client, 1) - 1
            if left:
                self._per_client[client] = left
            else:
                self._per_client.pop(client, None)
        super().connection_lost(handler, exc)


class _GuardedHandler(RequestHandler):
    def data_received(self, data: bytes) -> None:
        server = self._manager
        if isinstance(server, GuardedServer) and server.max_request_bytes is not None:
            taken = server.wire_bytes.get(self, 0) + len(data)
            server.wire_bytes[self] = taken
            if taken > server.max_request_bytes:
                server.oversized += 1
                server.wire_bytes.pop(self, None)
                if self.transport is not None:
                    self.transport.write(TOO_LARGE)
                self.force_close()
                return
        super().data_received(data)

    def log_exception(self, *args: Any, **kw: Any) -> None:
        exc = kw.get("exc_info")
        server = self._manager
        if isinstance(exc, HttpProcessingError) and isinstance(server, GuardedServer):
            server.malformed += 1
            peer = args[1] if len(args) > 1 else "?"
            text = " ".join(str(exc.message or exc).split())  # one line, whatever the client sent
            log.warning("HTTP source %r: malformed request from %s answered 400: %s", server.endpoint_id, peer,
                        repr(text[:ERROR_CHARS])[1:-1])
            return
        super().log_exception(*args, **kw)
