"""A small registry spread over three files, for the API tests: every Group type, a basemessage across files,
a schema with two versions, a text (Protobuf) schema, and one only reachable by URL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.unit.builders import write_doc

CE = "CloudEvents/1.0"
READING = {"type": "object", "required": ["v"], "properties": {"v": {"type": "number"}}}
PROTO = 'syntax = "proto3";\nmessage Ping { string id = 1; }\n'


def orders_document(placed_source: str = "/shops/{shop}") -> dict[str, Any]:
    return {
        "messagegroups": {"orders": {"envelope": CE, "description": "Order events", "messages": {
            "placed": {"envelope": CE, "description": "An order was placed",
                       "envelopemetadata": {"type": {"value": "com.example.order.placed"},
                                            "source": {"type": "uritemplate", "value": placed_source}},
                       "dataschemaformat": "JsonSchema/draft-07",
                       "dataschemauri": "/schemagroups/shop/schemas/reading"},
            "cancelled": {"basemessage": "/messagegroups/orders/messages/placed",
                          "envelopemetadata": {"type": {"value": "com.example.order.cancelled"}}}}}},
    }


def endpoints_document() -> dict[str, Any]:
    return {"endpoints": {
        "orders.in": {"usage": ["consumer"], "protocol": "KAFKA", "envelope": CE,
                      "description": "The cool orders endpoint", "labels": {"env": "prod", "team": "Payments"},
                      "protocoloptions": {"topic": "orders", "endpoints": [{"uri": "tcp://127.0.0.1:9092"}]},
                      "messagegroups": ["/messagegroups/orders"],
                      "messages": {"ping": {"envelope": CE, "envelopemetadata": {"type": {"value": "ping"}},
                                            "dataschemaformat": "Protobuf/3",
                                            "dataschemauri": "/schemagroups/shop/schemas/ping"}}},
        "orders.dlq": {"usage": ["producer"], "protocol": "KAFKA", "description": "Dead letters",
                       "labels": {"env": "test"}, "protocoloptions": {"topic": "orders.dlq"}},
    }}


def schemas_document() -> dict[str, Any]:
    return {"schemagroups": {"shop": {"description": "Shop schemas", "schemas": {
        "reading": {"format": "JsonSchema/draft-07", "versions": {
            "1": {"schema": {"type": "object"}},
            "2": {"schema": READING}}},
        "ping": {"format": "Protobuf/3", "versions": {"1": {"schema": PROTO}}},
        "remote": {"format": "Avro/1.11", "versions": {"1": {"schemaurl": "https://schemas.example.com/x.avsc"}}},
    }}}}


def write_registry(directory: Path, **overrides: Any) -> Path:
    write_doc(directory, "orders.xreg.json", overrides.get("orders", orders_document()))
    write_doc(directory, "endpoints.xreg.json", overrides.get("endpoints", endpoints_document()))
    write_doc(directory, "schemas.xreg.json", overrides.get("schemas", schemas_document()))
    return directory
