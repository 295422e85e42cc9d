"""NATS adapter (nats-py): a JetStream durable pull consumer or a core subscription as source, publish as sink."""

from __future__ import annotations

from protocol_adapters.lazy import lazy_exports

_HOMES = {"NatsSource": "source", "create_source": "source", "create_observer": "source", "NatsSink": "sink",
          "create_sink": "sink", "NatsOptions": "options", "share_source": "options", "sink_options": "options",
          "source_options": "options"}
__all__ = list(_HOMES)
__getattr__ = lazy_exports(__name__, _HOMES)
