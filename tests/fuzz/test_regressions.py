"""Every crash the fuzzing found, as the input that raised (or hung, or killed the process) and the verdict
it gets now. Each ran through the engine's entry points: `Ruleset.classify` and the `xgate check` judges."""

from __future__ import annotations

import base64
import json
import time

from gateway.check import judge_line, judge_record
from gateway.envelope import Envelope
from gateway.verdict import Verdict
from tests.fuzz import targets


def _rules(verdict: Verdict) -> list[tuple[str, str]]:
    targets.assert_judged(verdict)
    return [(v.path, v.rule.value) for v in verdict.violations]


def test_an_endpoint_that_is_not_a_string_is_a_decode_verdict() -> None:
    # was: TypeError (unhashable type: 'list') from the endpoint lookup
    for endpoint in (["fuzz.kafka"], {"a": 1}, 7):
        verdict = judge_record(targets.ruleset(), {"endpoint": endpoint, "protocol": "KAFKA"})
        assert _rules(verdict) == [("record", "decode")]
        assert "endpoint" in verdict.violations[0].message


def test_a_line_nested_thousands_deep_is_a_decode_verdict() -> None:
    # was: RecursionError from json.loads
    verdict = judge_line(targets.ruleset(), "[" * 100_000 + "]" * 100_000)
    assert _rules(verdict) == [("record", "decode")]
    assert "nests deeper than 128" in verdict.violations[0].message


def test_a_structured_body_nested_thousands_deep_is_a_limit_verdict() -> None:
    # was: RecursionError from the json fallback after orjson's own depth limit (1024)
    for depth in (2000, 100_000):
        record = {"endpoint": "fuzz.kafka", "protocol": "KAFKA",
                  "headers": {"content-type": "application/cloudevents+json"}, "body": "[" * depth + "]" * depth}
        assert _rules(judge_record(targets.ruleset(), record)) == [("body", "limit")]


def test_data_nested_within_orjsons_limit_but_past_ours_is_a_limit_verdict() -> None:
    # was: RecursionError from json.dumps, shortening the violation's `actual` to 120 characters
    event = json.dumps({"specversion": "1.0", "type": "fuzz.json", "id": "1", "source": "/a/b/c", "data": None})
    body = event.replace("null", "[" * 1000 + "1" + "]" * 1000)
    record = {"endpoint": "fuzz.kafka", "protocol": "KAFKA",
              "headers": {"content-type": "application/cloudevents+json"}, "body": body}
    assert _rules(judge_record(targets.ruleset(), record)) == [("body", "limit")]


def test_a_header_of_thousands_of_digits_checked_as_integer() -> None:
    # was: ValueError from int() (Python refuses to convert more than 4300 digits)
    headers = {"ce_specversion": "1.0", "ce_id": "1", "ce_source": "/a/b/c", "ce_type": "fuzz.json",
               "ce_count": "9" * 5000, "ce_fixed": "0" * 5000 + "7"}
    verdict = judge_record(targets.ruleset(), {"endpoint": "fuzz.kafka", "protocol": "KAFKA", "headers": headers})
    assert ("envelopemetadata.count", "type") in _rules(verdict)
    assert ("envelopemetadata.fixed", "value") not in _rules(verdict)  # leading zeros: the value 7


def test_text_that_utf8_cannot_carry_is_a_decode_verdict() -> None:
    # was: UnicodeEncodeError: a JSON "\ud800" (or a byte that is not UTF-8, read with surrogateescape)
    for record in ({"protocol": "KAFKA", "body": "\ud800"}, {"protocol": "NATS", "headers": {"ce-id": "%41\udcff"}},
                   {"protocol": "HTTP", "headers": {"\udcff": "x"}}):
        verdict = judge_record(targets.ruleset(), {"endpoint": "fuzz.kafka", **record})
        assert _rules(verdict) == [("record", "decode")]
    assert _rules(judge_line(targets.ruleset(), '{"protocol": "KAFKA", "body": "\udcff"}')) == [("record", "decode")]


def test_amqp_application_properties_with_keys_that_are_not_strings() -> None:
    # was: AttributeError ('int' object has no attribute 'startswith'): proton decodes any key type
    fields = {"application-properties": {7: "x", b"k": "y", "cloudEvents_type": "fuzz.schemaless"}}
    verdict = targets.judge(Envelope("AMQP/1.0", fields, b"", "fuzz.amqp"))
    assert not verdict.conformant


def test_a_recursive_avro_body_thousands_deep_is_a_limit_verdict() -> None:
    # was: a segmentation fault (fastavro's C reader recursing once per level), killing the process
    node = b"\x02" + b"\x00\x02"  # ... next = union branch 1 (Reading)
    body = base64.b64encode(b"\x02a" + b"\x00" * 1 + node * 10_000).decode()
    record = {"endpoint": "fuzz.kafka", "protocol": "KAFKA", "headers": {"ce_specversion": "1.0", "ce_id": "1",
              "ce_source": "/a/b/c", "ce_type": "fuzz.avro"}, "body_base64": body}
    verdict = judge_record(targets.ruleset(), record)
    assert verdict.messageid == "fuzz.avro"
    assert [v.rule.value for v in verdict.violations] in (["limit"], ["decode"])


def test_a_few_bytes_claiming_2_to_the_40_avro_items_is_a_limit_verdict() -> None:
    # was: 16 s and a MemoryError (fastavro appending a None per claimed item of an array of nulls)
    from gateway.compiler.payload import SchemaFormat, compile_payload_validator

    validator = compile_payload_validator(SchemaFormat("avro", "1.11"), {"type": "array", "items": "null"})
    started = time.thread_time()  # this thread's CPU, which a loaded machine does not stretch: it was 16 s
    found = validator.check_bytes(b"\x80\x80\x80\x80\x80\x80\x02\x00", None)  # zigzag varint 2^40
    assert time.thread_time() - started < 5
    assert found is not None and [v.rule.value for v in found] == ["limit"]


def test_templates_against_hostile_values_finish_at_once() -> None:
    # was: minutes of regex backtracking for one header (`([^/?#]+)\.` repeated, against `a.a.a...a!`)
    definitions = targets.ruleset()
    value = "a." * 20_000 + "!"
    record = {"endpoint": "fuzz.kafka", "protocol": "KAFKA", "topic": "fuzz." + value,
              "headers": {"ce_specversion": "1.0", "ce_id": "1", "ce_source": "/a/b/c", "ce_type": "fuzz.json",
                          "ce_subject": value}}
    started = time.thread_time()  # this thread's CPU, which a loaded machine does not stretch: it was minutes
    targets.assert_judged(judge_record(definitions, record))
    assert time.thread_time() - started < 10
