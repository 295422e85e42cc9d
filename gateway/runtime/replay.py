"""Publish recorded messages to an endpoint, each to the address it was recorded on.

A sink publishes to its configured topic/subject; a recorded message carries
its own (`facility.doors.d7`, `plant/b1/boiler2/status`), and definitions
often constrain it with a template. So replay opens one sink per recorded
address (override of the endpoint's topic / topic_name / subject) and sends
with a bounded number of unconfirmed messages.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Self

from gateway.bindings import BINDINGS
from gateway.envelope import Envelope
from gateway.errors import AdapterError
from gateway.runtime.remap import outgoing
from protocol_adapters.base import EndpointConfig


@dataclass
class ReplayResult:
    sent: int = 0
    refused: int = 0  # the endpoint said no for good (e.g. HTTP 422 from a rejecting gateway)
    errors: list[str] = field(default_factory=list)


def _address(config: EndpointConfig, envelope: Envelope) -> EndpointConfig:
    """The endpoint config with the recorded address (and MQTT QoS / retain) of this message."""
    binding = BINDINGS.get(config.protocol)
    if binding is None or not binding.addressed_sink or envelope.protocol != config.protocol:
        return config
    # the sink option that names its destination is the field that holds the recorded address
    option = binding.address
    overrides: dict[str, Any] = {}
    value = envelope.fields.get(option)
    if isinstance(value, str) and value:
        overrides[option] = value
        if option == "topic_name":
            overrides["topic"] = value
    for field_name in binding.sink_fields:
        if envelope.fields.get(field_name) is not None:
            overrides[field_name] = envelope.fields[field_name]
    return replace(config, options={**config.options, **overrides}) if overrides else config


class Replayer:
    """Sends recorded messages to one endpoint, keeping a sink open per recorded address between calls
    (a demo or a soak sends batch after batch) and at most `inflight` sends unconfirmed."""

    def __init__(self, config: EndpointConfig, create_sink: Callable[[EndpointConfig], Any], inflight: int = 200,
                 retry_for: float = 30.0) -> None:
        self.config = config
        self.result = ReplayResult()
        self._create_sink = create_sink
        self._window = asyncio.Semaphore(inflight)
        self._retry_for = retry_for
        self._stack = contextlib.AsyncExitStack()
        self._sinks: dict[tuple[tuple[str, str], ...], Any] = {}

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def _sink_for(self, target: EndpointConfig) -> Any:
        key = tuple(sorted((k, str(v)) for k, v in target.options.items()))
        if key not in self._sinks:
            self._sinks[key] = await self._stack.enter_async_context(self._create_sink(target))
        return self._sinks[key]

    async def _send(self, sink: Any, message: Envelope) -> None:
        result = self.result
        deadline = asyncio.get_running_loop().time() + self._retry_for
        try:
            while True:
                try:
                    await sink.send(message)
                    result.sent += 1
                    return
                except AdapterError as exc:
                    if exc.retriable and asyncio.get_running_loop().time() < deadline:
                        await asyncio.sleep(0.2)
                        continue
                    result.refused += 1
                    if len(result.errors) < 20:
                        result.errors.append(str(exc))
                    return
        finally:
            self._window.release()

    async def send_all(self, envelopes: list[Envelope]) -> None:
        """Send every message, each to its recorded address; returns when all are confirmed or refused."""
        tasks = []
        for envelope in envelopes:
            sink = await self._sink_for(_address(self.config, envelope))
            await self._window.acquire()
            tasks.append(asyncio.create_task(self._send(sink, outgoing(envelope, self.config.protocol))))
        await asyncio.gather(*tasks)


async def replay(config: EndpointConfig, envelopes: list[Envelope], create_sink: Callable[[EndpointConfig], Any],
                 inflight: int = 200, retry_for: float = 30.0) -> ReplayResult:
    async with Replayer(config, create_sink, inflight, retry_for) as replayer:
        await replayer.send_all(envelopes)
    return replayer.result
