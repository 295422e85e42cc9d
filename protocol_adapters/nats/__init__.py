"""NATS adapter (nats-py): a JetStream durable pull consumer or a core subscription as source, publish as sink."""

from __future__ import annotations

from dataclasses import replace

from protocol_adapters.base import EndpointConfig
from protocol_adapters.nats.options import NatsOptions, share_source, sink_options, source_options
from protocol_adapters.nats.sink import NatsSink, create_sink
from protocol_adapters.nats.source import NatsSource, create_source

__all__ = ["NatsOptions", "NatsSink", "NatsSource", "create_observer", "create_sink", "create_source",
           "share_source", "sink_options", "source_options"]


def create_observer(config: EndpointConfig) -> NatsSource:
    """Reads beside the gateway: JetStream through an ephemeral consumer, core NATS without the queue group."""
    return NatsSource(replace(source_options(config), ephemeral=True, queue_group=""))
