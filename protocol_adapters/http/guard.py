"""The webhook's aiohttp server with the limits a public listener needs.

- `header_timeout`: a connection must deliver a complete request head within it, counted from its opening
  or from the previous answer (aiohttp's keep-alive timer, which closes a connection still waiting for a
  request head when it fires; so partial headers and idle keep-alive connections both end there).
- `max_connections`: one more connection is answered 503 and closed before anything is read from it.
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
# characters of a parse error kept in the log line (it may quote what the client sent)
ERROR_CHARS = 160


class GuardedServer(web.Server):
    def __init__(self, handler: Any, *, endpoint_id: str, header_timeout: float, max_connections: int,
                 **kwargs: Any) -> None:
        super().__init__(handler, keepalive_timeout=header_timeout, **kwargs)
        self.endpoint_id = endpoint_id
        self.max_connections = max_connections
        self.open_connections = 0
        self.refused = 0  # connections turned away over max_connections
        self.malformed = 0  # requests aiohttp could not parse

    def __call__(self) -> RequestHandler:
        return _GuardedHandler(self, loop=self._loop, **self._kwargs)

    def connection_made(self, handler: RequestHandler, transport: asyncio.Transport) -> None:
        super().connection_made(handler, transport)
        self.open_connections += 1
        if self.open_connections > self.max_connections:
            self.refused += 1
            transport.write(BUSY)
            handler.force_close()  # the transport sends the answer, then closes

    def connection_lost(self, handler: RequestHandler, exc: BaseException | None = None) -> None:
        self.open_connections -= 1
        super().connection_lost(handler, exc)


class _GuardedHandler(RequestHandler):
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
