"""AMQP 1.0 adapter over python-qpid-proton (run on its own thread)."""

from __future__ import annotations

from protocol_adapters.lazy import lazy_exports

_HOMES = {"AmqpSource": "source", "create_source": "source", "create_observer": "source", "AmqpSink": "sink",
          "create_sink": "sink", "AmqpOptions": "options", "build_options": "options", "share_source": "options"}
__all__ = list(_HOMES)
__getattr__ = lazy_exports(__name__, _HOMES)
