"""`xgate infer`: a draft xRegistry 1.0-rc4 document from recorded traffic, for a person to review.

Samples are grouped per endpoint into one definition per CloudEvents `type`
(per value of the protocol's discriminating field, validation rule 6,
for traffic that is not CloudEvents). Each definition declares what every
sample of its group shows: attributes present in all samples are required,
a single observed value becomes `value` (never for `id` and `time`, which
differ per event by nature), varying path segments of `source`, `subject`,
topics and subjects become placeholders (templates.py), protocol headers
present in all samples are declared, and JSON payloads get an inferred
draft 2020-12 schema (schema.py).

The draft must accept the traffic it was made from: it is compiled and the
training messages are judged with the same compiler the gateway runs. A
definition that refuses one of its own samples is loosened one step at a
time (values, then templates, then the schema, then everything but the
CloudEvents type) until it accepts them. A message no definition could
accept (a structured body that is not JSON, a CloudEvents attribute name
with capitals, ...) is left out and reported, never silently.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway import jsontext
from gateway.bindings import BINDINGS
from gateway.check import judge_record
from gateway.cloudevents import MISSING, read_cloudevents
from gateway.compiler import compile_registry
from gateway.compiler.types import parse_timestamp
from gateway.envelope import Envelope
from gateway.infer.schema import infer_schema
from gateway.infer.templates import Placeholders, pattern_key, segment_values
from gateway.loader import load_snapshot
from gateway.loader.names import protocol_family
from gateway.recorded import RecordError, envelope_from_record
from gateway.verdict import Verdict

SCHEMA_FORMAT = "JsonSchema/draft-2020-12"
# how far a definition is loosened when it refuses one of its own samples
FULL, NO_VALUES, NO_TEMPLATES, NO_SCHEMA, TYPE_ONLY = range(5)
# the field whose headers are drafted as protocol options, per protocol family (the binding's `headers`, where
# `xgate infer` drafts them; it has never drafted an HTTP request's headers)
_HEADERS = {"KAFKA": "headers", "NATS": "headers", "MQTT": "user_properties"}
_TRANSPORT_HEADERS = {"content-type", "content-length", "host", "user-agent", "accept", "accept-encoding",
                      "connection", "date", "authorization", "transfer-encoding"}
_ADDRESS = {"KAFKA": "127.0.0.1:9092", "MQTT": "mqtt://127.0.0.1:1883", "NATS": "nats://127.0.0.1:4222",
            "AMQP/1.0": "amqp://127.0.0.1:5672", "HTTP": "http://127.0.0.1:8080"}
_INTEGER = re.compile(r"[+-]?[0-9]+")
TOPIC_SEPARATORS = "/."
_SAFE_ID = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class Sample:
    number: int  # line in the input, from 1
    record: dict[str, Any]
    envelope: Envelope
    attributes: dict[str, Any] | None  # CloudEvents attributes; None when the message is not a CloudEvent
    mode: str | None
    data: Any  # the parsed JSON payload, or MISSING


@dataclass
class Group:
    endpoint: str
    protocol: str
    messageid: str
    samples: list[Sample] = field(default_factory=list)
    level: int = FULL

    @property
    def cloudevents(self) -> bool:
        return self.samples[0].attributes is not None


def _canon(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def read_sample(number: int, record: Any) -> Sample | str:
    """A training sample, or why the message cannot be one."""
    try:
        envelope = envelope_from_record(record)
    except RecordError as exc:
        return f"not a recorded message: {exc}"
    readings = read_cloudevents(envelope, None)
    if len(readings) != 1:
        return "a CloudEvents batch (infer from its events recorded one by one)"
    reading = readings[0]
    if reading.problem is not None:
        return reading.problem.message
    attributes = reading.attributes if "type" in reading.attributes and "specversion" in reading.attributes else None
    if attributes is not None and reading.mode == "structured":
        data = reading.data if not reading.data_is_bytes else MISSING
    else:
        try:
            data = jsontext.loads(envelope.body) if envelope.body else MISSING
        except ValueError:
            data = MISSING
    return Sample(number, record, envelope, attributes, reading.mode if attributes is not None else None, data)


def _address(protocol: str) -> str:
    """The field a definition is told apart by: where the binding says a message was read ("" for none)."""
    binding = BINDINGS.get(protocol)
    return binding.address if binding is not None else ""


def _discriminator(sample: Sample) -> str:
    family = protocol_family(sample.envelope.protocol) or sample.envelope.protocol
    if family == "AMQP/1.0":
        return str((sample.envelope.fields.get("properties") or {}).get("subject") or "amqp")
    return str(sample.envelope.fields.get(_address(sample.envelope.protocol), "") or family.lower())


def group_samples(samples: Sequence[Sample]) -> list[Group]:
    """One group per CloudEvents `type`, or per discriminator pattern (identifier-like segments that vary)."""
    plain: dict[str, list[str]] = {}
    for sample in samples:
        if sample.attributes is None:
            plain.setdefault(sample.envelope.endpoint or "", []).append(_discriminator(sample))
    varying = {endpoint: segment_values(values, TOPIC_SEPARATORS) for endpoint, values in plain.items()}
    groups: dict[tuple[str, str, str], Group] = {}
    for sample in samples:
        if sample.attributes is not None:
            name = str(sample.attributes["type"])
        else:
            value = _discriminator(sample)
            seen = varying[sample.envelope.endpoint or ""]
            name = pattern_key(value, seen.get(len(re.split("([/.])", value)), []), TOPIC_SEPARATORS)
        endpoint = sample.envelope.endpoint or "inferred.in"
        key = (endpoint, sample.envelope.protocol, name)
        if key not in groups:
            messageid = _SAFE_ID.sub("_", name.replace("*", "x")).strip("_") or "message"
            groups[key] = Group(endpoint, sample.envelope.protocol, messageid)
        groups[key].samples.append(sample)
    return list(groups.values())


def _property(values: Sequence[Any], total: int, level: int, placeholders: Placeholders, name: str,
              kind: str | None = None, separators: str = "/") -> dict[str, Any]:
    """The declaration of one attribute or header from the values the samples carried."""
    declared: dict[str, Any] = {"required": True} if len(values) == total else {}
    canon = [_canon(value) for value in values]
    # read by the judge's own reader (compiler/types.py): a value it would refuse is no timestamp to draft
    if kind == "timestamp" and not all(isinstance(v, str) and parse_timestamp(v) is not None for v in values):
        kind = None  # not every sample carries a timestamp: the draft says no more than the samples show
    if kind is None:
        kind = "integer" if all(_INTEGER.fullmatch(c) and -2**31 <= int(c) < 2**31 for c in canon) else \
            "boolean" if all(c in ("true", "false") for c in canon) else "string"
    declared["type"] = kind
    if kind in ("timestamp",) or name == "id":
        return declared
    if len(set(canon)) == 1 and level < NO_VALUES:
        declared["value"] = canon[0]
        return declared
    if kind == "string" and level < NO_TEMPLATES and len(values) == total:
        template = placeholders.shared(canon) or placeholders.template(canon, name, separators)
        if template is not None:
            declared["value"] = template
            if name == "source":
                declared["type"] = "uritemplate"
    return declared


def _attributes(group: Group, placeholders: Placeholders) -> dict[str, Any]:
    samples = [s.attributes for s in group.samples if s.attributes is not None]
    names = sorted({name for attributes in samples for name in attributes},
                   key=lambda n: (n not in ("type", "source"), n != "type", n))
    out: dict[str, Any] = {}
    for name in names:
        values = [attributes[name] for attributes in samples if name in attributes]
        if group.level >= TYPE_ONLY and name not in ("type", "specversion"):
            continue
        kind = "timestamp" if name == "time" else "uri" if name == "dataschema" else None
        out[name] = _property(values, len(samples), group.level, placeholders, name, kind)
    out["type"] = {"value": str(samples[0]["type"]), "required": True}
    return out


def _protocol_options(group: Group, placeholders: Placeholders) -> dict[str, Any]:
    if group.level >= TYPE_ONLY:
        return {}
    family = protocol_family(group.protocol) or group.protocol
    fields = [s.envelope.fields for s in group.samples]
    total = len(fields)
    options: dict[str, Any] = {}
    discriminator = _address(group.protocol) or None
    if discriminator is not None:
        values = [f.get(discriminator) for f in fields]
        if all(isinstance(v, str) for v in values):
            options[discriminator] = _property(values, total, group.level, placeholders, discriminator, "string",
                                               TOPIC_SEPARATORS)
    if family == "KAFKA":
        keys = [f.get("key") for f in fields]
        if all(isinstance(k, bytes) for k in keys):
            try:
                texts = [k.decode("utf-8") for k in keys if isinstance(k, bytes)]
            except UnicodeDecodeError:
                texts = []
            if texts:
                options["key"] = _property(texts, total, group.level, placeholders, "key", "string")
    headers = _HEADERS.get(family)
    if headers is not None:
        binding = BINDINGS.get(group.protocol)
        prefix = binding.prefixes[0] if binding is not None and binding.prefixes else None  # "" (MQTT 5): none
        seen: dict[str, list[Any]] = {}
        for f in fields:
            for name, value in dict(f.get(headers) or ()).items():
                if not isinstance(value, str) or name.lower() in _TRANSPORT_HEADERS or name.startswith("xgate-"):
                    continue
                if (prefix and name.lower().startswith(prefix)) or (family == "MQTT" and group.cloudevents
                                                                     and re.fullmatch(r"[a-z0-9]+", name)):
                    continue  # a CloudEvents attribute: declared under envelopemetadata
                seen.setdefault(name, []).append(value)
        declared = {name: _property(values, total, group.level, placeholders, name, "string")
                    for name, values in sorted(seen.items()) if len(values) == total}
        if declared:
            options[headers] = declared
    return options


def _definition(group: Group, schema_ref: str | None) -> dict[str, Any]:
    placeholders = Placeholders()
    structured = sum(s.mode == "structured" for s in group.samples)
    definition: dict[str, Any] = {
        "description": f"inferred from {len(group.samples)} messages"
                       + (f" ({structured} structured, {len(group.samples) - structured} binary mode)"
                          if group.cloudevents else "")
                       + (f"; loosened to level {group.level} to accept its own samples" if group.level else ""),
        "protocol": group.protocol}
    if group.cloudevents:
        definition["envelope"] = "CloudEvents/1.0"
        definition["envelopemetadata"] = _attributes(group, placeholders)
    options = _protocol_options(group, placeholders)
    if options:
        definition["protocoloptions"] = options
    if schema_ref is not None:
        definition["dataschemaformat"] = SCHEMA_FORMAT
        definition["dataschemauri"] = schema_ref
    return definition


def _schema(group: Group) -> dict[str, Any] | None:
    payloads = [s.data for s in group.samples]
    if group.level >= NO_SCHEMA or any(p is MISSING for p in payloads):
        return None
    return infer_schema(payloads)


def draft_document(groups: Sequence[Group]) -> dict[str, Any]:
    endpoints: dict[str, Any] = {}
    messagegroups: dict[str, Any] = {}
    schemagroups: dict[str, Any] = {}
    for group in groups:
        family = protocol_family(group.protocol) or group.protocol
        endpoint = endpoints.setdefault(group.endpoint, {
            "description": "inferred by xgate infer: review the address before use",
            "usage": ["consumer"], "protocol": group.protocol,
            "protocoloptions": {"endpoints": [{"bootstrap.servers": [_ADDRESS["KAFKA"]]} if family == "KAFKA"
                                              else {"uri": _ADDRESS.get(family, "")}]},
            "messagegroups": [f"#/messagegroups/{group.endpoint}"]})
        if group.cloudevents:
            endpoint["envelope"] = "CloudEvents/1.0"
        schema = _schema(group)
        reference = None
        if schema is not None:
            schemas = schemagroups.setdefault(group.endpoint, {"schemas": {}})["schemas"]
            schemas[group.messageid] = {"format": SCHEMA_FORMAT, "versions": {"1": {
                "format": SCHEMA_FORMAT, "schema": schema}}}
            reference = f"#/schemagroups/{group.endpoint}/schemas/{group.messageid}"
        messages = messagegroups.setdefault(group.endpoint, {"messages": {}})["messages"]
        messages[group.messageid] = _definition(group, reference)
    return {"specversion": "1.0-rc4", "endpoints": endpoints, "messagegroups": messagegroups,
            "schemagroups": schemagroups}


def refused(document: dict[str, Any], samples: Sequence[Sample]) -> list[tuple[Sample, Verdict]]:
    """The samples the compiled document does not accept, each with its verdict."""
    with tempfile.TemporaryDirectory(prefix="xgate-infer-") as folder:
        path = Path(folder) / "draft.xreg.json"
        path.write_text(json.dumps(document), "utf-8")
        snapshot = load_snapshot([path])
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    verdicts = ((s, judge_record(ruleset, s.record)) for s in samples)
    return [(s, verdict) for s, verdict in verdicts if not verdict.conformant]


def refusal_reason(verdict: Verdict) -> str:
    """Why no definition can accept the message: its first violation, without the message's own text."""
    first = verdict.violations[0] if verdict.violations else None
    return "refused" if first is None else f"{first.rule.value} at {first.path}"


@dataclass
class Inference:
    document: dict[str, Any]
    groups: list[Group]
    left_out: list[tuple[int, str]]  # (line, reason)


def infer(records: Sequence[tuple[int, Any]]) -> Inference:
    """The draft for `records` ((line, record) pairs), loosened until it accepts every sample it kept."""
    samples: list[Sample] = []
    left_out: list[tuple[int, str]] = []
    for number, record in records:
        sample = read_sample(number, record)
        if isinstance(sample, str):
            left_out.append((number, sample.split(":")[0]))
        else:
            samples.append(sample)
    groups = group_samples(samples)
    # what the loosest draft (the type alone) refuses breaks rules no definition sets: CloudEvents' own rules
    # (specversion, attribute names, a `time` that is no timestamp), undecodable payloads
    for group in groups:
        group.level = TYPE_ONLY
    for sample, verdict in refused(draft_document(groups), samples):
        left_out.append((sample.number, refusal_reason(verdict)))
        sample.record = {}  # marks it; left out below
    for group in groups:
        group.samples = [s for s in group.samples if s.record]
        group.level = FULL
    groups = [g for g in groups if g.samples]
    kept = [s for g in groups for s in g.samples]
    document = draft_document(groups)
    while failing := {id(s) for s, _ in refused(document, kept)}:
        stuck = True
        for group in groups:
            if any(id(s) in failing for s in group.samples) and group.level < TYPE_ONLY:
                group.level += 1
                stuck = False
        if stuck:  # the loosest draft accepted these above; a second look must not loop forever
            raise AssertionError(f"xgate infer: {len(failing)} samples refused at every level")
        document = draft_document(groups)
    return Inference(document, groups, sorted(left_out))
