"""The JSON-Schema-Test-Suite's `remotes/` folder served over HTTP on 127.0.0.1, for its remote-`$ref` cases.

The suite names that server http://localhost:1234. The tests serve it on a free port instead (1234 may be
taken on a shared machine) and rewrite the prefix to the served address in the schemas they compile and in
every document served here alike, so `$id`s and `$ref`s keep pointing at each other.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SUITE_REMOTE = "http://localhost:1234"


@contextmanager
def serve_remotes(folder: Path) -> Iterator[str]:
    """Serve `folder` on 127.0.0.1 (a free port); yields the base URL that replaces SUITE_REMOTE."""
    root = folder.resolve()
    base: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = (root / self.path.split("?", 1)[0].lstrip("/")).resolve()
            if not path.is_relative_to(root) or not path.is_file():
                self.send_error(404)
                return
            data = path.read_text("utf-8").replace(SUITE_REMOTE, base[0]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    base.append(f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield base[0]
    finally:
        server.shutdown()
        server.server_close()
