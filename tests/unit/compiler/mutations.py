"""Mutations of conformant recorded messages for the accepting pass's differential test.

Each mutation takes a conformant record and a seeded Random and returns a changed record or Envelope (None
when it does not apply to that record). They reach every protocol's CloudEvents reading: structured events
(the JSON body), Kafka `ce_` headers, HTTP/NATS `ce-` headers, AMQP `cloudEvents:` application properties.
"""

from __future__ import annotations

import base64
import copy
import json
import random
from collections.abc import Callable, Iterator
from typing import Any

from gateway.envelope import Envelope
from gateway.recorded import RecordError, envelope_from_record

Record = dict[str, Any]
Mutation = Callable[[Record, random.Random], "Record | Envelope | None"]

_PREFIX = {"KAFKA": "ce_", "HTTP": "ce-", "NATS": "ce-"}
_AMQP = "cloudEvents:"


def structured(record: Record) -> bool:
    headers = record.get("headers") or {}
    content_type = record.get("content_type") or next(
        (v for k, v in headers.items() if k.lower() == "content-type" and isinstance(v, str)), "")
    return str(content_type).lower().startswith("application/cloudevents") or record["protocol"] == "MQTT/3.1.1"


class Event:
    """The CloudEvents attributes of a record, read and written whatever its binding."""

    def __init__(self, record: Record) -> None:
        self.record = copy.deepcopy(record)
        self.structured = structured(record)
        if self.structured:
            self.event = json.loads(self.record["body"])
        self.protocol = record["protocol"]

    def _map(self) -> tuple[dict[str, Any], str] | None:
        if self.protocol in _PREFIX:
            return self.record.setdefault("headers", {}), _PREFIX[self.protocol]
        if self.protocol == "AMQP/1.0":
            return self.record.setdefault("application-properties", {}), _AMQP
        return None

    def names(self) -> list[str]:
        if self.structured:
            return [k for k in self.event if k not in ("data", "data_base64")]
        found = self._map()
        if found is None:
            return []
        values, prefix = found
        return [k[len(prefix):] for k in values if k.lower().startswith(prefix.lower())]

    def get(self, name: str) -> Any:
        if self.structured:
            return self.event.get(name)
        found = self._map()
        return found[0].get(found[1] + name) if found else None

    def set(self, name: str, value: Any) -> bool:
        if self.structured:
            self.event[name] = value
            return True
        found = self._map()
        if found is None:
            return False
        found[0][found[1] + name] = value
        return True

    def delete(self, name: str) -> None:
        if self.structured:
            self.event.pop(name, None)
        else:
            found = self._map()
            if found:
                found[0].pop(found[1] + name, None)

    def done(self) -> Record:
        if self.structured:
            self.record["body"] = json.dumps(self.event)
        return self.record


def _attribute(change: Callable[[Event, random.Random], bool]) -> Mutation:
    def mutate(record: Record, rng: random.Random) -> Record | None:
        event = Event(record)
        if not event.names() or not change(event, rng):
            return None
        return event.done()
    return mutate


def _drop(event: Event, rng: random.Random) -> bool:
    event.delete(rng.choice(event.names()))
    return True


def _alter(event: Event, rng: random.Random) -> bool:
    name = rng.choice(event.names())
    value = event.get(name)
    return event.set(name, (value + rng.choice(["x", "/x", "", " "])) if isinstance(value, str) else "x")


def _set(name: str, *values: Any) -> Mutation:
    return _attribute(lambda event, rng: event.set(name, rng.choice(values)))


def _trailing_newline(event: Event, rng: random.Random) -> bool:
    name = rng.choice(event.names())
    value = event.get(name)
    return isinstance(value, str) and event.set(name, value + "\n")


def _null(event: Event, rng: random.Random) -> bool:
    return event.structured and event.set(rng.choice(event.names()), None)


def _sibling_type(event: Event, rng: random.Random) -> bool:
    kind = event.get("type")
    if not isinstance(kind, str) or "." not in kind:
        return False
    head = kind.rpartition(".")[0]
    return event.set("type", rng.choice([head + ".reading", head + ".relay.tripped", head[:-1], kind + ".bysite",
                                         "com.example.grid.reading", "com.example.fleet.position"]))


def _ce_header_exactly_prefix(record: Record, rng: random.Random) -> Record | None:
    event = Event(record)
    if event.structured:
        event.event[""] = "x"
        return event.done()
    return event.done() if event.set("", rng.choice(["x", ""])) else None


def _non_utf8_header(record: Record, rng: random.Random) -> Record | Envelope | None:
    event = Event(record)
    names = event.names()
    if event.structured or not names:
        return None
    name = rng.choice(names + ["myext"])
    raw = rng.choice([b"\xff\xfe", b"\xc3\x28", b"ok\x80", b"\xed\xa0\x80"])
    if event.protocol == "KAFKA":
        event.set(name, {"base64": base64.b64encode(raw).decode()})
        return event.done()
    envelope = envelope_from_record(event.done())
    if event.protocol in ("HTTP", "NATS"):  # as an adapter hands over a value it could not read
        prefix = _PREFIX[event.protocol]
        headers = [(k, v) for k, v in envelope.fields["headers"] if k.lower() != prefix + name]
        envelope.fields["headers"] = headers + [(prefix + name, raw)]
        return envelope
    return None


def _structured_only(change: Callable[[Record, dict[str, Any], random.Random], str | None]) -> Mutation:
    """A change to the structured event's JSON text itself (duplicates, escapes, raw bytes)."""
    def mutate(record: Record, rng: random.Random) -> Record | None:
        if not structured(record):
            return None
        text = change(record, json.loads(record["body"]), rng)
        if text is None:
            return None
        out = copy.deepcopy(record)
        out["body"] = text
        return out
    return mutate


def _dup_attribute(record: Record, event: dict[str, Any], rng: random.Random) -> str:
    name = rng.choice([k for k in event if k != "data"])
    again = json.dumps({name: rng.choice([event[name], "other", "x:y"])})[1:-1]
    return json.dumps(event)[:-1] + ", " + again + "}"


def _dup_in_data(record: Record, event: dict[str, Any], rng: random.Random) -> str | None:
    data = event.get("data")
    if not isinstance(data, dict) or not data:
        return None
    name = rng.choice(list(data))
    again = json.dumps({name: data[name] if rng.random() < 0.5 else 999})[1:-1]
    inner = json.dumps(data)[:-1] + ", " + again + "}"
    rest = {k: v for k, v in event.items() if k != "data"}
    return json.dumps(rest)[:-1] + ', "data": ' + inner + "}"


def _escaped(record: Record, event: dict[str, Any], rng: random.Random) -> str:
    # a \u escape (the duplicate check's slow path) with or without a duplicate beside it
    text = json.dumps(event, ensure_ascii=True)[:-1] + ', "note\\u0031": "a\\u003ab"'
    return text + (', "note1": "c"}' if rng.random() < 0.5 else "}")


def _binary_body(change: Callable[[Any, random.Random], str | None]) -> Mutation:
    def mutate(record: Record, rng: random.Random) -> Record | None:
        if structured(record) or not isinstance(record.get("body"), str):
            return None
        try:
            body = json.loads(record["body"])
        except ValueError:
            return None
        text = change(body, rng)
        if text is None:
            return None
        out = copy.deepcopy(record)
        out["body"] = text
        return out
    return mutate


def _dup_in_body(body: Any, rng: random.Random) -> str | None:
    if not isinstance(body, dict) or not body:
        return None
    name = rng.choice(list(body))
    return json.dumps(body)[:-1] + ", " + json.dumps({name: body[name]})[1:-1] + "}"


def _data_change(change: Callable[[dict[str, Any], random.Random], bool]) -> Mutation:
    """A change to the payload value, in structured `data` or a binary JSON body alike."""
    def mutate(record: Record, rng: random.Random) -> Record | None:
        out = copy.deepcopy(record)
        if structured(record):
            event = json.loads(out["body"])
            data = event.get("data")
            if not isinstance(data, dict) or not change(data, rng):
                return None
            out["body"] = json.dumps(event)
            return out
        if not isinstance(out.get("body"), str):
            return None
        try:
            data = json.loads(out["body"])
        except ValueError:
            return None
        if not isinstance(data, dict) or not change(data, rng):
            return None
        out["body"] = json.dumps(data)
        return out
    return mutate


_BOUNDS = [0, -0.0, 5.0, 5, 1e-9, -1e-9, 2**31 - 1, 2**31, -(2**31), 1e308, 100000, 100001, 100000.0, 150,
           150.0000000001, -90, 90.0, 180.00001, "5", True, None]


def _number_at_bound(data: dict[str, Any], rng: random.Random) -> bool:
    numbers = [k for k, v in data.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if isinstance(data.get("location"), dict) and rng.random() < 0.3:
        data["location"][rng.choice(["lat", "lon", "accuracy"])] = rng.choice(_BOUNDS)
        return True
    if not numbers:
        return False
    name = rng.choice(numbers)
    value = data[name]
    data[name] = rng.choice(_BOUNDS + [float(value), value + 1, -value, int(value) if value == int(value) else 0])
    return True


def _extra_member(data: dict[str, Any], rng: random.Random) -> bool:
    target = data["location"] if isinstance(data.get("location"), dict) and rng.random() < 0.5 else data
    target[rng.choice(["extra", "x", "Lat"])] = rng.choice([1, "y", None, {}])
    return True


def _drop_member(data: dict[str, Any], rng: random.Random) -> bool:
    data.pop(rng.choice(list(data)), None)
    return bool(data) or True


def _member_type(data: dict[str, Any], rng: random.Random) -> bool:
    name = rng.choice(list(data))
    value = data[name]
    data[name] = str(value) if not isinstance(value, str) else rng.choice([1, ["x"], value.upper(), value + "\n"])
    return True


def _content_type_header(record: Record, rng: random.Random) -> Record | None:
    out = copy.deepcopy(record)
    headers = out.get("headers")
    if isinstance(headers, dict):
        for name in list(headers):
            if name.lower() == "content-type":
                headers[name] = rng.choice(["application/json", "application/cloudevents+json", "text/plain",
                                            "application/cloudevents-batch+json", "APPLICATION/CLOUDEVENTS+JSON"])
                return out
        headers["content-type"] = rng.choice(["application/xml", "application/cloudevents+json"])
        return out
    if out["protocol"] == "MQTT/5.0":
        out["content_type"] = rng.choice(["application/cloudevents+json", "application/xml", "text/json"])
        return out
    return None


def _broken_body(record: Record, rng: random.Random) -> Record | None:
    out = copy.deepcopy(record)
    if isinstance(out.get("body"), str):
        body = out["body"]
        out["body"] = rng.choice([body[:-3], body + "x", "", "[]", "null", "{}", body + "\n"])
        return out
    out["body_base64"] = base64.b64encode(rng.choice([b"", b"\xff\xfe", b"{}"])).decode()
    return out


def _non_utf8_body(record: Record, rng: random.Random) -> Record | None:
    if not isinstance(record.get("body"), str) or '"' not in record["body"]:
        return None
    out = copy.deepcopy(record)
    raw = record["body"].encode()
    cut = raw.index(b'"') + 1
    out.pop("body")
    out["body_base64"] = base64.b64encode(raw[:cut] + b"\xff" + raw[cut:]).decode()
    return out


def _protocol_field(record: Record, rng: random.Random) -> Record | None:
    out = copy.deepcopy(record)
    protocol = out["protocol"]
    if protocol == "KAFKA":
        out[rng.choice(["key", "topic"])] = rng.choice(["dev-1", "dev-77", "other", ""])
    elif protocol.startswith("MQTT"):
        choice = rng.choice(["qos", "topic", "user"])
        if choice == "qos":
            out["qos"] = rng.choice([0, 1, 2])
        elif choice == "topic":
            out["topic_name"] = rng.choice(["facility/b1/boiler1/status", "facility/b9/x/status", "other"])
        else:
            out["user_properties"] = rng.choice([[], [{"name": "building", "value": "b2"}],
                                                 [{"name": "building", "value": "b1"}] * 2])
    elif protocol in ("NATS", "HTTP"):
        out["subject" if protocol == "NATS" else "path"] = rng.choice(["facility.doors.d1", "/orders", "x"])
    else:
        out.setdefault("properties", {})["content-type"] = rng.choice(["application/avro", "avro/binary", "x/y"])
    return out


def _percent(event: Event, rng: random.Random) -> bool:
    name = rng.choice(event.names())
    value = event.get(name)
    return isinstance(value, str) and event.set(name, value + rng.choice(["%41", "%zz", "%C3%28", '"q"', "%"]))


MUTATIONS: dict[str, Mutation] = {
    "drop-attribute": _attribute(_drop),
    "alter-attribute": _attribute(_alter),
    "bad-source": _set("source", "/nope/x", "", "/fleet/eu-west/vehicles/", "/fleet//vehicles/v", "a b", "%zz",
                       "/fleet/eu-west/vehicles/veh-1/extra", "/depots/eu-west/sensors/s-1"),
    "sibling-type": _attribute(_sibling_type),
    "unknown-type": _set("type", "com.example.unknown", "", 5),
    "trailing-newline": _attribute(_trailing_newline),
    "null-attribute": _attribute(_null),
    "integer-attribute": _set("seqno", 5, 5.0, "5", 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, "007", True, "x", 1e3),
    "specversion": _set("specversion", "1.1", 1.0, "1.0 ", None),
    "time-format": _set("time", "2026-03-01t10:00:00z", "2026-03-01 10:00:00Z", "2026-03-01T10:00:00+0100",
                        "2026-03-01T10:00:00", "2026-02-30T10:00:00Z", "2026-03-01T10:00:00.1234567Z",
                        "0000-01-01T00:00:00Z"),
    "content-type-attribute": _set("datacontenttype", "application/xml", "application/json; charset=utf-8",
                                   "APPLICATION/JSON", "application/foo+json", 5),
    "dataschema": _set("dataschema", "https://other.example.com/x", "not a uri", "/relative", 7),
    "id": _set("id", "", 0, "x" * 300, "é"),
    "extra-attribute": _set("extension1", "v", "", 1, True),
    "bad-attribute-name": _set("Bad_Name", "v"),
    "ce-prefix-only": _ce_header_exactly_prefix,
    "non-utf8-header": _non_utf8_header,
    "percent-encoding": _attribute(_percent),
    "duplicate-attribute": _structured_only(_dup_attribute),
    "duplicate-in-data": _structured_only(_dup_in_data),
    "escaped-members": _structured_only(_escaped),
    "duplicate-in-body": _binary_body(_dup_in_body),
    "number-at-bound": _data_change(_number_at_bound),
    "extra-member": _data_change(_extra_member),
    "drop-member": _data_change(_drop_member),
    "member-type": _data_change(_member_type),
    "content-type-header": _content_type_header,
    "broken-body": _broken_body,
    "non-utf8-body": _non_utf8_body,
    "protocol-field": _protocol_field,
    "tenant-value": _set("tenant", "acme-other", "acme-fleet", "acme-grid\n"),
}


def mutated(seeds: list[Record], kinds: dict[str, Mutation], per_kind: int,
            rng: random.Random) -> Iterator[tuple[str, Record | Envelope, Envelope]]:
    """Up to `per_kind` messages of each kind of change, as (kind, the changed record, its Envelope); a change
    that does not apply to the seed drawn, or whose record does not read, is drawn again (20 tries each)."""
    for kind, mutate in kinds.items():
        made = attempts = 0
        while made < per_kind and attempts < per_kind * 20:
            attempts += 1
            changed = mutate(rng.choice(seeds), rng)
            if changed is None:
                continue
            try:
                envelope = changed if isinstance(changed, Envelope) else envelope_from_record(changed)
            except RecordError:
                continue
            made += 1
            yield kind, changed, envelope
