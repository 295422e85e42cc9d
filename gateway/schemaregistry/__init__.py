"""Confluent-compatible schema registries as schema sources, and the Confluent wire format."""

from gateway.schemaregistry.config import SchemaRegistrySettings, load_schema_registries, parse_schemaregistries
from gateway.schemaregistry.model import RegisteredSchema, RegistryPayloadSchema
from gateway.schemaregistry.resolve import registry_schemas
from gateway.schemaregistry.wire import encode, message_indexes, wire_header

__all__ = ["RegisteredSchema", "RegistryPayloadSchema", "SchemaRegistrySettings", "encode",
           "load_schema_registries", "message_indexes", "parse_schemaregistries", "registry_schemas",
           "wire_header"]
