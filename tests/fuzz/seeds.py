"""Starting inputs for the fuzzer: real messages of every protocol and payload format, in each target's form.

A coverage-guided fuzzer reaches deep code (a matched definition, a payload schema) much sooner from inputs
that already get there; mutations of these are the "bad messages".
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
from pathlib import Path
from typing import Any

from fastavro import parse_schema, schemaless_writer

from gateway.testing.traffic import generate
from tests.fuzz.targets import CONTENT_TYPES, REPO, TARGETS, endpoints_for

_CE = {"ce_specversion": "1.0", "ce_id": "1", "ce_source": "/acme/berlin/dev-1", "ce_subject": "a.b.c.d.dev-1",
       "ce_time": "2026-11-21T10:00:00Z"}
_JSON = {"id": "abc-1", "reading": 21.5, "tags": ["a", "aa"], "child": {"id": "x", "reading": 1}}
_XML = '<reading xmlns="urn:fuzz" unit="C"><id>aaa12</id><value>1.5</value><word>one two</word></reading>'


def _avro_body() -> bytes:
    doc = json.loads((REPO / "tests" / "fuzz" / "registry" / "fuzz.xreg.json").read_text("utf-8"))
    schema = parse_schema(doc["messagegroups"]["fuzz.ce"]["messages"]["fuzz.avro"]["dataschema"])
    out = io.BytesIO()
    schemaless_writer(out, schema, {"id": "r1", "value": 2.5, "raw": b"\x00\xff", "tags": ["t"], "attrs": {"k": 1},
                                    "unit": "C", "mac": b"abcdef", "at": 0, "next": None, "flags": [None],
                                    "amount": b"\x01"})
    return out.getvalue()


def _records() -> list[dict[str, Any]]:
    """Recorded messages of the fuzz registry, one per endpoint and payload format."""
    avro = base64.b64encode(_avro_body()).decode()
    return [
        {"endpoint": "fuzz.kafka", "protocol": "KAFKA", "topic": "t", "key": "k",
         "headers": {**_CE, "ce_type": "fuzz.json", "ce_count": "5", "ce_flag": "true", "content-type": "application/json"},
         "body": json.dumps(_JSON)},
        {"endpoint": "fuzz.kafka", "protocol": "KAFKA", "headers": {**_CE, "ce_type": "fuzz.avro"}, "body_base64": avro},
        {"endpoint": "fuzz.kafka", "protocol": "KAFKA", "topic": "fuzz.a.b.c", "key": "a-a", "partition": 1,
         "headers": {"x-int": "7", "x-tpl": "b/c"}, "body_base64": avro},
        {"endpoint": "fuzz.http", "protocol": "HTTP", "method": "POST", "path": "/fuzz/a/b/cd",
         "headers": {"Content-Type": "application/cloudevents+json"},
         "body": json.dumps({"specversion": "1.0", "type": "fuzz.xsd", "id": "1", "source": "/a/b/c", "data": _XML})},
        {"endpoint": "fuzz.http", "protocol": "HTTP", "method": "POST", "path": "/", "headers":
            {"Content-Type": "application/cloudevents-batch+json"},
         "body": json.dumps([{"specversion": "1.0", "type": "fuzz.x.v1.x", "id": "1", "source": "/a/b/c"}])},
        {"endpoint": "fuzz.mqtt5", "protocol": "MQTT/5.0", "topic_name": "fuzz/a/b", "qos": 1,
         "user_properties": [{"name": "n", "value": "a"}, {"name": "count", "value": "3"}], "body": json.dumps(_JSON)},
        {"endpoint": "fuzz.mqtt311", "protocol": "MQTT/3.1.1", "topic_name": "fuzz311/x", "body": _XML},
        {"endpoint": "fuzz.amqp", "protocol": "AMQP/1.0", "properties": {"subject": "fuzz.a.b", "message-id": "m"},
         "application-properties": {"count": 1, "blob": {"base64": "AAE="}, "cloudEvents_type": "fuzz.proto"},
         "body_base64": base64.b64encode(b"\n\x02id\x11\x00\x00\x00\x00\x00\x00\xf0?").decode()},
        {"endpoint": "fuzz.nats", "protocol": "NATS", "subject": "fuzz.a.b.a",
         "headers": {"Nats-Msg-Id": "1", "X-Count": "2", "ce-type": "fuzz.schemaless", "ce-id": "q:q"}, "body": _XML},
    ]


def _lines() -> list[bytes]:
    return [json.dumps(r).encode() for r in _records() + generate(40, seed=7)]


def _payloads() -> list[bytes]:
    bodies = [json.dumps(_JSON).encode(), _avro_body(), _XML.encode(), b"\n\x02id\x12\x01a", b"[\"a\", [\"b\"]]"]
    return [bytes([index]) + body for index in range(len(CONTENT_TYPES)) for body in bodies]


def _headers_kafka() -> list[bytes]:
    chunk = _chunk
    seeds = []
    for type_value in (b"fuzz.json", b"fuzz.avro", b"com.example.telemetry.reading"):
        headers = {**{k.encode(): v.encode() for k, v in _CE.items()}, b"ce_type": type_value}
        data = bytes([endpoints_for("KAFKA").index("fuzz.kafka")]) + chunk(b"fuzz.a.b.c") + b"\x01" + chunk(b"k")
        data += bytes([len(headers)]) + b"".join(chunk(k) + b"\x01" + chunk(v) for k, v in headers.items())
        seeds.append(data + chunk(b"\x00") + b"\x00" + json.dumps(_JSON).encode())
    return seeds


def _chunk(data: bytes) -> bytes:
    return bytes([len(data)]) + data


def _mqtt() -> list[bytes]:
    from protocol_adapters.mqtt.mapping import publish_properties

    seeds = []
    for protocol, endpoint in ((0, "fuzz.mqtt5"), (1, "fuzz.mqtt311")):
        names = endpoints_for("MQTT/5.0" if protocol == 0 else "MQTT/3.1.1")
        properties = publish_properties({"content_type": "application/json", "payload_format": 1,
                                         "correlation_data": b"\x00\x01", "message_expiry_interval": 60,
                                         "user_properties": [("n", "a"), ("specversion", "1.0"), ("type", "fuzz.json"),
                                                             ("id", "1"), ("source", "/a/b/c")]})
        packed = properties.pack() if properties is not None else b"\x00"
        seeds.append(bytes([protocol, names.index(endpoint)]) + _chunk(b"fuzz/a/b") + b"\x01\x00" + _chunk(packed)
                     + json.dumps(_JSON).encode())
    return seeds


def _amqp() -> list[bytes]:
    from gateway.envelope import Envelope
    from protocol_adapters.amqp.mapping import encode_message

    index = endpoints_for("AMQP/1.0").index("fuzz.amqp")
    fields = {"properties": {"subject": "fuzz.a.b", "message-id": "m", "content-type": "application/x-protobuf"},
              "application-properties": {"count": 1, "blob": b"\x00", "cloudEvents_type": "fuzz.proto",
                                         "cloudEvents_specversion": "1.0", "cloudEvents_id": "1",
                                         "cloudEvents_source": "/a/b/c"},
              "message-annotations": {"x-opt-tag": "t"}, "footer": {"f": 1}}
    return [bytes([index]) + encode_message(Envelope("AMQP/1.0", fields, b"\n\x02id"), durable=True)]


def _nats() -> list[bytes]:
    index = endpoints_for("NATS").index("fuzz.nats")
    headers = b"Nats-Msg-Id: 1\r\nX-Count: 2\r\nce-specversion: 1.0\r\nce-type: fuzz.xsd\r\nce-id: 1\r\n"
    return [bytes([index]) + _chunk(b"fuzz.a.b.a") + _chunk(b"") + _chunk(headers[:200]) + _chunk(headers[200:])
            + _XML.encode()]


def _http() -> list[bytes]:
    index = endpoints_for("HTTP").index("fuzz.http")
    headers = [(b"ce-specversion", b"1.0"), (b"ce-type", b"fuzz.json"), (b"ce-id", b"1"), (b"ce-source", b"/a/b/c"),
               (b"X-Key", b"k")]
    raw = bytes([len(headers)]) + b"".join(_chunk(n) + _chunk(v) for n, v in headers)
    return [bytes([index, 0]) + _chunk(b"/fuzz/a/b/cd") + _chunk(b"q=1&who=a") + raw + bytes([1, 0])
            + json.dumps(_JSON).encode()]


def _templates() -> list[bytes]:
    return [b"/{a}/{b}/x\x00/1/2/x", b"{a}.{b}.{c}\x00x.y.z.w", b"{id}:{id}\x00a:b:a:b", b"{x}{y}?{z}#\x00ab?c#"]


def seeds_for(target: str) -> list[bytes]:
    if target == "check_line":
        return _lines()
    if target == "payload":
        return _payloads()
    if target == "kafka":
        return _headers_kafka()
    if target == "templates":
        return _templates()
    if target in ("mqtt", "amqp", "nats", "http"):
        return {"mqtt": _mqtt, "amqp": _amqp, "nats": _nats, "http": _http}[target]()
    if target == "mixed":
        names = list(TARGETS)
        return [bytes([names.index(name)]) + seed for name in names for seed in seeds_for(name)]
    return [b"", b"\x00" * 16, json.dumps(_JSON).encode(), _XML.encode()]


def write(target: str, corpus: Path) -> None:
    for seed in seeds_for(target):
        (corpus / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
