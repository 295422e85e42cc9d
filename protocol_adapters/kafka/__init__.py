"""Kafka adapter (aiokafka): a consumer-group source that commits after delivery, and an acks=all sink."""

from __future__ import annotations

from protocol_adapters.base import EndpointConfig
from protocol_adapters.kafka.options import sink_options, source_options
from protocol_adapters.kafka.sink import KafkaSink
from protocol_adapters.kafka.source import KafkaSource
from protocol_adapters.kafka.transactional_source import TransactionalKafkaSource

__all__ = ["KafkaSink", "KafkaSource", "TransactionalKafkaSource", "create_sink", "create_source"]


def create_source(config: EndpointConfig) -> KafkaSource:
    options = source_options(config)
    return TransactionalKafkaSource(options) if options.transactional_id else KafkaSource(options)


def create_sink(config: EndpointConfig) -> KafkaSink:
    return KafkaSink(sink_options(config))
