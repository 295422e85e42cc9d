"""Helpers of the write API tests: a config directory with operator files, and a gateway around it (view,
reloader, engine without routes, write API) served on 127.0.0.1, reloading as `xgate run` does."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from prometheus_client import CollectorRegistry

from gateway.compiler import compile_registry
from gateway.loader import load_snapshot
from gateway.loader.fetch import fetcher_for
from gateway.loader.sources import RegistrySources
from gateway.metrics.server import MetricsServer
from gateway.registry_api import RegistryView
from gateway.registry_api.access import WriteAccess
from gateway.registry_api.write import RegistryWriter
from gateway.runtime.engine import Engine
from gateway.runtime.reload import Reloader
from gateway.sections.registry import WriteSettings
from gateway.settings import load_settings
from gateway.testing import memory

KEY = "s3cret-key"
AUTH = {"X-API-Key": KEY}
CE = "CloudEvents/1.0"
SPEC = "https://github.com/xregistry/spec/blob/main/core/spec.md#"


def message(event_type: str, required: str = "v") -> dict[str, Any]:
    return {"envelope": CE, "envelopemetadata": {"type": {"value": event_type}},
            "dataschemaformat": "JsonSchema/draft-07",
            "dataschema": {"type": "object", "required": [required], "properties": {required: {"type": "number"}}}}


def operator_files(config: Path) -> Path:
    """What an operator dropped: a message group and a schema group (read-only through the API)."""
    config.mkdir(parents=True, exist_ok=True)
    (config / "operator.xreg.json").write_text(json.dumps({
        "specversion": "1.0-rc4",
        "messagegroups": {"ops": {"envelope": CE, "messages": {"ping": message("com.example.ping")}}},
        "schemagroups": {"ops.schemas": {"schemas": {"s": {"format": "JsonSchema/draft-07",
                                                           "versions": {"1": {"schema": {"type": "object"}}}}}}}}))
    return config


@dataclass
class Gateway:
    config: Path
    view: RegistryView
    reloader: Reloader
    engine: Engine
    server: MetricsServer

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.port}/registry"

    async def call(self, method: str, path: str, body: Any = None, *, headers: dict[str, str] | None = None,
                   raw: bytes | None = None, auth: bool = True) -> tuple[int, dict[str, str], Any]:
        sent = {**(AUTH if auth else {}), **(headers or {})}
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        if data is not None and raw is None:
            sent.setdefault("Content-Type", "application/json")
        async with aiohttp.ClientSession() as session, session.request(
                method, self.base + path, data=data, headers=sent, allow_redirects=False) as response:
            payload = await response.read()
            kind = response.headers.get("Content-Type", "")
            parsed = json.loads(payload) if payload and kind.startswith("application/json") else payload
            return response.status, dict(response.headers), parsed


@asynccontextmanager
async def gateway(config: Path, write: WriteSettings | None = None) -> AsyncIterator[Gateway]:
    # as `xgate run` starts: settings first, registry sources fetched once, then the documents
    settings, _ = load_settings(config)
    fetcher = fetcher_for(settings.remote)
    sources = RegistrySources()
    sources.configure(settings.sources)
    sources.start(fetcher)
    snapshot = load_snapshot([config], fetcher=fetcher, documents=sources.documents())
    engine = Engine([], compile_registry(snapshot.registry, snapshot.digest), create_source=memory.create_source,
                    create_sink=memory.create_sink)
    view = RegistryView(snapshot)
    reloader = Reloader(config, engine, snapshot, settings, on_snapshot=view.update, sources=sources)
    writer = RegistryWriter(config, view, WriteAccess(write or WriteSettings(apikey=KEY)), reloader,
                            engine.adapter_problems)
    server = MetricsServer(CollectorRegistry(), lambda: (True, {}), "127.0.0.1:0", None, view, None,
                           registry_writer=writer)
    async with server:
        yield Gateway(config, view, reloader, engine, server)


def basic(username: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()}


def with_gateway(tmp_path: Path, steps: Any) -> None:
    """Run `steps(gateway)` against a gateway on the operator's files, with writes on (the default key)."""
    from tests.unit.registry_api.support import run

    config = operator_files(tmp_path / "config")

    async def main() -> None:
        async with gateway(config) as gw:
            await steps(gw)
    run(main)
