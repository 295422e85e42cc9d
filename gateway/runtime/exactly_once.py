"""Exactly-once routes: Kafka in and Kafka out on one cluster, outputs and consumed offsets in one transaction.

The route's endpoints get one transactional id in their adapter settings (`extra`); the Kafka adapter then
shares one transactional producer between the route's source and sinks and commits the consumed offsets
inside each transaction (protocol_adapters/kafka/transaction.py). Transactions do not span protocols or
clusters, so any other route shape is refused at startup.
"""

from __future__ import annotations

from dataclasses import replace

from gateway.runtime.routes import Route
from protocol_adapters.base import EndpointConfig

TRANSACTIONAL_PROTOCOL = "KAFKA"


def transactional(route: Route) -> Route | str:
    """The route with its endpoints joined to one transaction, or why it cannot be exactly-once."""
    destinations = [d for d in (route.conformant, route.nonconformant, route.unmatched) if d is not None]
    endpoints = [route.source, *destinations]
    others = sorted({e.endpoint_id for e in endpoints
                     if e.protocol.split("/")[0].upper() != TRANSACTIONAL_PROTOCOL})
    if others:
        return f"exactly_once needs Kafka endpoints only, and {', '.join(others)} is not Kafka"
    if len({frozenset(e.uris) for e in endpoints}) > 1:
        return "exactly_once needs every endpoint of the route on one Kafka cluster (the same bootstrap uris)"
    transactional_id = f"xgate-{route.source.endpoint_id}"

    def join(endpoint: EndpointConfig | None) -> EndpointConfig | None:
        if endpoint is None:
            return None
        return replace(endpoint, extra={**endpoint.extra, "transactional_id": transactional_id})
    source = join(route.source)
    assert source is not None
    return replace(route, source=source, conformant=join(route.conformant),
                   nonconformant=join(route.nonconformant), unmatched=join(route.unmatched))
