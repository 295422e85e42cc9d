"""Mutations aimed where two judges could read the same text differently (issue 31's pitfalls): a regex `$`
before a trailing newline, lenient timestamp offsets and fraction lengths, percent signs and non-ASCII in
URIs, control characters, quotes in reprs, non-ASCII member names, number forms, base64 padding, and
Kafka-only fields (keys, null headers, repeated `ce_` headers). docs/validation.md decides each; both judges
follow it (tests/unit/compiler/test_native_differential.py)."""

from __future__ import annotations

import base64
import json
import random
from typing import Any

from tests.unit.compiler.mutations import Event, Mutation, Record, _attribute, _set, structured


def _suffix(*endings: str) -> Mutation:
    def change(event: Event, rng: random.Random) -> bool:
        name = rng.choice(event.names())
        value = event.get(name)
        return isinstance(value, str) and event.set(name, value + rng.choice(endings))
    return _attribute(change)


def _kafka_only(change: Any) -> Mutation:
    def mutate(record: Record, rng: random.Random) -> Record | None:
        if record["protocol"] != "KAFKA":
            return None
        out = json.loads(json.dumps(record))
        return out if change(out, rng) else None
    return mutate


def _key(record: Record, rng: random.Random) -> bool:
    record.pop("key", None)
    choice = rng.choice(["text", "none", "base64", "odd"])
    if choice == "text":
        record["key"] = rng.choice(["dev-1", "", "é", "a/b"])
    elif choice == "base64":
        record["key_base64"] = base64.b64encode(bytes([0xFF, 0x00, rng.randrange(256)])).decode()
    elif choice == "odd":
        record["key"] = "x" * rng.randrange(1, 300)
    return True


def _null_header(record: Record, rng: random.Random) -> bool:
    headers = record.setdefault("headers", {})
    name = rng.choice(list(headers) + ["ce_subject", "x-extra"])
    headers[name] = None
    return True


def _repeated_ce_header(record: Record, rng: random.Random) -> bool:
    headers = record.get("headers") or {}
    names = [name for name in headers if name.startswith("ce_")]
    if not names:
        return False
    # the recorded form keeps one value per name: a raw bytes header beside it makes the repeat
    name = rng.choice(names)
    headers[name] = rng.choice([{"base64": base64.b64encode(b"\xc3\x28").decode()}, headers[name] + "\t", ""])
    return True


def _data_base64(record: Record, rng: random.Random) -> Record | None:
    if not structured(record):
        return None
    event = json.loads(record["body"])
    data = event.pop("data", None)
    encoded = base64.b64encode(json.dumps(data).encode()).decode()
    event["data_base64"] = rng.choice([encoded, encoded.rstrip("="), encoded + "=", "!!", 5, None,
                                       base64.b64encode(b'{"a": 1, "a": 2}').decode()])
    out = dict(record)
    out["body"] = json.dumps(event)
    return out


def _numbers_in_text(record: Record, rng: random.Random) -> Record | None:
    """The body's numbers rewritten in other JSON forms: exponents, negative zero, long fractions."""
    if "body" not in record:
        return None
    text = record["body"]
    forms = ["1e2", "-0", "0.1000000000000000055511151231257827", "1E+2", "123456789012345678901234567890", "1e400"]
    digit = next((i for i, ch in enumerate(text) if ch.isdigit() and text[i - 1] in ": "), None)
    if digit is None:
        return None
    end = digit
    while end < len(text) and (text[end].isdigit() or text[end] in ".eE+-"):
        end += 1
    out = dict(record)
    out["body"] = text[:digit] + rng.choice(forms) + text[end:]
    return out


QUIRKS: dict[str, Mutation] = {
    "quirk-newline-end": _suffix("\n", "\r\n", "\r"),
    "quirk-control": _suffix("\t", "\x00", "\x7f", "\u2028", "\u00a0"),
    "quirk-quotes": _suffix("'", '"', "'\"", "\\"),
    "quirk-non-ascii": _suffix("é", "日本", "\U0001f600", "\u0301"),
    "quirk-percent": _suffix("%2F", "%2f", "%", "%4", "%%41"),
    "quirk-time-offset": _set("time", "2026-03-01T10:00:00+05:75", "2026-03-01T10:00:00+24:00",
                              "2026-03-01T10:00:00-00:00", "2026-03-01T10:00:00.123456789+01:00",
                              "2026-03-01T10:00:00.Z", "2026-03-01T24:00:00Z", "2026-03-01T10:00:60Z",
                              "2024-02-29T10:00:00Z", "2023-02-29T10:00:00Z", "2026-03-01T10:00:00,5Z",
                              "٢٠٢٦-03-01T10:00:00Z"),
    "quirk-uri": _set("dataschema", "https://a.example/ü", "urn:x", "x:", "1http://a", "http://a b",
                      "HTTP://A.EXAMPLE/%7e", "mailto:a@b"),
    "quirk-source": _set("source", "/a?b#c", "//host/path", "\\x", "/é", "/a%2", "?"),
    "quirk-integer-text": _set("seqno", "+5", "-0", "0005", "2147483648", "1_000", " 5", "5 ", "٣"),
    "quirk-kafka-key": _kafka_only(_key),
    "quirk-null-header": _kafka_only(_null_header),
    "quirk-repeated-header": _kafka_only(_repeated_ce_header),
    "quirk-data-base64": _data_base64,
    "quirk-number-forms": _numbers_in_text,
}
