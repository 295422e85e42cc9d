"""Exactly-once routes: Kafka in and Kafka out on one cluster, outputs and consumed offsets in one transaction.

The route's endpoints get one transactional id in their adapter settings (`extra`); the Kafka adapter then
shares one transactional producer between the route's source and sinks and commits the consumed offsets
inside each transaction (protocol_adapters/kafka/transaction.py). Transactions do not span protocols or
clusters, so any other route shape is refused at startup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from protocol_adapters.base import EndpointConfig

TRANSACTIONAL_PROTOCOL = "KAFKA"


def join_transaction(endpoints: Sequence[EndpointConfig | None]) -> list[EndpointConfig | None] | str:
    """A route's endpoints (source first, then its destinations, None where it has none) joined to one
    transaction, or why they cannot be exactly-once."""
    present = [e for e in endpoints if e is not None]
    others = sorted({e.endpoint_id for e in present if e.protocol.split("/")[0].upper() != TRANSACTIONAL_PROTOCOL})
    if others:
        return f"exactly_once needs Kafka endpoints only, and {', '.join(others)} is not Kafka"
    if len({frozenset(e.uris) for e in present}) > 1:
        return "exactly_once needs every endpoint of the route on one Kafka cluster (the same bootstrap uris)"
    source = endpoints[0]
    assert source is not None
    transactional_id = f"xgate-{source.endpoint_id}"
    return [None if e is None else replace(e, extra={**e.extra, "transactional_id": transactional_id})
            for e in endpoints]
