"""The registry xgate loaded, as xRegistry: one document (`xgate export`) and the read-only HTTP API
(`/registry`, served by gateway/metrics/server.py through `registry_api.handlers.add_registry_routes`)."""

from gateway.registry_api.document import registry_document
from gateway.registry_api.served import RegistryView

__all__ = ["RegistryView", "registry_document"]
