"""The Kafka sources the registry builds: the plain consumer-group source, or the exactly-once one when the
endpoint names a transactional id, and the observer that reads beside the gateway.

In a module of its own because the exactly-once source builds on the plain one: source.py cannot pick it."""

from __future__ import annotations

import secrets
from dataclasses import replace

from protocol_adapters.base import EndpointConfig
from protocol_adapters.kafka.options import source_options
from protocol_adapters.kafka.source import KafkaSource
from protocol_adapters.kafka.transactional_source import TransactionalKafkaSource


def create_source(config: EndpointConfig) -> KafkaSource:
    options = source_options(config)
    if not options.transactional_id:
        return KafkaSource(options)
    return TransactionalKafkaSource(options)


def create_observer(config: EndpointConfig) -> KafkaSource:
    """Reads beside the gateway: a consumer group of its own that never commits (the gateway's group untouched)."""
    options = source_options(config)
    group = f"xgate-capture-{config.endpoint_id}-{secrets.token_hex(4)}"
    return KafkaSource(replace(options, group_id=group, commit=False))
