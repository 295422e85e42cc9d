"""`/metrics`, `/healthz` and `/readyz` on the operator's address (default 127.0.0.1:9464)."""

from __future__ import annotations

import json
from typing import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

DEFAULT_ADDRESS = "127.0.0.1:9464"


def parse_address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return (host or "127.0.0.1").strip("[]"), int(port)


class MetricsServer:
    def __init__(self, registry: CollectorRegistry, ready: Callable[[], tuple[bool, dict[str, bool]]],
                 address: str = DEFAULT_ADDRESS) -> None:
        self.registry = registry
        self.ready = ready
        self.host, self.port = parse_address(address)
        self._runner: web.AppRunner | None = None

    async def _metrics(self, request: web.Request) -> web.Response:
        body = generate_latest(self.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, request: web.Request) -> web.Response:
        ready, sources = self.ready()
        body = json.dumps({"ready": ready, "sources": sources}) + "\n"
        return web.Response(text=body, status=200 if ready else 503, content_type="application/json")

    async def __aenter__(self) -> MetricsServer:
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        if self.port == 0 and site._server is not None:  # an ephemeral port: learn which one
            sockets = getattr(site._server, "sockets", None) or []
            if sockets:
                self.port = sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
