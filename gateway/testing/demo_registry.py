"""The registry's write side in `make demo`: a CI job publishes a contract, everyone hears of it.

When the demo config's gateway.yaml has `registry.write` and `registry.events`, the demo serves the write API
beside /metrics (on a temporary copy of the config directory, so that config/demo itself never changes),
PUTs a new message group with the API key a few seconds into the traffic and PATCHes it later, as a CI
pipeline would, and reads the change events from the events endpoint with its own adapter. The summary
shows the last change event and its verdict under the shipped `io.xregistry.events` definitions
(config/registry-events), which the demo's registry-events.xreg.json carries.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import aiohttp

from gateway.compiler import compile_registry
from gateway.envelope import Envelope
from gateway.loader import load_snapshot
from gateway.registry_api import RegistryView
from gateway.registry_api.access import APIKEY_HEADER, WriteAccess
from gateway.registry_api.tree import now_text
from gateway.registry_api.write import RegistryWriter
from gateway.routes.resolve import endpoint_config
from gateway.runtime.change_events import ChangePublisher
from gateway.runtime.engine import Engine
from gateway.runtime.reload import Reloader
from gateway.settings import Settings
from protocol_adapters import registry as adapters

CONTRACT = "demo.contracts"


def _contract(description: str) -> dict[str, Any]:
    return {"description": description, "envelope": "CloudEvents/1.0", "messages": {"com.example.shipment": {
        "envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "com.example.shipment"}},
        "dataschemaformat": "JsonSchema/draft-07",
        "dataschema": {"type": "object", "required": ["order"], "properties": {"order": {"type": "string"}}}}}}


class DemoRegistry:
    def __init__(self, config: str, settings: Settings, engine: Engine) -> None:
        self.enabled = settings.registry.write is not None and settings.registry.events is not None
        self.settings, self.engine = settings, engine
        self.view: RegistryView | None = None
        self.writer: RegistryWriter | None = None
        self.publisher: ChangePublisher | None = None
        self.reloader: Reloader | None = None  # the copy's reloader (the console reads its last reload)
        self.received: list[tuple[dict[str, Any], str]] = []  # (event, its verdict)
        self.error: str | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._stop = asyncio.Event()
        self._since = now_text()
        self._copy: Path | None = None
        if self.enabled:
            self._prepare(config)

    def _prepare(self, config: str) -> None:
        write, events = self.settings.registry.write, self.settings.registry.events
        assert write is not None and events is not None
        self._copy = Path(tempfile.mkdtemp(prefix="xgate-demo-registry-")) / "config"
        shutil.copytree(config, self._copy)
        snapshot = load_snapshot([self._copy])
        self.view = RegistryView(snapshot)
        reloader = self.reloader = Reloader(self._copy, self.engine, snapshot, self.settings,
                                            on_snapshot=self.view.update)
        self.writer = RegistryWriter(self._copy, self.view, WriteAccess(write), reloader, self.engine.adapter_problems)
        self.events_config = endpoint_config(snapshot.registry, events.endpoint, self.settings)
        self.publisher = ChangePublisher(self.events_config, adapters.create_sink, None, events.max_entity_bytes)
        self.view.listener = self.publisher.listen
        shipped = load_snapshot([self._copy / "registry-events.xreg.json"]) \
            if (self._copy / "registry-events.xreg.json").is_file() else snapshot
        self.judge = compile_registry(shipped.registry)

    def start(self, base: str) -> None:
        if not self.enabled or self.publisher is None:
            return
        self.base = base
        self.publisher.base = base
        self._tasks = [asyncio.create_task(self.publisher.run(self._stop)), asyncio.create_task(self._read()),
                       asyncio.create_task(self._publish_contracts())]

    async def _read(self) -> None:
        """The events endpoint read as any consumer would (a group of its own, from the start of the topic)."""
        options = {**self.events_config.options, "consumergroup": f"xgate-demo-registry-{self._since}",
                   "autooffsetreset": "earliest"}
        config = type(self.events_config)(self.events_config.endpoint_id, self.events_config.protocol,
                                          self.events_config.uris, options, (), self.events_config.username,
                                          self.events_config.password, self.events_config.tls)
        try:
            async with adapters.create_source(config) as source:
                async for envelope in source:
                    await source.ack(envelope)
                    event = json.loads(bytes(envelope.body))
                    if str(event.get("time", "")) >= self._since:  # this run's, not an earlier demo's
                        self.received.append((event, self._verdict(envelope)))
        except Exception as exc:
            self.error = f"reading {config.endpoint_id}: {exc}"

    def _verdict(self, envelope: Envelope) -> str:
        envelope.endpoint = None  # judged by the message group alone
        verdict = self.judge.judge_fully(envelope)
        return f"{verdict.outcome.value} as {verdict.messageid}" if verdict.messageid else verdict.outcome.value

    async def _publish_contracts(self) -> None:
        """A CI job: PUT a new contract, then PATCH its description, with the API key."""
        write = self.settings.registry.write
        assert write is not None
        headers = {APIKEY_HEADER: write.apikey or ""}
        url = f"{self.base}/messagegroups/{CONTRACT}"
        try:
            async with aiohttp.ClientSession() as session:
                await asyncio.sleep(5)
                async with session.put(url, json=_contract("Shipments (v1)"), headers=headers) as response:
                    await response.read()
                await asyncio.sleep(8)
                async with session.patch(url, json={"description": "Shipments (v2)"}, headers=headers) as response:
                    await response.read()
        except (aiohttp.ClientError, OSError) as exc:
            self.error = f"publishing the contract: {exc}"

    def lines(self) -> list[str]:
        if not self.enabled:
            return []
        heading = (f"registry change events on {self.events_config.endpoint_id} ({self.events_config.protocol}): "
                   f"{len(self.received)} received" + (f"   ({self.error})" if self.error else ""))
        out = ["", heading]
        if not self.received:
            return out + [f"  (none yet: a CI job PUTs /registry/messagegroups/{CONTRACT} 5 s into the traffic)"]
        event, verdict = self.received[-1]
        data = event.get("data") or {}
        last = (f"  last: {event.get('type')} {event.get('subject')} epoch {data.get('epoch')} "
                f"at {event.get('time')} ({verdict})")
        return [*out, last]

    async def stop(self) -> None:
        self._stop.set()
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._copy is not None:
            shutil.rmtree(self._copy.parent, ignore_errors=True)
