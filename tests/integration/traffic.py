"""Mixed recorded traffic for the integration tests: every message has a unique body, so it can be found again.

Kinds: conformant, nonconformant (schema) and unknown (undeclared type), each in
binary and structured mode, plus structured bodies that are not JSON. MQTT 3.1.1
has only the structured mode. Each message's event id (`it-<seq>-<kind>`) says what
it was made to be, so a test can derive where it must arrive without asking the
compiler under test (`kind_of_record`, `DESTINATION_OF_KIND`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from gateway.envelope import Envelope
from gateway.recorded import record_from_envelope
from gateway.runtime.remap import outgoing

TYPE = "com.example.it.reading"
SCHEMA = {"type": "object", "required": ["seq", "v"],
          "properties": {"seq": {"type": "integer"}, "v": {"type": "integer", "minimum": 0}}}
KINDS = ("ok-binary", "ok-structured", "bad-binary", "bad-structured", "unknown-binary", "unknown-structured",
         "malformed")
# by the registry below and validation rule 6: a reading with v >= 0 fits, v = -1 fails the schema (the
# reading is named: dlq), another type matches no candidate's discriminator (no-match: unknown), and a structured
# body cut short has no readable `type`, so no candidate qualifies either (unknown)
DESTINATION_OF_KIND = {"ok-binary": "valid", "ok-structured": "valid", "bad-binary": "dlq", "bad-structured": "dlq",
                       "unknown-binary": "unknown", "unknown-structured": "unknown", "malformed": "unknown"}
_KIND_IN_ID = re.compile(r"it-[0-9]+-(" + "|".join(map(re.escape, KINDS)) + r")(?![a-z-])")


def registry(protocol: str, options: dict[str, dict[str, Any]], destination_protocol: str | None = None,
             destination_options: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Source `in` of `protocol` and destinations `valid`, `dlq`, `unknown` (of `destination_protocol`)."""
    def endpoint(name: str, usage: str, proto: str, opts: dict[str, Any]) -> dict[str, Any]:
        opts = dict(opts)
        uris = opts.pop("uris")
        return {"usage": [usage], "protocol": proto, "envelope": "CloudEvents/1.0",
                "protocoloptions": {"endpoints": [{"uri": u} for u in uris], **opts}}
    out_protocol = destination_protocol or protocol
    out_options = destination_options or options
    source = endpoint("in", "consumer", protocol, options["in"])
    source["messages"] = {"reading": {
        "envelope": "CloudEvents/1.0",
        "envelopemetadata": {"type": {"value": TYPE, "required": True},
                             "source": {"type": "uritemplate", "value": "/it/{shard}"}},
        "dataschemaformat": "JsonSchema/draft-07", "dataschema": SCHEMA}}
    return {"endpoints": {"in": source, **{n: endpoint(n, "producer", out_protocol, out_options[n])
                                           for n in ("valid", "dlq", "unknown")}}}


def _event(seq: int, kind: str) -> tuple[dict[str, Any], dict[str, Any]]:
    attributes = {"specversion": "1.0", "id": f"it-{seq}-{kind}", "source": f"/it/{seq % 4}",
                  "type": TYPE if not kind.startswith("unknown") else "com.example.it.other"}
    data = {"seq": seq, "v": seq if not kind.startswith("bad") else -1}
    return attributes, data


def message(protocol: str, seq: int, kind: str) -> dict[str, Any]:
    """One recorded message of `kind` for `protocol`, built once in HTTP form and re-mapped per the bindings."""
    attributes, data = _event(seq, kind)
    if kind == "malformed":
        envelope = Envelope("HTTP", {"headers": [("Content-Type", "application/cloudevents+json")]},
                            f'{{"specversion": "1.0", "id": "it-{seq}-malformed", "broken'.encode())
    elif kind.endswith("structured") or protocol == "MQTT/3.1.1":
        body = json.dumps({**attributes, "datacontenttype": "application/json", "data": data}).encode()
        envelope = Envelope("HTTP", {"headers": [("Content-Type", "application/cloudevents+json")]}, body)
    else:
        headers = [(f"ce-{k}", v) for k, v in attributes.items()] + [("Content-Type", "application/json")]
        envelope = Envelope("HTTP", {"headers": headers}, json.dumps(data).encode())
    record = record_from_envelope(outgoing(envelope, protocol))
    record["endpoint"] = "in"
    return record


def mixed(protocol: str, count: int) -> list[dict[str, Any]]:
    kinds = [k for k in KINDS if protocol != "MQTT/3.1.1" or not k.endswith("binary")]
    return [message(protocol, seq, kinds[seq % len(kinds)]) for seq in range(count)]


def kind_of_record(record: dict[str, Any]) -> str:
    """What `message` made this record to be, read back from its event id (header, property or body)."""
    found = {match.group(1) for match in _KIND_IN_ID.finditer(json.dumps(record))}
    if len(found) != 1:
        raise ValueError(f"not one kind in the record's event id: {sorted(found)}")
    return found.pop()
