"""Kafka adapter (aiokafka): a consumer-group source that commits after delivery, and an acks=all sink."""

from __future__ import annotations

import secrets
from dataclasses import replace

from protocol_adapters.base import EndpointConfig
from protocol_adapters.kafka.options import share_source, sink_options, source_options
from protocol_adapters.kafka.sink import KafkaSink
from protocol_adapters.kafka.source import KafkaSource
from protocol_adapters.kafka.transactional_source import TransactionalKafkaSource

__all__ = ["KafkaSink", "KafkaSource", "TransactionalKafkaSource", "create_observer", "create_sink", "create_source",
           "share_source"]


def create_source(config: EndpointConfig) -> KafkaSource:
    options = source_options(config)
    return TransactionalKafkaSource(options) if options.transactional_id else KafkaSource(options)


def create_observer(config: EndpointConfig) -> KafkaSource:
    """Reads beside the gateway: a consumer group of its own that never commits (the gateway's group untouched)."""
    options = source_options(config)
    group = f"xgate-capture-{config.endpoint_id}-{secrets.token_hex(4)}"
    return KafkaSource(replace(options, group_id=group, commit=False))


def create_sink(config: EndpointConfig) -> KafkaSink:
    return KafkaSink(sink_options(config))
