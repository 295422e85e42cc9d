"""HTTP adapter: a webhook ingress source (aiohttp server) and a webhook delivery sink (aiohttp client)."""

from __future__ import annotations

from protocol_adapters.lazy import lazy_exports

_HOMES = {"HttpSource": "source", "create_source": "source", "HttpSink": "sink", "create_sink": "sink",
          "HttpSourceOptions": "options", "HttpSinkOptions": "options", "share_source": "options",
          "sink_options": "options", "source_options": "options"}
__all__ = list(_HOMES)
__getattr__ = lazy_exports(__name__, _HOMES)
