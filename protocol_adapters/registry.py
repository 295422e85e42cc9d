"""Protocol name -> adapter package; a missing optional dependency raises an install hint."""

from __future__ import annotations

import importlib
from typing import Any

from gateway.errors import GatewayError
from protocol_adapters.base import EndpointConfig, SinkAdapter, SourceAdapter

# protocol -> (module exposing create_source/create_sink, extra that installs its client library)
ADAPTERS: dict[str, tuple[str, str]] = {
    "KAFKA": ("protocol_adapters.kafka", "kafka"),
    "MQTT/3.1.1": ("protocol_adapters.mqtt", "mqtt"),
    "MQTT/5.0": ("protocol_adapters.mqtt", "mqtt"),
    "AMQP/1.0": ("protocol_adapters.amqp", "amqp"),
    "NATS": ("protocol_adapters.nats", "nats"),
    "HTTP": ("protocol_adapters.http", "http"),
    # the in-process broker of gateway.testing, for tests and dry runs
    "MEMORY": ("gateway.testing.memory", "dev"),
}


def adapter_module(protocol: str) -> Any:
    try:
        module_name, extra = ADAPTERS[protocol]
    except KeyError:
        raise GatewayError(f"no adapter for protocol {protocol!r}; known: {', '.join(ADAPTERS)}") from None
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith(("protocol_adapters", "gateway")):
            raise
        raise GatewayError(f"the {protocol} adapter needs an optional dependency ({exc.name}): "
                           f"pip install 'xgate[{extra}]'") from exc


def create_source(config: EndpointConfig) -> SourceAdapter:
    source: SourceAdapter = adapter_module(config.protocol).create_source(config)
    return source


def create_sink(config: EndpointConfig) -> SinkAdapter:
    sink: SinkAdapter = adapter_module(config.protocol).create_sink(config)
    return sink


def share_source(config: EndpointConfig, worker: int) -> EndpointConfig:
    """The source config worker `worker` of `xgate run --workers N` uses, so that the N workers share the source
    by the protocol's own means (consumer group, shared subscription, queue group, competing receivers,
    SO_REUSEPORT) instead of each receiving every message."""
    module = adapter_module(config.protocol)
    share = getattr(module, "share_source", None)
    if share is None:
        raise GatewayError(f"the {config.protocol} adapter cannot share endpoint {config.endpoint_id!r} "
                           "between workers: run it with --workers 1")
    shared: EndpointConfig = share(config, worker)
    return shared
