"""Seeded sample traffic for the demo registry in config/demo, in the recorded form (validation rule 7).

Most messages conform; the rest carry one realistic defect each (a missing
attribute, a wrong type, a payload outside its schema, a stray event type,
a broken body), so the demo summary shows every verdict and several rules.

    python -m gateway.testing.traffic --count 2000 --seed 7 > traffic.jsonl
"""

from __future__ import annotations

import argparse
import base64
import io
import itertools
import json
import random
import sys
from collections.abc import Callable, Iterator
from typing import Any

import fastavro

from gateway.exit_code import ExitCode

_CANCELLED_SCHEMA = fastavro.parse_schema({
    "type": "record", "name": "Cancelled", "namespace": "com.example.orders",
    "fields": [{"name": "orderid", "type": "string"},
               {"name": "reason", "type": {"type": "enum", "name": "Reason", "symbols": ["CUSTOMER", "STOCK", "FRAUD"]}}]})


def _time(rng: random.Random) -> str:
    return f"2026-11-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z"


def telemetry(rng: random.Random, defect: str | None) -> dict[str, Any]:
    device = f"dev-{rng.randint(1, 40)}"
    site = rng.choice(["berlin", "lyon", "porto"])
    headers = {"ce_specversion": "1.0", "ce_type": "com.example.telemetry.reading", "ce_id": str(rng.getrandbits(40)),
               "ce_source": f"/sites/{site}/devices/{device}", "ce_subject": device, "ce_time": _time(rng),
               "content-type": "application/json"}
    body: dict[str, Any] = {"temperature": round(rng.uniform(-10, 40), 1), "unit": "C", "battery": rng.randint(5, 100)}
    key = device
    if defect == "missing-time":
        del headers["ce_time"]
    elif defect == "out-of-range":
        body["temperature"] = 480.0
    elif defect == "wrong-key":
        key = f"dev-{rng.randint(41, 90)}"
    elif defect == "unknown-type":
        headers["ce_type"] = "com.example.telemetry.debug"
    elif defect == "no-specversion":
        del headers["ce_specversion"]
    return {"endpoint": "telemetry.in", "protocol": "KAFKA", "topic": "xgate-demo-telemetry", "partition": rng.randint(0, 2),
            "key": key, "headers": headers, "body": json.dumps(body)}


def order_placed(rng: random.Random, defect: str | None) -> dict[str, Any]:
    order = f"o-{rng.randint(1000, 9999)}"
    event: dict[str, Any] = {"specversion": "1.0", "type": "com.example.orders.placed", "id": str(rng.getrandbits(40)),
             "source": f"https://shop.example.com/{rng.choice(['eu', 'us'])}/orders", "subject": order,
             "time": _time(rng), "datacontenttype": "application/json",
             "data": {"orderid": order, "items": [{"sku": "sku-1", "qty": rng.randint(1, 4)}],
                      "total": round(rng.uniform(5, 500), 2), "currency": "EUR"}}
    if defect == "empty-items":
        event["data"] = {**event["data"], "items": []}
    elif defect == "bad-time":
        event["time"] = "21/11/2026 10:00"
    elif defect == "broken-json":
        return {"endpoint": "orders.http", "protocol": "HTTP", "method": "POST", "path": "/orders",
                "headers": {"Content-Type": "application/cloudevents+json"}, "body": json.dumps(event)[:-9]}
    return {"endpoint": "orders.http", "protocol": "HTTP", "method": "POST", "path": "/orders",
            "headers": {"Content-Type": "application/cloudevents+json; charset=utf-8"}, "body": json.dumps(event)}


def order_cancelled(rng: random.Random, defect: str | None) -> dict[str, Any]:
    order = f"o-{rng.randint(1000, 9999)}"
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, _CANCELLED_SCHEMA, {"orderid": order, "reason": rng.choice(["CUSTOMER", "STOCK"])})
    body = buffer.getvalue()
    if defect == "avro-trailing-bytes":
        body += b"\x00\x01"
    props = {"cloudEvents:specversion": "1.0", "cloudEvents:type": "com.example.orders.cancelled",
             "cloudEvents:id": str(rng.getrandbits(40)), "cloudEvents:source": "https://shop.example.com/eu/orders",
             "cloudEvents:subject": order}
    if defect == "uppercase-attribute":
        props["cloudEvents:Reason"] = "late"
    return {"endpoint": "orders.queue", "protocol": "AMQP/1.0", "properties": {"content-type": "application/avro"},
            "application-properties": props, "body_base64": base64.b64encode(body).decode()}


def boiler(rng: random.Random, defect: str | None) -> dict[str, Any]:
    building, unit = rng.choice(["b1", "b2"]), f"boiler{rng.randint(1, 3)}"
    body: dict[str, Any] = {"state": rng.choice(["on", "off"]), "temperature": round(rng.uniform(40, 80), 1)}
    record = {"endpoint": "facility.mqtt", "protocol": "MQTT/5.0", "topic_name": f"facility/{building}/{unit}/status",
              "qos": 1, "retain": False, "content_type": "application/json",
              "user_properties": [{"name": "building", "value": building}], "body": json.dumps(body)}
    if defect == "qos0":
        record["qos"] = 0
    elif defect == "building-mismatch":
        record["user_properties"] = [{"name": "building", "value": "b9"}]
    elif defect == "bad-state":
        body["state"] = "exploded"
        record["body"] = json.dumps(body)
    return record


def door(rng: random.Random, defect: str | None) -> dict[str, Any]:
    # hand-encoded protobuf: field 1 (string door), field 2 (varint at)
    name = f"d{rng.randint(1, 12)}"
    payload = bytes([0x0A, len(name)]) + name.encode() + bytes([0x10, rng.randint(1, 120)])
    headers = {"ce-specversion": "1.0", "ce-type": "com.example.facility.door.opened", "ce-id": str(rng.getrandbits(32)),
               "ce-source": f"/doors/{name}", "ce-badge": str(rng.randint(1000, 9999))}
    if defect == "badge-not-integer":
        headers["ce-badge"] = "B-17"
    elif defect == "garbled-protobuf":
        payload = b"\xff\xff\xff"
    return {"endpoint": "facility.nats", "protocol": "NATS", "subject": f"facility.doors.{name}",
            "headers": headers, "body_base64": base64.b64encode(payload).decode()}


KINDS: list[tuple[Callable[[random.Random, str | None], dict[str, Any]], float, tuple[str, ...]]] = [
    (telemetry, 0.45, ("missing-time", "out-of-range", "wrong-key", "unknown-type", "no-specversion")),
    (order_placed, 0.2, ("empty-items", "bad-time", "broken-json")),
    (order_cancelled, 0.1, ("avro-trailing-bytes", "uppercase-attribute")),
    (boiler, 0.15, ("qos0", "building-mismatch", "bad-state")),
    (door, 0.1, ("badge-not-integer", "garbled-protobuf")),
]


def records(seed: int, defect_rate: float = 0.15) -> Iterator[dict[str, Any]]:
    """Sample messages without end, the same sequence for the same seed."""
    rng = random.Random(seed)
    makers = [k[0] for k in KINDS]
    weights = [k[1] for k in KINDS]
    while True:
        index = rng.choices(range(len(makers)), weights)[0]
        defects = KINDS[index][2]
        defect = rng.choice(defects) if rng.random() < defect_rate else None
        yield makers[index](rng, defect)


def generate(count: int, seed: int, defect_rate: float = 0.15) -> list[dict[str, Any]]:
    return list(itertools.islice(records(seed, defect_rate), count))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    for record in generate(args.count, args.seed):
        sys.stdout.write(json.dumps(record) + "\n")
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
