"""HTTP adapter: a webhook ingress source (aiohttp server) and a webhook delivery sink (aiohttp client)."""

from __future__ import annotations

from protocol_adapters.http.options import (
           HttpSinkOptions,
           HttpSourceOptions,
           share_source,
           sink_options,
           source_options,
)
from protocol_adapters.http.sink import HttpSink, create_sink
from protocol_adapters.http.source import HttpSource, create_source

__all__ = ["HttpSink", "HttpSinkOptions", "HttpSource", "HttpSourceOptions", "create_sink", "create_source",
           "share_source", "sink_options", "source_options"]
