"""Publish the registry's change events (gateway/registry_api/events.py) to the endpoint gateway.yaml
`registry.events.endpoint` names, through that endpoint's own adapter (protocol_adapters.registry): a Kafka
topic, an MQTT topic, a NATS subject, an AMQP queue or an HTTP URL.

At least once, and as durable as the change: the events of a swap are appended to an outbox file in the state
directory (replaced atomically) before the swap's stamps are saved, and leave it only once the broker
confirmed them; a process that stops or crashes with events still in the outbox publishes them at its next
start. A change on disk that no event was queued for (a registry write's file put in place, then a kill before
the reload) is found at the next start: the registry view compares what it loads with the registry saved
with the stamps (registry_api/state.py), so its events come then, with the epochs it is served with; an event
queued twice for one (entity, epoch) by a kill between the outbox and the stamps is queued once. A destination that
is down is retried with backoff, in order; nothing blocks a reload. Events go in the CloudEvents JSON format
(structured mode: `application/cloudevents+json` in the protocol's content-type field), which every binding
reads, MQTT 3.1.1 included; on Kafka the record key is the subject, so the changes of one entity stay in order.

Only reloads that swapped a new registry in produce events (the view's listener is told of nothing else):
a refused reload publishes nothing, and a reload that kept a broken file at its last good content publishes
the changes that did take effect and none for that file.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gateway import durable
from gateway.errors import GatewayError, MessageRefused
from gateway.registry_api.events import change_events
from gateway.registry_api.served import ApiState
from gateway.runtime.remap import envelope_for
from gateway.runtime.waiting import either
from protocol_adapters.base import EndpointConfig, SinkAdapter

log = logging.getLogger("xgate.registry.events")
OUTBOX_FILE = "registry-events.outbox.json"
RECENT_EVENTS = 20  # the latest events the console shows
BACKOFF = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)


class Outbox:
    """The events not yet confirmed, in a file (or in memory only, without a state directory)."""

    def __init__(self, directory: Path | None) -> None:
        self.path = directory / OUTBOX_FILE if directory is not None else None
        self.events: list[dict[str, Any]] = self._load()

    def _load(self) -> list[dict[str, Any]]:
        if self.path is None:
            return []
        durable.remove_leftovers(self.path)  # what a killed process was writing: the outbox before it stands
        try:
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            log.warning("change events: cannot read %s (%s); its events are lost", self.path, exc)
            return []
        return [e for e in loaded if isinstance(e, dict)] if isinstance(loaded, list) else []

    def save(self) -> None:
        if self.path is None:
            return
        try:
            durable.write_atomically(self.path, json.dumps(self.events, ensure_ascii=False,
                                                           separators=(",", ":")).encode())
        except OSError as exc:
            log.warning("change events: cannot write %s (%s); pending events live in memory only", self.path, exc)


def _identity(event: dict[str, Any]) -> tuple[Any, ...]:
    """What one change of one entity is: its event type, its xid and the epoch it reached."""
    return event.get("type"), event.get("subject"), (event.get("data") or {}).get("epoch")


class ChangePublisher:
    """The registry view's listener, and the task that sends what it heard."""

    def __init__(self, config: EndpointConfig, create_sink: Callable[[EndpointConfig], SinkAdapter],
                 outbox_dir: Path | None, max_entity_bytes: int, base: str = "") -> None:
        self.config, self.create_sink = config, create_sink
        self.outbox = Outbox(outbox_dir)
        self.max_entity_bytes = max_entity_bytes
        self.base = base  # the registry's URL, the events' `source`: set once the server listens
        self.last: dict[str, Any] | None = None  # the last event the broker confirmed (the demo shows it)
        self.recent: collections.deque[dict[str, Any]] = collections.deque(maxlen=RECENT_EVENTS)  # the console's
        self.published = 0
        self._lock = threading.Lock()
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def listen(self, old: ApiState, new: ApiState, correlation: str | None) -> None:
        """RegistryView listener: runs in the reload's thread, before the stamps are saved."""
        events = change_events(old, new, self.base, correlation, self.max_entity_bytes)
        if not events:
            return
        with self._lock:
            # a process killed after queueing a change's events and before saving its stamps announces the same
            # (entity, epoch) again at its next start: once in the outbox is enough
            queued = {_identity(event) for event in self.outbox.events}
            fresh = [event for event in events if _identity(event) not in queued]
            if not fresh:
                return
            self.outbox.events.extend(fresh)
            self.outbox.save()
            self.recent.extend(fresh)
        if self._loop is not None and self._wake is not None:
            self._loop.call_soon_threadsafe(self._wake.set)

    async def run(self, stop: asyncio.Event) -> None:
        """Send the outbox until `stop`; reconnects and retries with backoff while the destination fails."""
        self._loop, self._wake = asyncio.get_running_loop(), asyncio.Event()
        self._wake.set()  # what a previous process left in the outbox
        failures = 0
        while not stop.is_set():
            await either(self._wake, stop)
            if stop.is_set():
                break
            self._wake.clear()
            try:
                async with self.create_sink(self.config) as sink:
                    await self._drain(sink)
                failures = 0
            except (GatewayError, OSError) as exc:
                delay = BACKOFF[min(failures, len(BACKOFF) - 1)]
                failures += 1
                log.warning("change events: %s (%d waiting); retrying in %.1f s", exc, len(self.outbox.events), delay)
                self._wake.set()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)

    async def _drain(self, sink: SinkAdapter) -> None:
        """Send the outbox in order until it is empty; each event leaves it once the broker confirmed it."""
        while True:
            with self._lock:
                if not self.outbox.events:
                    return
                event = self.outbox.events[0]
            try:
                await sink.send(envelope_for(event, self.config.protocol))
            except MessageRefused as exc:  # never deliverable (too large, refused): logged and dropped, not retried
                log.error("change events: %s refused %s %s for good: %s", self.config.endpoint_id, event.get("type"),
                          event.get("subject"), exc)
            else:
                self.last, self.published = event, self.published + 1
            await asyncio.to_thread(self._confirm, event)

    def _confirm(self, event: dict[str, Any]) -> None:
        with self._lock:
            if self.outbox.events and self.outbox.events[0] is event:
                self.outbox.events.pop(0)
            self.outbox.save()
