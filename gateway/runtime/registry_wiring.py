"""How `xgate run` attaches the registry's write side (issue 24) to the view, reloader and engine it built:
the write API (gateway/registry_api/write.py) when gateway.yaml has `registry.write`, and the change event
publisher (change_events.py) when it has `registry.events`. Kept apart from commands.py so that the command
only calls these two functions.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from gateway.errors import GatewayError
from gateway.loader import Snapshot
from gateway.registry_api.access import WriteAccess
from gateway.registry_api.served import RegistryView
from gateway.registry_api.state import StateFile
from gateway.registry_api.write import RegistryWriter
from gateway.routes.resolve import endpoint_config
from gateway.runtime.change_events import ChangePublisher
from gateway.runtime.engine import Engine
from gateway.runtime.reload import Reloader
from gateway.settings import Settings
from protocol_adapters import registry

log = logging.getLogger("xgate.registry")


def registry_writer(config_dir: str, view: RegistryView | None, settings: Settings, reloader: Reloader,
                    engine: Engine) -> RegistryWriter | None:
    """The write API, or None when gateway.yaml does not turn it on (or the API is not served)."""
    write = settings.registry.write
    if write is None:
        return None
    if view is None:
        log.warning("registry.write is set but the registry API is not served (runtime.metrics_address is off)")
        return None
    if not os.access(config_dir, os.W_OK):
        log.warning("registry.write: %s is not writable; every write will be refused", config_dir)
    return RegistryWriter(config_dir, view, WriteAccess(write), reloader, engine.adapter_problems)


def change_publisher(view: RegistryView | None, snapshot: Snapshot, settings: Settings, state: StateFile | None,
                     primary: bool) -> ChangePublisher | None:
    """The change event publisher, listening to `view`; None without `registry.events` (or on a worker other
    than the first of `--workers N`: each worker sees every change, one publishes it)."""
    events = settings.registry.events
    if events is None or view is None or not primary:
        return None
    if events.endpoint not in snapshot.registry.endpoints:
        raise GatewayError(f"{settings.file}: registry/events/endpoint: {events.endpoint!r} is not an endpoint of "
                           f"the documents (known: {', '.join(sorted(snapshot.registry.endpoints)) or 'none'})")
    config = endpoint_config(snapshot.registry, events.endpoint, settings)
    registry.create_sink(config)  # options read now: a bad one stops startup, not the first event
    outbox_dir = state.path.parent if state is not None else None
    if outbox_dir is None:
        log.warning("change events: no state directory; events not yet confirmed are lost if xgate stops")
    publisher = ChangePublisher(config, registry.create_sink, Path(outbox_dir) if outbox_dir else None,
                                events.max_entity_bytes, settings.registry.base_url or "")
    view.listener = publisher.listen
    return publisher
