"""Try a message: a pasted recorded message, or a bare CloudEvent, judged as `xgate check` judges it and
explained as `xgate explain` explains it, with the rules in force. Nothing is sent anywhere.

A bare CloudEvent (a JSON object with `specversion`, no `protocol`) becomes the message a producer of the
chosen endpoint's protocol would send in structured mode (gateway/runtime/remap.py's mapping), with the
endpoint's own topic, subject or queue where its options name one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from gateway.check import read_record
from gateway.compiler import Ruleset
from gateway.envelope import Envelope
from gateway.explanation import explain
from gateway.model.resolved import Registry
from gateway.recorded import record_from_envelope
from gateway.runtime.remap import envelope_for
from gateway.verdict import Verdict

# the endpoint option that names where a message of a protocol travels, and the recorded field it fills
ADDRESS_OPTIONS = {"KAFKA": ("topic", "topic"), "NATS": ("subject", "subject")}


@dataclass(frozen=True)
class Tried:
    record: dict[str, Any] | None   # the recorded message judged (None: the text was not one)
    envelope: Envelope | None       # as the adapter would hand it over (None: not a recorded message)
    verdict: Verdict | None         # None: the text is neither a recorded message nor a CloudEvent (`problem`)
    explanation: str = ""
    problem: str = ""


def _from_cloudevent(event: dict[str, Any], ruleset: Ruleset, registry: Registry, endpoint: str) -> dict[str, Any]:
    rules = ruleset.endpoints.get(endpoint)
    protocol = (rules.protocol if rules is not None else None) or "HTTP"
    record = record_from_envelope(envelope_for(event, protocol))
    record["endpoint"] = endpoint
    family = protocol.split("/")[0].upper()
    option = ADDRESS_OPTIONS.get(family)
    declared = registry.endpoints.get(endpoint)
    options = declared.attrs.get("protocoloptions") if declared is not None else None
    if option is not None and isinstance(options, dict) and isinstance(options.get(option[0]), str):
        record[option[1]] = options[option[0]]
    if family == "KAFKA":
        record.setdefault("partition", 0)
    return record


def try_message(ruleset: Ruleset, registry: Registry, text: str, endpoint: str | None) -> Tried:
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        return Tried(None, None, None, problem=f"not JSON: {exc}")
    if not isinstance(parsed, dict):
        return Tried(None, None, None, problem="expected a JSON object: a recorded message or a CloudEvent")
    record = parsed
    if "specversion" in parsed and "protocol" not in parsed:
        chosen = endpoint or ""
        if not chosen:
            return Tried(None, None, None, problem="a bare CloudEvent needs an endpoint: choose one")
        record = _from_cloudevent(parsed, ruleset, registry, chosen)
    read = read_record(ruleset, record, endpoint or None)
    if isinstance(read, Verdict):  # not a recorded message xgate can read: check's `decode` verdict
        return Tried(record, None, read)
    return Tried(record, read, ruleset.classify(read), explain(ruleset, read))
