"""AMQP 1.0 adapter over python-qpid-proton (run on its own thread): `create_source` / `create_sink`."""

from __future__ import annotations

from gateway.errors import ObserverRefused
from protocol_adapters.amqp.options import AmqpOptions, build_options, share_source
from protocol_adapters.amqp.sink import AmqpSink
from protocol_adapters.amqp.source import AmqpSource
from protocol_adapters.base import EndpointConfig


def create_source(config: EndpointConfig) -> AmqpSource:
    return AmqpSource(build_options(config))


def create_observer(config: EndpointConfig) -> AmqpSource:
    """An AMQP queue hands each message to one receiver: reading it takes it from the gateway."""
    raise ObserverRefused(f"AMQP endpoint {config.endpoint_id!r}: capturing from a queue takes its messages away "
                          "from the gateway (a queue gives each message to one receiver); pass --destructive to "
                          "capture anyway")


def create_sink(config: EndpointConfig) -> AmqpSink:
    return AmqpSink(build_options(config))


__all__ = ["AmqpOptions", "AmqpSink", "AmqpSource", "build_options", "create_sink", "create_source",
           "share_source"]
