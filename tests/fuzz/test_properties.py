"""Property tests over the bad-message invariant (tests/fuzz/targets.py): no input raises or stalls.

Hypothesis drives every fuzz target with random bytes, and generates structured inputs that random bytes
rarely reach: recorded messages of any shape, CloudEvents with any attributes, JSON payloads of any shape,
and templates, which are also checked against the backtracking regex they replaced (same bindings).

XGATE_FUZZ_EXAMPLES sets the examples per test (default 150; `make test` keeps the default).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.check import judge_line, judge_record
from gateway.compiler.templates import compile_template
from gateway.envelope import Envelope
from tests.fuzz import targets

EXAMPLES = int(os.environ.get("XGATE_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4) |
                           st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)
FIELD_NAMES = ["topic", "partition", "key", "key_base64", "headers", "timestamp", "topic_name", "qos", "retain",
               "content_type", "payload_format", "user_properties", "correlation_data", "properties",
               "application-properties", "message-annotations", "footer", "header", "subject", "reply-to", "method",
               "path", "query", "body", "body_base64"]
PROTOCOLS = ["KAFKA", "MQTT/5.0", "MQTT/3.1.1", "AMQP/1.0", "NATS", "HTTP", "mqtt", "SMTP", 7, None]
CE_NAMES = ["specversion", "id", "source", "type", "time", "subject", "datacontenttype", "dataschema", "data",
            "data_base64", "count", "ratio", "flag", "blob", "tpl", "fixed", "Bad-Name"]


def _endpoints() -> list[Any]:
    return sorted(targets.ruleset().endpoints) + [None, "nope", ["x"], {"a": 1}]


@pytest.mark.parametrize("name", sorted(targets.TARGETS))
@FUZZ
@given(data=st.binary(max_size=2048))
def test_every_target_survives_random_bytes(name: str, data: bytes) -> None:
    targets.TARGETS[name](data)


@FUZZ
@given(record=st.fixed_dictionaries(
    {"protocol": st.sampled_from(PROTOCOLS), "endpoint": st.sampled_from(_endpoints())},
    optional={name: json_values for name in FIELD_NAMES}))
def test_recorded_messages_of_any_shape(record: dict[str, Any]) -> None:
    targets.assert_judged(judge_record(targets.ruleset(), record))
    targets.assert_judged(judge_line(targets.ruleset(), json.dumps(record)))


@FUZZ
@given(event=st.dictionaries(st.sampled_from(CE_NAMES), json_values, max_size=10),
       protocol=st.sampled_from(["KAFKA", "MQTT/5.0", "MQTT/3.1.1", "AMQP/1.0", "NATS", "HTTP"]),
       batch=st.booleans())
def test_structured_cloudevents_with_any_attributes(event: dict[str, Any], protocol: str, batch: bool) -> None:
    if event.get("type") is None:
        event["type"] = "fuzz.json"  # reach a definition's checks, not only dispatch
    media = "application/cloudevents-batch+json" if batch else "application/cloudevents+json"
    body = json.dumps([event, event] if batch else event).encode()
    fields: dict[str, Any] = {
        "KAFKA": {"headers": [("content-type", media.encode())]},
        "MQTT/5.0": {"content_type": media}, "MQTT/3.1.1": {},
        "AMQP/1.0": {"properties": {"content-type": media}},
        "NATS": {"headers": [("Content-Type", media)]}, "HTTP": {"headers": [("Content-Type", media)]}}[protocol]
    for endpoint in targets.endpoints_for(protocol):
        targets.judge(Envelope(protocol, fields, body, endpoint))


@FUZZ
@given(value=json_values, content_type=st.sampled_from(targets.CONTENT_TYPES))
def test_payload_validators_on_any_json(value: Any, content_type: str) -> None:
    targets.payload(bytes([targets.CONTENT_TYPES.index(content_type)]) + json.dumps(value).encode())


# --- templates: the linear matcher agrees with the backtracking regex it replaced ------------------------

def _backtracking(template: str) -> re.Pattern[str]:
    """The former compilation: `([^/?#]+)` per first use of a name, a backreference per later use."""
    names: list[str] = []
    parts: list[str] = []
    position = 0
    for found in re.finditer(r"\{([^{}\s]+)\}", template):
        parts.append(re.escape(template[position:found.start()]))
        name = found.group(1)
        parts.append(f"(?:\\{names.index(name) + 1})" if name in names else "([^/?#]+)")
        if name not in names:
            names.append(name)
        position = found.end()
    parts.append(re.escape(template[position:]))
    return re.compile("".join(parts), re.DOTALL)


@settings(max_examples=EXAMPLES * 10, deadline=None, database=None)
@given(template=st.lists(st.sampled_from(["{a}", "{b}", "{c}", "a", "b", ".", "-", "/", "?"]), min_size=1,
                         max_size=7).map("".join),
       value=st.text(alphabet="ab.-/?", max_size=10))
def test_template_bindings_equal_the_backtracking_regex(template: str, value: str) -> None:
    # short values over a small alphabet: the regex is fast here, and exact (it tries every split)
    compiled = compile_template(template)
    expected = _backtracking(template).fullmatch(value)
    found = compiled.match(value)
    assert (found is None) == (expected is None)
    if expected is not None:
        assert found == dict(zip(compiled.names, expected.groups()))
