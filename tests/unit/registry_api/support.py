"""Helpers of the registry API tests: ask the API without a network, or through a real server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
from multidict import MultiDict
from prometheus_client import CollectorRegistry

from gateway.loader import Snapshot, load_snapshot
from gateway.metrics.server import MetricsServer
from gateway.registry_api import RegistryView
from gateway.registry_api.handlers import answer
from gateway.settings import MetricsSettings, RegistrySettings
from tests.conftest import SHARED_CONFORMANCE

BASE = "http://registry.test/registry"
SPEC = SHARED_CONFORMANCE / "xregistry" / "spec"
T = TypeVar("T")


def ask(view: RegistryView, path: str = "", **flags: str | list[str]) -> tuple[int, Any]:
    """(status, JSON body) of GET /registry<path>?<flags> answered in-process (no socket)."""
    query: MultiDict[str] = MultiDict()
    for name, value in flags.items():
        for item in value if isinstance(value, list) else [value]:
            query.add(name, item)
    response = answer(view.state, BASE, path, query)
    body = response.body
    assert isinstance(body, bytes) or body is None
    if response.content_type == "application/json":
        return response.status, json.loads(body or b"null")
    return response.status, body


def ok(view: RegistryView, path: str = "", **flags: str | list[str]) -> Any:
    status, body = ask(view, path, **flags)
    assert status == 200, body
    return body


def view_of(directory: Path) -> tuple[Snapshot, RegistryView]:
    snapshot = load_snapshot([directory])
    return snapshot, RegistryView(snapshot)


def run(scenario: Callable[[], Awaitable[T]]) -> T:
    async def bounded() -> T:
        async with asyncio.timeout(30):
            return await scenario()
    return asyncio.run(bounded())


def serving(view: RegistryView, access: MetricsSettings | None = None,
            registry: RegistrySettings | None = None) -> MetricsServer:
    return MetricsServer(CollectorRegistry(), lambda: (True, {}), "127.0.0.1:0", access, view, registry)


async def http(server: MetricsServer, method: str, path: str, headers: dict[str, str] | None = None,
               port: int | None = None) -> tuple[int, dict[str, str], bytes]:
    """One request to the metrics address (or `port`, the registry's own address)."""
    async with aiohttp.ClientSession() as session, session.request(
            method, f"http://127.0.0.1:{port or server.port}{path}", headers=headers,
            allow_redirects=False) as response:
        return response.status, dict(response.headers), await response.read()
