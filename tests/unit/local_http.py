"""A stdlib HTTP server on 127.0.0.1 for tests that fetch (remote references, registry sources)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from gateway.loader.sources import RegistrySource


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """`handler` on an ephemeral port, answered from a thread; yields the base URL, shuts down on exit."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True  # a request still hanging at shutdown must not keep the test process
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@dataclass
class SourceServer:
    """A registry source (gateway.yaml `sources:`) as a test serves it: the body every GET answers, or an error
    status; with `etag`, a 304 to a request that names it; each request kept as (path, If-None-Match, auth)."""

    base: str = ""
    body: bytes = b"{}"
    etag: str | None = None
    status: int = 200
    requests: list[tuple[str, str | None, str | None]] = field(default_factory=list)

    def serve(self, doc: Any) -> None:
        self.body = json.dumps(doc).encode()

    def source(self, interval: float = 30, **auth: Any) -> RegistrySource:
        """The gateway.yaml `sources:` entry for it."""
        return RegistrySource(self.base + "/registry", interval, **auth)


@contextmanager
def source_server() -> Iterator[SourceServer]:
    """A SourceServer answering on 127.0.0.1 (its URL in `base`) until the block ends."""
    state = SourceServer()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests.append((self.path, self.headers.get("If-None-Match"), self.headers.get("Authorization")))
            if state.status != 200:
                self.send_error(state.status)
                return
            if state.etag is not None and self.headers.get("If-None-Match") == state.etag:
                self.send_response(304)
                self.send_header("ETag", state.etag)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(state.body)))
            if state.etag is not None:
                self.send_header("ETag", state.etag)
            self.end_headers()
            self.wfile.write(state.body)

        def log_message(self, *args: Any) -> None:
            pass

    with serving(Handler) as base:
        state.base = base
        yield state
