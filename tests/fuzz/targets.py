"""Fuzz targets: bytes in, the engine's invariant checked. Shared by the atheris fuzzer and the hypothesis tests.

The invariant (issue 7, "bad messages"): no input raises out of the engine or
stalls. Every broker message a protocol mapping turns into an Envelope, every
`xgate check` line, every payload a validator reads yields a Verdict (or, for
a validator, None or violations) within STALL_SECONDS; a verdict that is not
conformant says why, and every verdict serializes to its JSON line.

Each target reads its input from the bytes with `Cursor`, so any byte string
is a valid input and a coverage-guided fuzzer can mutate it freely.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from gateway import jsontext
from gateway.check import judge_lines
from gateway.cloudevents import CloudEventReading, read_cloudevents
from gateway.compiler import Ruleset, compile_registry
from gateway.compiler.payload import PayloadValidator, compile_payload_validator, normalize_schema_format
from gateway.compiler.templates import compile_template, has_placeholders
from gateway.envelope import Envelope
from gateway.loader import load_snapshot
from gateway.verdict import Outcome, Rule, Verdict, Violation

REPO = Path(__file__).resolve().parents[2]
REGISTRY_PATHS = [REPO / "config" / "demo", REPO / "tests" / "documents" / "cloudevents",
                  REPO / "tests" / "fuzz" / "registry"]
# one input must be judged within this many seconds (generous: the machine is shared and noisy)
STALL_SECONDS = float(os.environ.get("XGATE_FUZZ_STALL_SECONDS", "2.0"))
CONTENT_TYPES = ("application/json", "application/cloudevents+json", "application/cloudevents-batch+json",
                 "application/avro", "avro/binary", "application/protobuf", "application/xml", "text/plain; x=1",
                 "application/vnd.x+json", "")


class Cursor:
    """Reads typed pieces off a byte string; past the end everything is empty or zero."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0

    def byte(self) -> int:
        if self.position >= len(self.data):
            return 0
        self.position += 1
        return self.data[self.position - 1]

    def pick(self, options: tuple[Any, ...] | list[Any]) -> Any:
        return options[self.byte() % len(options)]

    def chunk(self) -> bytes:
        """A length-prefixed piece (length = next byte)."""
        size = self.byte()
        piece = self.data[self.position:self.position + size]
        self.position += size
        return piece

    def text(self) -> str:
        return self.chunk().decode("utf-8", "replace")

    def rest(self) -> bytes:
        piece = self.data[self.position:]
        self.position = len(self.data)
        return piece


@cache
def ruleset() -> Ruleset:
    snapshot = load_snapshot(list(REGISTRY_PATHS))
    return compile_registry(snapshot.registry, snapshot.digest)


@cache
def endpoints_for(protocol_prefix: str) -> tuple[str, ...]:
    rules = ruleset()
    return tuple(sorted(eid for eid, e in rules.endpoints.items()
                        if (e.protocol or "").startswith(protocol_prefix))) or (None,)  # type: ignore[return-value]


@cache
def payload_validators() -> tuple[tuple[str, PayloadValidator], ...]:
    """Every payload schema of the fuzz registry, compiled on its own."""
    doc = json.loads((REPO / "tests" / "fuzz" / "registry" / "fuzz.xreg.json").read_text("utf-8"))
    found: list[tuple[str, PayloadValidator]] = []
    for group in doc["messagegroups"].values():
        for name, message in group["messages"].items():
            if "dataschema" in message:
                fmt = normalize_schema_format(message["dataschemaformat"])
                assert fmt is not None
                found.append((name, compile_payload_validator(fmt, message["dataschema"])))
    return tuple(found)


def assert_judged(verdict: Verdict) -> None:
    assert isinstance(verdict, Verdict), verdict
    assert isinstance(verdict.outcome, Outcome)
    if verdict.conformant:
        assert verdict.violations == ()
    else:
        assert verdict.violations, "a nonconformant verdict says why"
    for violation in verdict.violations:
        assert isinstance(violation, Violation) and isinstance(violation.rule, Rule)
    json.dumps(verdict.as_dict(), default=str)  # the verdict line `xgate check` writes


def _timed(what: str, call: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    result = call()
    elapsed = time.perf_counter() - started
    assert elapsed < STALL_SECONDS, f"{what} took {elapsed:.2f} s"
    return result


def judge(envelope: Envelope) -> Verdict:
    verdict: Verdict = _timed(f"classify({envelope.protocol})", lambda: ruleset().classify(envelope))
    assert_judged(verdict)
    return verdict


# --- targets ----------------------------------------------------------------------------------------------

def check_line(data: bytes) -> None:
    """An `xgate check` input line, read as the CLI reads files (UTF-8, undecodable bytes kept as surrogates)."""
    text = data.decode("utf-8", "surrogateescape")
    for verdict in _timed("judge_lines", lambda: list(judge_lines(ruleset(), text.splitlines(keepends=True)))):
        assert_judged(verdict)


def kafka(data: bytes) -> None:
    from protocol_adapters.kafka.mapping import kafka_envelope

    cursor = Cursor(data)
    endpoint = cursor.pick(endpoints_for("KAFKA"))
    topic = cursor.text()
    key = cursor.chunk() if cursor.byte() % 2 else None
    headers = [(cursor.text(), cursor.chunk() if cursor.byte() % 4 else None) for _ in range(cursor.byte() % 12)]
    timestamp = int.from_bytes(cursor.chunk()[:8] or b"\x00", "big", signed=True)
    judge(kafka_envelope(topic, cursor.byte(), 0, key, cursor.rest() or None, headers, timestamp, endpoint))


def mqtt(data: bytes) -> None:
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    from protocol_adapters.mqtt.mapping import accept_bom_in_received_strings, fields_from_publish

    accept_bom_in_received_strings()
    cursor = Cursor(data)
    protocol = cursor.pick(("MQTT/5.0", "MQTT/3.1.1"))
    endpoint = cursor.pick(endpoints_for(protocol))
    topic = cursor.text()
    qos, retain = cursor.byte() % 3, bool(cursor.byte() % 2)
    properties = Properties(PacketTypes.PUBLISH)
    raw = cursor.chunk()
    try:
        properties.unpack(raw)
    except Exception:
        return
    fields = fields_from_publish(protocol, topic, qos, retain, properties)
    judge(Envelope(protocol, fields, cursor.rest(), endpoint))


def amqp(data: bytes) -> None:
    from gateway.errors import AdapterError
    from protocol_adapters.amqp.mapping import PROTOCOL, decode_message

    endpoint = Cursor(data).pick(endpoints_for(PROTOCOL))
    try:
        fields, body = _timed("decode_message", lambda: decode_message(data[1:]))
    except AdapterError:
        fields, body = {}, data[1:]  # as the AMQP source does: judged as an opaque body
    judge(Envelope(PROTOCOL, fields, body, endpoint))


def nats(data: bytes) -> None:
    from protocol_adapters.nats.mapping import PROTOCOL, parse_header_block

    cursor = Cursor(data)
    endpoint = cursor.pick(endpoints_for(PROTOCOL))
    subject = cursor.text()
    reply = cursor.text() or None
    headers = parse_header_block(b"NATS/1.0\r\n" + cursor.chunk() + cursor.chunk())
    judge(Envelope(PROTOCOL, {"subject": subject, "reply-to": reply, "headers": headers}, cursor.rest(), endpoint))


def http(data: bytes) -> None:
    from protocol_adapters.http.mapping import envelope_from_request

    cursor = Cursor(data)
    endpoint = cursor.pick(endpoints_for("HTTP"))
    method = cursor.pick(("POST", "PUT", "GET", None)) or cursor.text()
    path = cursor.text()
    query = cursor.text()
    raw_headers = [(cursor.chunk(), cursor.chunk()) for _ in range(cursor.byte() % 12)]
    if cursor.byte() % 2:
        raw_headers.append((b"Content-Type", cursor.pick(CONTENT_TYPES).encode()))
    judge(envelope_from_request(method, path, query, raw_headers, cursor.rest(), endpoint=endpoint, remote=None))


def payload(data: bytes) -> None:
    """Every payload validator's `check_bytes` (and `check_value` when the bytes are JSON) on the same body."""
    cursor = Cursor(data)
    content_type = cursor.pick(CONTENT_TYPES) or None
    body = cursor.rest()
    try:
        value: Any = jsontext.loads(body)  # as the engine reads structured data: within the nesting limit
    except ValueError:
        value = None
    for name, validator in payload_validators():
        check_bytes, check_value = validator.check_bytes, validator.check_value
        for result in (_timed(f"{name}.check_bytes", lambda: check_bytes(body, content_type)),
                       _timed(f"{name}.check_value", lambda: check_value(value))):
            assert result is None or (isinstance(result, tuple) and result and
                                      all(isinstance(v, Violation) for v in result)), (name, result)


def cloudevents(data: bytes) -> None:
    cursor = Cursor(data)
    protocol = cursor.pick(("KAFKA", "MQTT/5.0", "MQTT/3.1.1", "AMQP/1.0", "NATS", "HTTP"))
    mode = cursor.pick((None, "binary", "structured"))
    content_type = cursor.pick(CONTENT_TYPES)
    fields: dict[str, Any] = {}
    if protocol == "KAFKA":
        fields["headers"] = [("content-type", content_type.encode()), ("ce_type", cursor.chunk())]
    elif protocol.startswith("MQTT"):
        fields["content_type"] = content_type
        fields["user_properties"] = [(cursor.text(), cursor.text())]
    elif protocol == "AMQP/1.0":
        fields["properties"] = {"content-type": content_type}
        fields["application-properties"] = {"cloudEvents_" + cursor.text(): cursor.text(), cursor.byte(): "x"}
    else:
        fields["headers"] = [("Content-Type", content_type), ("ce-" + cursor.text(), cursor.text())]
    envelope = Envelope(protocol, fields, cursor.rest())
    readings = _timed("read_cloudevents", lambda: read_cloudevents(envelope, mode))
    assert readings and all(isinstance(r, CloudEventReading) for r in readings)


def templates(data: bytes) -> None:
    template_bytes, _, value_bytes = data.partition(b"\x00")
    text, value = template_bytes.decode("utf-8", "replace"), value_bytes.decode("utf-8", "replace")
    if not has_placeholders(text):
        return
    template = compile_template(text)
    found = _timed("Template.match", lambda: template.match(value))
    conflicts = _timed("Template.conflicts", lambda: template.conflicts(value))
    if found is not None:
        assert set(found) == set(template.names) and all(found.values()) and not conflicts
        assert not any(c in bound for bound in found.values() for c in "/?#")


TARGETS: dict[str, Callable[[bytes], None]] = {
    "check_line": check_line, "kafka": kafka, "mqtt": mqtt, "amqp": amqp, "nats": nats, "http": http,
    "payload": payload, "cloudevents": cloudevents, "templates": templates,
}


def every_target(data: bytes) -> None:
    """One input for the target its first byte names (the mixed run `make test` does)."""
    if data:
        list(TARGETS.values())[data[0] % len(TARGETS)](data[1:])
