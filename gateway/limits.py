"""Limits on what one message may carry: past one, the verdict is a `limit` violation, never unbounded work.

docs/validation.md sets no limits; the defaults follow the brokers and servers xgate sits between:

- body: 1 MiB. Kafka's `message.max.bytes` (1 MiB + 12), NATS's `max_payload` and the HTTP source's
  `maxbodysize` all default to it.
- headers: 100 per message, 8 KiB each (name and value). Apache's `LimitRequestFields` (100) and
  `LimitRequestFieldSize` (8190, aiohttp's `max_field_size` too). "Headers" are a protocol's open-ended
  name/value metadata: Kafka headers, MQTT 5 user properties, AMQP application properties and annotation
  and footer entries, NATS and HTTP headers, HTTP query parameters. Text counts characters, binary bytes.
- HTTP batches: 1000 CloudEvents. Each event is judged on its own: 300,000 empty events fit in 1 MiB and
  took seconds.
- duplicate member names in JSON: refused (`decode`, validation rule 5.7); `reject_duplicate_keys:
  false` turns the check off for JSON Schema payloads and structured events.
- nesting: 128 levels of JSON arrays/objects, XML elements and Avro records/arrays/maps (serde_json's
  recursion limit). Not configurable: it keeps the recursive readers behind it (Python's json, protobuf's
  JSON mapping, xmlschema, fastavro's C reader, which crashes the process on deep data) inside their stacks.
  orjson alone would allow 1024.

Body, header and batch limits are a `Limits` value held by the Ruleset (`compile_registry(..., limits=...)`),
set by `runtime.limits` in gateway.yaml (gateway/settings.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.bindings import BINDINGS
from gateway.envelope import Envelope
from gateway.verdict import Rule, Violation

MAX_NESTING = 128


@dataclass(frozen=True, slots=True)
class Limits:
    max_body_bytes: int = 1024 * 1024
    max_headers: int = 100
    max_header_bytes: int = 8192
    max_batch_events: int = 1000
    # validation rule 5.7: a JSON body or structured event naming one member twice is `decode`; off, the last
    # value counts (as orjson reads it) and the check's cost is saved (bench/accepting.py measures it)
    reject_duplicate_keys: bool = True


DEFAULT_LIMITS = Limits()

# per protocol, once: each field counted against the header limits with its violation path, and whether the
# fields are maps (AMQP sections) rather than (name, value) pairs
_LIMITED = {protocol: (tuple((name, f"protocoloptions.{name}") for name in binding.limited), binding.headers_map)
            for protocol, binding in BINDINGS.items()}


def limit_violation(path: str, expected: str, actual: Any, message: str) -> Violation:
    return Violation(path, Rule.LIMIT, expected, actual, message)


_SIZED = (str, bytes, bytearray)


def envelope_violation(envelope: Envelope, limits: Limits) -> Violation | None:
    """The first limit the message breaks (body size, header count, one header's size), or None. On the hot
    path: a length per header, nothing more."""
    size = len(envelope.body)
    if size > limits.max_body_bytes:
        return limit_violation("body", f"at most {limits.max_body_bytes} bytes", size,
                               f"body is {size} bytes, over the limit of {limits.max_body_bytes}")
    limited = _LIMITED.get(envelope.protocol)
    if limited is None:
        return None
    fields = envelope.fields
    sections, maps = limited
    count = 0  # one limit over every limited field of the message: HTTP headers and query together
    for name, path in sections:
        values = fields.get(name)
        if maps:  # AMQP sections count when they are maps with entries
            if not isinstance(values, dict) or not values:
                continue
            values = list(values.items())
        if values:
            found = _headers_violation(path, values, count, limits)
            if found is not None:
                return found
            count += len(values)
    return None


def _headers_violation(path: str, pairs: Any, before: int, limits: Limits) -> Violation | None:
    """Too many headers (counting `before` from other fields of the message), or one too large."""
    if not pairs:
        return None
    most = limits.max_headers
    if before + len(pairs) > most:
        return limit_violation(path, f"at most {most} headers", before + len(pairs),
                               f"the message carries {before + len(pairs)} headers, over the limit of {most}")
    largest = limits.max_header_bytes
    try:
        # one C-level pass; len() never undercounts what the loop below counts, so "none too large" holds
        if max([len(name) + len(value) for name, value in pairs]) <= largest:
            return None
    except TypeError:  # a value without a length (None, a number): the loop below decides
        pass
    for name, value in pairs:
        size = (len(name) if name.__class__ in _SIZED else 0) + (len(value) if value.__class__ in _SIZED else 0)
        if size > largest:
            return limit_violation(f"{path}.{name}", f"at most {largest} bytes", size,
                                   f"header {str(name)[:60]!r} is {size} bytes long (name and value), over the "
                                   f"limit of {largest}")
    return None


def nesting_exceeds(value: Any, limit: int = MAX_NESTING) -> bool:
    """True when lists and dicts nest more than `limit` levels (`[]` is one level). Iterative: any depth is safe."""
    if not isinstance(value, (dict, list)):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


def json_too_deep(raw: bytes | str, value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether a value parsed from JSON text `raw` nests more than `limit` levels. Text with no more brackets
    than the limit cannot (two C-level counts): that spares the walk over nearly every real message."""
    if len(raw) <= limit:
        return False
    opens = raw.count("[") + raw.count("{") if isinstance(raw, str) else raw.count(b"[") + raw.count(b"{")
    return opens > limit and nesting_exceeds(value, limit)


def nesting_violation(path: str, what: str, limit: int = MAX_NESTING) -> Violation:
    return limit_violation(path, f"at most {limit} levels of nesting", f"more than {limit}",
                           f"{what} nests deeper than {limit} levels")
