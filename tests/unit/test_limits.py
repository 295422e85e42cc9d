"""gateway/limits.py: a message past a limit gets one `limit` violation and is judged no further."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.compiler import compile_registry
from gateway.envelope import Envelope
from gateway.limits import DEFAULT_LIMITS, MAX_NESTING, Limits, envelope_violation, json_too_deep, nesting_exceeds
from tests.unit.builders import ce_message, kafka_ce, load_doc, ok, registry, shape

SCHEMA = {"type": "object"}


@pytest.fixture
def loaded(tmp_path: Path) -> Any:
    message = ce_message("t", dataschemaformat="JsonSchema/draft-07", dataschema=SCHEMA)
    return load_doc(tmp_path, registry(None, {"m": message}))


def _limit(verdict: Any) -> tuple[str, Any]:
    assert not verdict.conformant and verdict.messageid is None  # judged before dispatch: routed as unmatched
    [violation] = verdict.violations
    assert violation.rule.value == "limit"
    return violation.path, violation.actual


def test_the_defaults_follow_the_brokers() -> None:
    assert DEFAULT_LIMITS == Limits(max_body_bytes=1024 * 1024, max_headers=100, max_header_bytes=8192,
                                    max_batch_events=1000)
    assert MAX_NESTING == 128


def test_a_body_at_the_limit_passes_one_byte_more_does_not(loaded: Any) -> None:
    at_limit = '{"a": "' + "x" * (DEFAULT_LIMITS.max_body_bytes - 9) + '"}'
    assert len(at_limit) == DEFAULT_LIMITS.max_body_bytes
    assert shape(loaded.judge(kafka_ce("t", body=at_limit))) == ok("g", "m")
    over = at_limit[:-2] + 'x"}'
    assert _limit(loaded.judge(kafka_ce("t", body=over))) == ("body", DEFAULT_LIMITS.max_body_bytes + 1)


def test_header_count(loaded: Any) -> None:
    extra = {f"x-{n}": "v" for n in range(96)}  # with the four ce_ headers: 100
    assert shape(loaded.judge(kafka_ce("t", extra_headers=extra, body="{}"))) == ok("g", "m")
    extra["x-one-more"] = "v"
    assert _limit(loaded.judge(kafka_ce("t", extra_headers=extra, body="{}"))) == ("protocoloptions.headers", 101)


def test_header_size_counts_name_and_value(loaded: Any) -> None:
    name = "x-big"
    fits = {name: "v" * (DEFAULT_LIMITS.max_header_bytes - len(name))}
    assert shape(loaded.judge(kafka_ce("t", extra_headers=fits, body="{}"))) == ok("g", "m")
    over = {name: fits[name] + "v"}
    assert _limit(loaded.judge(kafka_ce("t", extra_headers=over, body="{}"))) == \
        ("protocoloptions.headers.x-big", DEFAULT_LIMITS.max_header_bytes + 1)


@pytest.mark.parametrize(("protocol", "fields", "path"), [
    ("NATS", {"headers": [("h", "v")] * 101}, "protocoloptions.headers"),
    ("HTTP", {"headers": [("h", "v")] * 50, "query": [("q", "v")] * 51}, "protocoloptions.query"),
    ("MQTT/5.0", {"user_properties": [("p", "v")] * 101}, "protocoloptions.user_properties"),
    ("AMQP/1.0", {"application-properties": {str(n): n for n in range(60)},
                  "message-annotations": {str(n): n for n in range(41)}}, "protocoloptions.message-annotations"),
])
def test_every_protocols_headers_count(protocol: str, fields: dict[str, Any], path: str) -> None:
    found = envelope_violation(Envelope(protocol, fields, b""), DEFAULT_LIMITS)
    assert found is not None and (found.path, found.actual) == (path, 101)


def test_binary_header_values_count_bytes() -> None:
    fields = {"headers": [("k", b"\xff" * 8191)]}
    assert envelope_violation(Envelope("KAFKA", fields, b""), DEFAULT_LIMITS) is None
    fields = {"headers": [("k", b"\xff" * 8192)]}
    assert envelope_violation(Envelope("KAFKA", fields, b""), DEFAULT_LIMITS) is not None


def test_limits_are_set_per_ruleset(tmp_path: Path, loaded: Any) -> None:
    tight = compile_registry(loaded.snapshot.registry, loaded.snapshot.digest, Limits(max_body_bytes=10))
    envelope = Envelope("KAFKA", {"headers": [("ce_specversion", b"1.0"), ("ce_id", b"1"), ("ce_source", b"/s"),
                                              ("ce_type", b"t")]}, b'{"a": 12345}', "ep")
    assert tight.classify(envelope).violations[0].rule.value == "limit"
    assert loaded.ruleset.classify(envelope).conformant


def test_nesting_is_counted_in_arrays_and_objects() -> None:
    value: Any = 1
    for level in range(1, MAX_NESTING + 2):
        value = [value] if level % 2 else {"k": value}
        assert nesting_exceeds(value) is (level > MAX_NESTING)
    assert not nesting_exceeds("[[[[")
    deep = b"[" * 129 + b"]" * 129
    assert json_too_deep(deep, json.loads(deep)) and not json_too_deep(deep[1:-1], json.loads(deep[1:-1]))


@pytest.mark.parametrize("mode", ["structured", "binary"])
def test_json_nested_past_the_limit_is_a_limit_violation(tmp_path: Path, mode: str) -> None:
    message = ce_message("t", dataschemaformat="JsonSchema/draft-07", dataschema={"type": "array"})
    loaded = load_doc(tmp_path, registry(None, {"m": message}))
    data = "[" * 200 + "]" * 200
    fits = "[" * MAX_NESTING + "]" * MAX_NESTING
    if mode == "binary":
        assert shape(loaded.judge(kafka_ce("t", body=fits))) == ok("g", "m")
        verdict = loaded.judge(kafka_ce("t", body=data))
        assert [(v.path, v.rule.value) for v in verdict.violations] == [("dataschema:", "limit")]
    else:
        event = '{"specversion": "1.0", "id": "1", "source": "/s", "type": "t", "data": %s}'
        record = {"protocol": "KAFKA", "headers": {"content-type": "application/cloudevents+json"}}
        # the event object is one level: its data may nest one level less
        assert shape(loaded.judge({**record, "body": event % fits[1:-1]})) == ok("g", "m")
        verdict = loaded.judge({**record, "body": event % data})
        assert [(v.path, v.rule.value) for v in verdict.violations] == [("body", "limit")]


def test_http_batch_size(tmp_path: Path) -> None:
    loaded = load_doc(tmp_path, registry("HTTP", {"m": ce_message("t")}))
    event = json.dumps({"specversion": "1.0", "id": "1", "source": "/s", "type": "t"})
    record = {"protocol": "HTTP", "method": "POST", "path": "/",
              "headers": {"Content-Type": "application/cloudevents-batch+json"}}
    verdict = loaded.judge({**record, "body": "[" + ",".join([event] * 1000) + "]"})
    assert verdict.conformant and verdict.events is not None and len(verdict.events) == 1000
    verdict = loaded.judge({**record, "body": "[" + ",".join([event] * 1001) + "]"})
    assert _limit(verdict) == ("body", 1001)
