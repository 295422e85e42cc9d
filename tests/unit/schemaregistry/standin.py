"""A stand-in for a Confluent-compatible schema registry: the few REST endpoints xgate reads, as Confluent
Schema Registry documents and answers them, and the encoders producers use.

No registry server can be installed here, so this model answers in its place: unit tests through a
RemoteFetcher whose `_request` it serves (no network), the integration test behind an aiohttp server on
127.0.0.1. Endpoints:

    GET /subjects/{subject}/versions            -> [1, 2]
    GET /subjects/{subject}/versions/{version}  -> {"subject", "version", "id", "schema", "schemaType"?}
    GET /schemas/ids/{id}                       -> {"schema", "schemaType"?}

`schemaType` is left out for AVRO, as Confluent does; ids are global and a schema registered again (under
any subject) keeps its id; errors are {"error_code", "message"} with Confluent's codes; with credentials
set, a request without the right basic auth gets 401.
"""

from __future__ import annotations

import base64
import io
import json
import os
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from fastavro import parse_schema, schemaless_writer
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

from gateway.loader.fetch import RemoteFetcher, RemotePolicy

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"

READING_V1 = {"type": "record", "name": "Reading", "namespace": "com.example",
              "fields": [{"name": "device", "type": "string"}, {"name": "temperature", "type": "double"}]}
READING_V2 = {**READING_V1, "fields": [*READING_V1["fields"], {"name": "unit", "type": "string", "default": "C"}]}
OTHER = {"type": "record", "name": "Other", "namespace": "com.example", "fields": [{"name": "x", "type": "long"}]}
ORDERS_PROTO = """syntax = "proto3";
package com.example;

message Order {
  string id = 1;
  int32 quantity = 2;
}

message Refund {
  string order_id = 1;
  int64 cents = 2;
  message Line {
    string sku = 1;
  }
  repeated Line lines = 3;
}
"""
EVENT_JSON = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "required": ["kind"],
              "properties": {"kind": {"type": "string"}, "count": {"type": "integer", "minimum": 0}}}


@dataclass
class StandInRegistry:
    username: str | None = None
    password: str | None = None
    subjects: dict[str, list[int]] = field(default_factory=dict)          # subject -> ids, version = position + 1
    schemas: dict[int, tuple[str, str]] = field(default_factory=dict)     # id -> (schemaType, schema text)
    requests: list[str] = field(default_factory=list)
    next_id: int = 1

    def register(self, subject: str, schema: Any, schema_type: str = "AVRO") -> int:
        """Register `schema` (text, or JSON for Avro and JSON) under `subject`; its (global) id."""
        text = schema if isinstance(schema, str) else json.dumps(schema)
        found = next((i for i, s in self.schemas.items() if s == (schema_type, text)), None)
        if found is None:
            found, self.next_id = self.next_id, self.next_id + 1
            self.schemas[found] = (schema_type, text)
        versions = self.subjects.setdefault(subject, [])
        if found not in versions:
            versions.append(found)
        return found

    def answer(self, path: str, authorization: str | None) -> tuple[int, dict[str, Any] | list[int]]:
        """(status, JSON body) for a GET of `path`."""
        self.requests.append(path)
        if self.username is not None:
            token = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
            if authorization != f"Basic {token}":
                return 401, {"error_code": 401, "message": "Unauthorized"}
        parts = [unquote(p) for p in path.split("?", 1)[0].strip("/").split("/")]
        if len(parts) == 3 and parts[:2] == ["schemas", "ids"] and parts[2].isdigit():
            found = self.schemas.get(int(parts[2]))
            if found is None:
                return 404, {"error_code": 40403, "message": "Schema not found"}
            return 200, _typed({"schema": found[1]}, found[0])
        if len(parts) in (3, 4) and parts[0] == "subjects" and parts[2] == "versions":
            versions = self.subjects.get(parts[1])
            if versions is None:
                return 404, {"error_code": 40401, "message": f"Subject '{parts[1]}' not found."}
            if len(parts) == 3:
                return 200, list(range(1, len(versions) + 1))
            wanted = parts[3]
            number = len(versions) if wanted in ("latest", "-1") else int(wanted) if wanted.isdigit() else 0
            if not 1 <= number <= len(versions):
                return 404, {"error_code": 40402, "message": "Version not found."}
            schema_id = versions[number - 1]
            schema_type, text = self.schemas[schema_id]
            return 200, _typed({"subject": parts[1], "version": number, "id": schema_id, "schema": text}, schema_type)
        return 404, {"error_code": 404, "message": "HTTP 404 Not Found"}


def _typed(body: dict[str, Any], schema_type: str) -> dict[str, Any]:
    return body if schema_type == "AVRO" else {**body, "schemaType": schema_type}


def example_registry(**credentials: Any) -> tuple[StandInRegistry, dict[str, int]]:
    """The registry the tests share, and the ids it gave: readings-value v1 and v2 (Avro), other-value
    (Avro), orders-value (Protobuf), events-value (JSON)."""
    registry = StandInRegistry(**credentials)
    ids = {"reading_v1": registry.register("readings-value", READING_V1),
           "reading_v2": registry.register("readings-value", READING_V2),
           "other": registry.register("other-value", OTHER),
           "orders": registry.register("orders-value", ORDERS_PROTO, "PROTOBUF"),
           "event": registry.register("events-value", EVENT_JSON, "JSON")}
    return registry, ids


class StandInFetcher(RemoteFetcher):
    """The real fetcher (policy, cache, headers, redirects), with the network replaced by the stand-in."""

    def __init__(self, registry: StandInRegistry, allow: tuple[str, ...] = ("registry.test",)) -> None:
        super().__init__(RemotePolicy(allow=allow))
        self.registry = registry
        self.sent: list[tuple[str, dict[str, str]]] = []

    def _request(self, url: str, deadline: float, headers: Any = None,
                 meta: Any = None) -> tuple[int, str | None, str, bytes]:
        self.sent.append((url, dict(headers or {})))
        parts = urlsplit(url)
        status, body = self.registry.answer(parts.path, (headers or {}).get("Authorization"))
        return status, None, CONTENT_TYPE, json.dumps(body).encode() if status == 200 else b""


# -- producers (written apart from gateway/schemaregistry/wire.py, so that the two check each other) ------------
def header(schema_id: int) -> bytes:
    """Magic byte 0, then the schema id as a 4-byte big-endian integer."""
    return b"\x00" + struct.pack(">I", schema_id)


def _zigzag(value: int) -> bytes:
    """Kafka's ByteUtils.writeVarint: zigzag, then 7 bits a byte, low group first."""
    number = (value << 1) ^ (value >> 31)
    out = b""
    while True:
        low = number & 0x7F
        number >>= 7
        if number:
            out += bytes([low | 0x80])
        else:
            return out + bytes([low])


def indexes_prefix(indexes: list[int]) -> bytes:
    """Confluent's MessageIndexes.toByteArray: [0] is the single byte 0, else count and indexes."""
    if indexes == [0]:
        return b"\x00"
    return _zigzag(len(indexes)) + b"".join(_zigzag(i) for i in indexes)


def encode(schema_id: int, payload: bytes, indexes: list[int] | None = None) -> bytes:
    return header(schema_id) + (indexes_prefix(indexes) if indexes is not None else b"") + payload


def avro_payload(schema_id: int, schema: Any, record: dict[str, Any]) -> bytes:
    """What Confluent's KafkaAvroSerializer writes: header, then the Avro binary encoding (fastavro)."""
    out = io.BytesIO()
    schemaless_writer(out, parse_schema(schema), record)
    return encode(schema_id, out.getvalue())


_PROTO_CLASSES: dict[str, dict[str, type[Message]]] = {}


def proto_classes(source: str) -> dict[str, type[Message]]:
    """Message classes of a .proto, compiled by protoc (grpcio-tools, in its own process) into a private pool."""
    if source not in _PROTO_CLASSES:
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "schema.proto"), "w", encoding="utf-8") as handle:
                handle.write(source)
            out = os.path.join(tmp, "set.pb")
            subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp}", f"--descriptor_set_out={out}",
                            "schema.proto"], check=True)
            with open(out, "rb") as handle:
                files = descriptor_pb2.FileDescriptorSet.FromString(handle.read())
        pool = descriptor_pool.DescriptorPool()
        classes: dict[str, type[Message]] = {}
        for proto in files.file:
            pool.Add(proto)

            def walk(messages: Any, scope: str) -> None:
                for message in messages:
                    full = scope + message.name
                    classes[full] = message_factory.GetMessageClass(pool.FindMessageTypeByName(full))
                    walk(message.nested_type, full + ".")
            walk(proto.message_type, proto.package + "." if proto.package else "")
        _PROTO_CLASSES[source] = classes
    return _PROTO_CLASSES[source]


def protobuf_payload(schema_id: int, message: Message, indexes: list[int]) -> bytes:
    """What Confluent's KafkaProtobufSerializer writes: header, message indexes, the Protobuf binary encoding."""
    return encode(schema_id, message.SerializeToString(), indexes)


def json_payload(schema_id: int, value: Any) -> bytes:
    return encode(schema_id, json.dumps(value).encode())
