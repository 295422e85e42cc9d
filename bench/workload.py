"""The seeded reference workload of issue 6 (item 2): one registry document and recorded Kafka traffic for it.

    python -m bench.workload --count 100000 --seed 6 --out build/workload

writes `workload.xreg.json` (50 definitions in 5 message groups, one Kafka consumer endpoint listing all five,
routed by labels to two producer endpoints) and `messages.jsonl` (recorded messages, validation rule 7). In each group two definitions share a
CloudEvents `type` and differ in their `source` template, so dispatch on `type` alone cannot decide. Traffic
is Zipf-skewed over the definitions, 70% structured and 30% binary mode, ~80% conformant, 0.5% malformed JSON
and the rest spread evenly over the defect kinds of DEFECTS.

Every defect is one a cloudevents-SDK decoder can see as well (bench/naive.py must agree with xgate): the SDK
fills in a missing `id`, `specversion` and `time`, so those three "absent" defects are left out on purpose.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

SEED = 6
COUNT = 100_000
ENDPOINT = "workload.in"
TOPIC = "xgate-bench-workload"
BOOTSTRAP = "127.0.0.1:9092"
STRUCTURED_SHARE = 0.70
CONFORMANT_SHARE = 0.80
MALFORMED_SHARE = 0.005
ZIPF_EXPONENT = 1.1
OK = "ok"
MALFORMED = "malformed"

_EPOCH = datetime(2026, 3, 1, tzinfo=UTC)
_REGIONS = ("eu-west", "eu-north", "us-east", "us-west", "ap-south")
_TAGS = ("night", "urban", "rural", "priority", "audit", "retry", "backfill", "edge", "manual", "bulk")
_WORDS = ("sensor", "window", "reading", "batch", "gateway", "stable", "drift", "nominal", "peak", "idle",
          "queue", "checked", "relay", "north", "south", "sample", "uplink", "buffer", "calm", "spike")


@dataclass(frozen=True, slots=True)
class Domain:
    """One message group's vocabulary: its source paths, event names and payload field names."""

    name: str
    collection: str
    sibling: tuple[str, str]  # (root, collection) of the second `source` template of the shared type
    events: tuple[str, ...]  # nine: the first is the type two definitions share
    key: str
    prefix: str  # the key's pattern is ^PREFIX-[0-9]{6}$
    state: str
    states: tuple[str, ...]
    measure: str
    span: tuple[float, float]


_DOMAINS = (
    Domain("fleet", "vehicles", ("depots", "sensors"),
           ("position", "trip.started", "trip.ended", "fuel.level", "door.opened", "engine.fault", "driver.login",
            "maintenance.due", "geofence.crossed"), "vehicle", "VEH", "status",
           ("moving", "parked", "idle", "towed", "service"), "speed", (0.0, 220.0)),
    Domain("grid", "meters", ("substations", "feeders"),
           ("reading", "outage.started", "outage.ended", "voltage.sag", "tamper", "tariff.changed",
            "firmware.updated", "demand.peak", "relay.tripped"), "meter", "MTR", "phase",
           ("l1", "l2", "l3", "neutral"), "kilowatts", (-50.0, 500.0)),
    Domain("retail", "stores", ("warehouses", "scanners"),
           ("sale", "refund", "stock.low", "price.changed", "basket.abandoned", "till.opened", "till.closed",
            "coupon.redeemed", "shelf.scanned"), "receipt", "RCT", "channel",
           ("store", "online", "kiosk", "phone"), "amount", (0.0, 5000.0)),
    Domain("clinic", "wards", ("labs", "analyzers"),
           ("vitals", "admission", "discharge", "alarm.raised", "alarm.cleared", "dose.given", "bed.assigned",
            "sample.taken", "round.completed"), "patient", "PAT", "acuity",
           ("low", "medium", "high", "critical"), "pulse", (20.0, 240.0)),
    Domain("parcel", "hubs", ("sorters", "conveyors"),
           ("scanned", "loaded", "delivered", "returned", "damaged", "rerouted", "held", "weighed",
            "label.printed"), "parcel", "PCL", "service",
           ("standard", "express", "freight", "economy", "sameday"), "weight", (0.05, 70.0)),
)


@dataclass(frozen=True, slots=True)
class Definition:
    """One message definition and the parameters its messages are generated from."""

    domain: Domain
    group: str
    messageid: str
    ce_type: str
    root: str
    collection: str
    placeholder: str  # the first placeholder of the source template (`region` or `site`)
    tenant: str
    states: tuple[str, ...]
    low: float
    high: float
    max_samples: int
    inline: bool  # inline `dataschema`, or a `dataschemauri` into the schema group

    @property
    def source_template(self) -> str:
        return f"/{self.root}/{{{self.placeholder}}}/{self.collection}/{{id}}"

    @property
    def dataschema(self) -> str:
        return f"https://schemas.example.com/{self.messageid.replace('.', '/')}/v1"

    def schema(self) -> dict[str, Any]:
        d = self.domain
        return {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "required": [d.key, d.state, d.measure, "count", "location", "samples", "label"],
            "properties": {
                d.key: {"type": "string", "pattern": f"^{d.prefix}-[0-9]{{6}}$"},
                d.state: {"type": "string", "enum": list(self.states)},
                d.measure: {"type": "number", "minimum": self.low, "maximum": self.high},
                "count": {"type": "integer", "minimum": 0, "maximum": 100000},
                "ratio": {"type": "number", "minimum": 0, "maximum": 1},
                "location": {"type": "object", "required": ["lat", "lon"], "additionalProperties": False,
                             "properties": {"lat": {"type": "number", "minimum": -90, "maximum": 90},
                                            "lon": {"type": "number", "minimum": -180, "maximum": 180},
                                            "accuracy": {"type": "number", "minimum": 0}}},
                "samples": {"type": "array", "maxItems": self.max_samples, "items": {"type": "number"}},
                "tags": {"type": "array", "maxItems": 6, "items": {"type": "string", "pattern": "^[a-z][a-z-]*$"}},
                "label": {"type": "string", "maxLength": 80},
                "note": {"type": "string", "maxLength": 400},
                "flagged": {"type": "boolean"},
            },
        }


def definitions(seed: int = SEED) -> list[Definition]:
    """50 definitions: per domain nine types, the first of them declared twice with different sources."""
    rng = random.Random(f"{seed}/definitions")
    found: list[Definition] = []
    for domain in _DOMAINS:
        group = f"com.example.{domain.name}"
        tenant = f"acme-{domain.name}"
        for index, event in enumerate((domain.events[0], *domain.events)):
            sibling = index == 0
            low, high = domain.span
            width = high - low
            found.append(Definition(
                domain, group, f"{group}.{event}" + (".bysite" if sibling else ""), f"{group}.{event}",
                domain.sibling[0] if sibling else domain.name, domain.sibling[1] if sibling else domain.collection,
                "site" if sibling else "region", tenant,
                tuple(sorted(rng.sample(domain.states, len(domain.states) - 1))),
                round(low + rng.uniform(0, 0.1) * width, 2), round(high - rng.uniform(0, 0.1) * width, 2),
                rng.randint(8, 24), index % 2 == 0))
    return found


def _message_document(d: Definition) -> dict[str, Any]:
    message: dict[str, Any] = {
        "description": f"{d.ce_type} from {d.source_template}",
        "envelope": "CloudEvents/1.0",
        "envelopemetadata": {
            "specversion": {"value": "1.0", "required": True},
            "type": {"value": d.ce_type, "required": True},
            "source": {"type": "uritemplate", "value": d.source_template, "required": True},
            "id": {"type": "string", "required": True},
            "time": {"type": "timestamp", "required": True},
            "subject": {"type": "string", "required": True},
            "datacontenttype": {"value": "application/json", "required": True},
            "dataschema": {"type": "uri", "value": d.dataschema},
            "tenant": {"type": "string", "value": d.tenant, "required": True},
            "seqno": {"type": "integer", "required": True},
            "origin": {"type": "uri", "required": True},
        },
        "protocol": "KAFKA",
        "dataschemaformat": "JsonSchema/draft-07",
    }
    if d.inline:
        message["dataschema"] = d.schema()
    else:
        message["dataschemauri"] = f"#/schemagroups/{d.group}/schemas/{d.messageid}"
    return message


def registry_document(seed: int = SEED, bootstrap: str = BOOTSTRAP) -> dict[str, Any]:
    """The xRegistry document: five message groups, their schema groups, and the endpoints."""
    defs = definitions(seed)
    groups: dict[str, Any] = {}
    schemagroups: dict[str, Any] = {}
    for d in defs:
        group = groups.setdefault(d.group, {"envelope": "CloudEvents/1.0", "messages": {}})
        group["messages"][d.messageid] = _message_document(d)
        if not d.inline:
            schemas = schemagroups.setdefault(d.group, {"schemas": {}})["schemas"]
            schemas[d.messageid] = {"format": "JsonSchema/draft-07", "versions": {
                "1": {"format": "JsonSchema/draft-07", "schema": d.schema()}}}

    def kafka(usage: str, options: dict[str, Any]) -> dict[str, Any]:
        return {"usage": [usage], "protocol": "KAFKA", "envelope": "CloudEvents/1.0",
                "protocoloptions": {"endpoints": [{"uri": f"tcp://{bootstrap}"}], **options}}

    source = kafka("consumer", {"options": {"topic": TOPIC, "consumergroup": "xgate-bench"}})
    source["messagegroups"] = [f"#/messagegroups/{group}" for group in groups]
    source["labels"] = {"xgate.route.conformant": "workload.valid", "xgate.route.nonconformant": "workload.dlq"}
    return {"specversion": "1.0-rc2",
            "endpoints": {ENDPOINT: source,
                          "workload.valid": kafka("producer", {"topic": f"{TOPIC}-valid"}),
                          "workload.dlq": kafka("producer", {"topic": f"{TOPIC}-dlq"})},
            "messagegroups": groups, "schemagroups": schemagroups}


@dataclass(frozen=True, slots=True)
class Sample:
    """One generated message: its intent (`ok`, `malformed` or a defect of DEFECTS) and its recorded form."""

    kind: str
    messageid: str
    structured: bool
    record: dict[str, Any]


Attributes = dict[str, Any]
Data = dict[str, Any]


def _note(rng: random.Random) -> str:
    return " ".join(rng.choices(_WORDS, k=rng.randint(36, 50)))


def _event(rng: random.Random, d: Definition, serial: int, when: datetime) -> tuple[Attributes, Data, str]:
    """A conformant event of `d`: attributes, data and the entity id (also the Kafka key)."""
    dom = d.domain
    entity = f"{dom.collection[:3]}-{rng.randint(1, 9999):04d}"
    attributes: Attributes = {
        "specversion": "1.0", "id": f"{serial:08d}-{rng.getrandbits(48):012x}",
        "source": f"/{d.root}/{rng.choice(_REGIONS)}/{d.collection}/{entity}", "type": d.ce_type,
        "time": when.isoformat(timespec="milliseconds").replace("+00:00", "Z"), "subject": entity,
        "datacontenttype": "application/json", "dataschema": d.dataschema, "tenant": d.tenant, "seqno": serial,
        "origin": f"https://relay.example.com/{dom.name}/gw-{rng.randint(1, 40)}",
    }
    samples = rng.randint(d.max_samples // 2, d.max_samples)
    data: Data = {
        dom.key: f"{dom.prefix}-{rng.randint(0, 999999):06d}",
        dom.state: rng.choice(d.states),
        dom.measure: round(rng.uniform(d.low, d.high), 2),
        "count": rng.randint(0, 100000),
        "ratio": round(rng.random(), 3),
        "location": {"lat": round(rng.uniform(-90, 90), 5), "lon": round(rng.uniform(-180, 180), 5),
                     "accuracy": round(rng.uniform(0.5, 30), 1)},
        "samples": [round(rng.uniform(d.low, d.high), 2) for _ in range(samples)],
        "tags": rng.sample(_TAGS, rng.randint(1, 4)),
        "label": f"{d.ce_type.rsplit('.', 2)[-2]} {entity} #{serial}",
        "note": _note(rng),
        "flagged": rng.random() < 0.1,
    }
    return attributes, data, entity


Defect = Callable[[random.Random, Definition, Attributes, Data], None]


def _bad_source(rng: random.Random, d: Definition, a: Attributes, data: Data) -> None:
    # fits neither template of the shared type: a segment too few, one too many, or another root
    region, entity = rng.choice(_REGIONS), a["subject"]
    a["source"] = rng.choice((f"/{d.root}/{region}/{d.collection}",
                              f"/{d.root}/{region}/archive/{d.collection}/{entity}",
                              f"/legacy/{d.collection}/{entity}"))


def _bad_time(rng: random.Random, d: Definition, a: Attributes, data: Data) -> None:
    # no day 30 in February, no offset, or no timestamp at all
    a["time"] = rng.choice(("2026-02-30T10:00:00Z", a["time"][:19], "yesterday at noon"))


def _del(name: str) -> Defect:
    return lambda rng, d, a, data: a.pop(name)


def _set(name: str, value: Any) -> Defect:
    return lambda rng, d, a, data: a.__setitem__(name, value)


def _drop_required(rng: random.Random, d: Definition, a: Attributes, data: Data) -> None:
    del data[rng.choice(d.schema()["required"])]


def _wrong_type(rng: random.Random, d: Definition, a: Attributes, data: Data) -> None:
    name = rng.choice(("count", d.domain.measure))
    data[name] = str(data[name])


_DEFECTS: dict[str, Defect] = {
    "missing-subject": _del("subject"),
    "empty-id": _set("id", ""),
    "wrong-specversion": lambda rng, d, a, data: a.__setitem__("specversion", rng.choice(("1.1", "2.0", "0.3"))),
    "source-template": _bad_source,
    "bad-timestamp": _bad_time,
    "bad-uri": lambda rng, d, a, data: a.__setitem__("origin", rng.choice(("relay.example.com/gw-7", "not a uri"))),
    "non-integer": lambda rng, d, a, data: a.__setitem__("seqno", rng.choice(("seventeen", a["seqno"] + 0.5))),
    "missing-extension": lambda rng, d, a, data: a.pop(rng.choice(("tenant", "seqno", "origin"))),
    "wrong-tenant": _set("tenant", "globex"),
    "wrong-content-type": _set("datacontenttype", "text/plain"),
    "unknown-type": lambda rng, d, a, data: a.__setitem__("type", d.ce_type + ".v2"),
    "schema-pattern": lambda rng, d, a, data: data.__setitem__(d.domain.key, data[d.domain.key].lower()),
    "schema-enum": lambda rng, d, a, data: data.__setitem__(d.domain.state, "unknown"),
    "schema-minimum": lambda rng, d, a, data: data.__setitem__(d.domain.measure,
                                                               round(d.low - rng.uniform(1, 50), 2)),
    "schema-maximum": lambda rng, d, a, data: data.__setitem__(d.domain.measure,
                                                               round(d.high + rng.uniform(1, 50), 2)),
    "schema-required": _drop_required,
    "schema-additional": lambda rng, d, a, data: data["location"].__setitem__("altitude", rng.randint(0, 3000)),
    "schema-max-items": lambda rng, d, a, data: data["samples"].extend(
        [1.0] * (d.max_samples + rng.randint(1, 4) - len(data["samples"]))),
    "schema-type": _wrong_type,
}
DEFECTS = tuple(_DEFECTS)
KINDS = (OK, MALFORMED, *DEFECTS)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _record(rng: random.Random, attributes: Attributes, data: Data, key: str, when: datetime, structured: bool,
            malformed: bool) -> dict[str, Any]:
    """The Kafka recorded form: structured (event JSON in the value) or binary (`ce_` headers, data in the value)."""
    if structured:
        headers = {"content-type": "application/cloudevents+json"}
        body = _dumps({**attributes, "data": data})
    else:
        headers = {("content-type" if name == "datacontenttype" else f"ce_{name}"): str(value)
                   for name, value in attributes.items()}
        body = _dumps(data)
    if malformed:
        # a proper prefix of a JSON object is never valid JSON
        body = body[:rng.randint(len(body) // 4, 3 * len(body) // 4)]
    return {"endpoint": ENDPOINT, "protocol": "KAFKA", "topic": TOPIC, "partition": rng.randrange(6), "key": key,
            "timestamp": int(when.timestamp() * 1000), "headers": headers, "body": body}


def _kind(draw: float) -> str:
    """A uniform draw in [0, 1) -> malformed, one defect (evenly spread), or ok."""
    if draw < MALFORMED_SHARE:
        return MALFORMED
    if draw >= 1 - CONFORMANT_SHARE:
        return OK
    return DEFECTS[int((draw - MALFORMED_SHARE) / (1 - CONFORMANT_SHARE - MALFORMED_SHARE) * len(DEFECTS))]


def samples(count: int = COUNT, seed: int = SEED) -> list[Sample]:
    """`count` messages, deterministic for `seed`."""
    defs = definitions(seed)
    rng = random.Random(f"{seed}/messages")
    ranks = list(range(1, len(defs) + 1))
    rng.shuffle(ranks)  # which definitions are popular is seeded too
    chosen = rng.choices(defs, cum_weights=list(itertools.accumulate(r ** -ZIPF_EXPONENT for r in ranks)), k=count)
    out: list[Sample] = []
    for serial, d in enumerate(chosen):
        kind = _kind(rng.random())
        structured = rng.random() < STRUCTURED_SHARE
        when = _EPOCH + timedelta(milliseconds=serial * 25 + rng.randrange(25))
        attributes, data, key = _event(rng, d, serial, when)
        if kind in _DEFECTS:
            _DEFECTS[kind](rng, d, attributes, data)
        record = _record(rng, attributes, data, key, when, structured, kind == MALFORMED)
        out.append(Sample(kind, d.messageid, structured, record))
    return out


def messages(count: int = COUNT, seed: int = SEED) -> list[dict[str, Any]]:
    """The recorded messages alone (what a benchmark replays)."""
    return [s.record for s in samples(count, seed)]


def wire_size(record: dict[str, Any]) -> int:
    """Bytes on the wire: the value plus header names and values (the key is left out)."""
    return len(record["body"].encode()) + sum(len(k) + len(v.encode()) for k, v in record["headers"].items())


def write(directory: str | Path, count: int = COUNT, seed: int = SEED) -> tuple[Path, Path]:
    """`workload.xreg.json` and `messages.jsonl` in `directory`."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    document = out / "workload.xreg.json"
    document.write_text(json.dumps(registry_document(seed), indent=2) + "\n")
    lines = out / "messages.jsonl"
    with lines.open("w") as stream:
        for record in messages(count, seed):
            stream.write(_dumps(record) + "\n")
    return document, lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--count", type=int, default=COUNT)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", default="build/workload")
    args = parser.parse_args()
    document, lines = write(args.out, args.count, args.seed)
    print(f"{document}\n{lines}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
