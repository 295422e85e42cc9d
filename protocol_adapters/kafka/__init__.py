"""Kafka adapter (aiokafka): a consumer-group source that commits after delivery, and an acks=all sink."""

from __future__ import annotations

from protocol_adapters.lazy import lazy_exports

_HOMES = {"KafkaSource": "source", "create_source": "create", "create_observer": "create",
          "TransactionalKafkaSource": "transactional_source", "KafkaSink": "sink", "create_sink": "sink",
          "share_source": "options", "sink_options": "options", "source_options": "options"}
__all__ = list(_HOMES)
__getattr__ = lazy_exports(__name__, _HOMES)
