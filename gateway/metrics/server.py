"""`/metrics`, `/healthz` and `/readyz` on the operator's address (default 127.0.0.1:9464), and the
read-only xRegistry API under `/registry` when given the registry to serve (gateway/registry_api); with
gateway.yaml `registry.address`, the API also at the root of an address of its own (clients such as xrcg
resolve xids against the host's root).

gateway.yaml `metrics:` may add https (`tls`) and basic auth (`username`, `password`); see access.py. Both
apply to every path, /registry included (the probes may be exempted from auth).
The server binds only the host the address names: 127.0.0.1 unless the operator writes another.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Self

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from gateway.errors import GatewayError
from gateway.sections.access import BasicAuth, challenge, server_context
from gateway.settings import MetricsSettings, RegistrySettings

if TYPE_CHECKING:
    from gateway.registry_api import RegistryView
    from gateway.registry_api.write import RegistryWriter

DEFAULT_ADDRESS = "127.0.0.1:9464"
PROBES = ("/healthz", "/readyz")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def parse_address(text: str) -> tuple[str, int]:
    """`HOST:PORT`, `[IPv6]:PORT` or `:PORT` / `PORT` (host 127.0.0.1: nothing listens beyond this host)."""
    host, _, port = text.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        raise GatewayError(f"metrics address {text!r}: expected HOST:PORT, e.g. {DEFAULT_ADDRESS}") from None
    if not 0 <= number <= 65535:
        raise GatewayError(f"metrics address {text!r}: port {number} is out of range")
    return (host or "127.0.0.1").strip("[]"), number


class MetricsServer:
    def __init__(self, registry: CollectorRegistry, ready: Callable[[], tuple[bool, dict[str, bool]]],
                 address: str = DEFAULT_ADDRESS, access: MetricsSettings | None = None,
                 registry_view: RegistryView | None = None, registry_settings: RegistrySettings | None = None, *,
                 exposition: Callable[[], Awaitable[bytes]] | None = None,
                 extra_routes: Callable[[web.Application], None] | None = None,
                 registry_writer: RegistryWriter | None = None) -> None:
        self.registry = registry
        # `xgate run --workers N`: the supervisor's /metrics is the workers' combined, and its /registry theirs
        self.exposition = exposition
        self.extra_routes = extra_routes
        self.registry_view = registry_view
        self.registry_writer = registry_writer  # PUT/POST/PATCH/DELETE under /registry (registry.write)
        self.registry_settings = registry_settings or RegistrySettings()
        own = self.registry_settings.address if registry_view is not None else None
        self.registry_host, self.registry_port = parse_address(own) if own else ("", 0)
        self.ready = ready
        self.host, self.port = parse_address(address)
        self.access = access or MetricsSettings()
        self._auth = BasicAuth(self.access.username, self.access.password) \
            if self.access.username is not None and self.access.password is not None else None
        self._runners: list[web.AppRunner] = []
        self._runner: web.AppRunner | None = None  # the metrics address's

    @property
    def scheme(self) -> str:
        return "https" if self.access.tls_cert else "http"

    async def _metrics(self, request: web.Request) -> web.Response:
        body = await self.exposition() if self.exposition is not None else generate_latest(self.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, request: web.Request) -> web.Response:
        ready, sources = self.ready()
        body = json.dumps({"ready": ready, "sources": sources}) + "\n"
        return web.Response(text=body, status=200 if ready else 503, content_type="application/json")

    @web.middleware
    async def _authenticate(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        auth = self._auth
        if auth is None or (request.path in PROBES and not self.access.probes_need_auth):
            return await handler(request)
        if not auth.accepts(request.headers.get("Authorization")):
            return web.Response(status=401, text="credentials required\n", headers=challenge())
        return await handler(request)

    def _tls(self) -> ssl.SSLContext | None:
        access = self.access
        if not access.tls_cert or not access.tls_key:
            return None
        try:
            return server_context(access.tls_cert, access.tls_key, access.tls_ca)
        except (OSError, ssl.SSLError) as exc:
            raise GatewayError(f"metrics.tls: cannot load cert {access.tls_cert!r} / key {access.tls_key!r}: "
                               f"{exc}") from exc

    async def _serve(self, app: web.Application, host: str, port: int,
                     context: ssl.SSLContext | None) -> int:
        """Start `app` on host:port; the port it listens on (an ephemeral one learned)."""
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host, port, ssl_context=context)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise GatewayError(f"metrics server cannot listen on {host}:{port}: {exc}") from exc
        self._runners.append(runner)
        if port == 0 and site._server is not None:  # an ephemeral port: learn which one
            sockets = getattr(site._server, "sockets", None) or []
            if sockets:
                return int(sockets[0].getsockname()[1])
        return port

    async def __aenter__(self) -> Self:
        context = self._tls()
        app = web.Application(middlewares=[self._authenticate])
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        if self.registry_view is not None:
            from gateway.registry_api.handlers import add_registry_routes

            base_url = self.registry_settings.base_url
            writer = self.registry_writer
            add_registry_routes(app, self.registry_view, base_url=base_url, writer=writer)
            if self.registry_settings.address:
                own = web.Application(middlewares=[self._authenticate])
                add_registry_routes(own, self.registry_view, prefix="", base_url=base_url, writer=writer)
                self.registry_port = await self._serve(own, self.registry_host, self.registry_port, context)
        if self.extra_routes is not None:
            self.extra_routes(app)
        try:
            self.port = await self._serve(app, self.host, self.port, context)
            self._runner = self._runners[-1]
        except GatewayError:
            await self.__aexit__()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()
        self._runner = None
