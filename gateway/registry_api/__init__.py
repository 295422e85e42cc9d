"""The registry xgate loaded, as xRegistry: one document (`xgate export`) and the HTTP API (`/registry`, served
by gateway/metrics/server.py through `registry_api.handlers.add_registry_routes`): read-only, or written through
write.py when gateway.yaml has `registry.write`, with change events (events.py) when it has `registry.events`."""

from gateway.registry_api.document import registry_document
from gateway.registry_api.served import RegistryView

__all__ = ["RegistryView", "registry_document"]
