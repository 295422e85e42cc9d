"""validation rule 5.4: `{name}` placeholders, one or more characters other than `/`, `?`, `#`; one name binds
one text across attributes, topic, key, headers and subject of one definition (`placeholder`); a value that
does not fit its pattern is `template`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from gateway.compiler.templates import SEARCH_BUDGET, _Search, compile_template, has_placeholders
from tests.unit.builders import bad, ce_message, kafka_ce, load_doc, ok, registry, shape

# --- the template matcher ----------------------------------------------------------------------------


@pytest.mark.parametrize(("template", "value", "bindings"), [
    ("/contoso/{site}/sensors/{id}", "/contoso/berlin/sensors/7", {"site": "berlin", "id": "7"}),
    ("{device}", "dev-1", {"device": "dev-1"}),
    ("{a}-{a}", "x-x", {"a": "x"}),
    ("{a}-{a}", "x-y-x-y", {"a": "x-y"}),                        # a consistent split exists: it is found
    ("/{a}/{b}/{a}", "/1/2/1", {"a": "1", "b": "2"}),
    ("pre{x}post", "pre with spaces post", {"x": " with spaces "}),
    ("a.b/{x}", "a.b/1", {"x": "1"}),
    ("{x}", "ünïcödé", {"x": "ünïcödé"}),
])
def test_template_matches_and_binds(template: str, value: str, bindings: dict[str, str]) -> None:
    assert compile_template(template).match(value) == bindings


@pytest.mark.parametrize(("template", "value"), [
    ("/contoso/{site}/sensors/{id}", "/contoso//sensors/7"),      # empty placeholder
    ("/contoso/{site}/sensors/{id}", "/contoso/a/b/sensors/7"),   # `/` inside a placeholder
    ("/contoso/{site}/sensors/{id}", "/contoso/a/sensors/"),
    ("x/{a}", "x/a?b"),                                           # `?`
    ("x/{a}", "x/a#b"),                                           # `#`
    ("{device}", ""),
    ("{a}-{a}", "x-y"),                                           # same name, two texts
    ("a.b/{x}", "aXb/1"),                                         # literal `.` is not a wildcard
    ("/devices/{id}", "/devices/7/extra"),                        # anchored at the end
    ("/devices/{id}", "prefix/devices/7"),                        # anchored at the start
])
def test_template_rejects(template: str, value: str) -> None:
    assert compile_template(template).match(value) is None


def test_adjacent_placeholders_split_somewhere() -> None:
    # silent point: how `{a}.{b}` splits `x.y.z` is not specified; it must match and rebuild the text
    found = compile_template("{a}.{b}").match("x.y.z")
    assert found is not None and f"{found['a']}.{found['b']}" == "x.y.z"


def test_has_placeholders() -> None:
    assert has_placeholders("/a/{b}")
    assert not has_placeholders("/a/b")
    assert not has_placeholders("{}")


def test_template_names_in_order() -> None:
    assert compile_template("/{site}/x/{id}").names == ("site", "id")
    assert compile_template("/{site}/{id}/{site}").names == ("site", "id")


def test_conflict_is_told_apart_from_a_misfit() -> None:
    template = compile_template("{a}-{a}")
    assert template.conflicts("x-y")
    assert not template.conflicts("x-x")
    assert not template.conflicts("x/y-x")
    assert not compile_template("{a}-{b}").conflicts("x-y")


def test_one_name_twice_in_one_value(tmp_path: Path) -> None:
    # section 6: `placeholder` is one placeholder bound to two texts, also inside a single value
    message = {"protocol": "KAFKA", "protocoloptions": {"topic": "t", "key": "{id}:{id}"}}
    loaded = load_doc(tmp_path, registry("KAFKA", {"m": message}))
    assert shape(loaded.judge({"protocol": "KAFKA", "topic": "t", "key": "a:b:a:b"})) == ok("g", "m")
    assert shape(loaded.judge({"protocol": "KAFKA", "topic": "t", "key": "a:b"})) == \
        bad("g", "m", ("protocoloptions.key", "placeholder"))
    assert shape(loaded.judge({"protocol": "KAFKA", "topic": "t", "key": "a/b:a/b"})) == \
        bad("g", "m", ("protocoloptions.key", "template"))


# --- one binding per definition across every place a placeholder can stand ---------------------------

DEVICE = {"source": {"type": "uritemplate", "value": "/devices/{device}", "required": True},
          "subject": {"value": "{device}"}}


def _kafka_everywhere(tmp_path: Path) -> Any:
    message = ce_message("t", DEVICE, protocol="KAFKA", protocoloptions={
        "topic": "telemetry.{device}", "key": "{device}",
        "headers": {"x-device": {"value": "{device}", "required": True}}})
    return load_doc(tmp_path, registry("KAFKA", {"m": message}))


def _record(source: str = "/devices/a", subject: str = "a", topic: str = "telemetry.a", key: str = "a",
            header: str = "a") -> dict[str, Any]:
    return kafka_ce("t", extra_headers={"ce_source": source, "ce_subject": subject, "x-device": header},
                    topic=topic, key=key)


def test_consistent_bindings_conform(tmp_path: Path) -> None:
    loaded = _kafka_everywhere(tmp_path)
    assert loaded.errors == []
    assert shape(loaded.judge(_record())) == ok("g", "m")
    assert shape(loaded.judge(_record("/devices/dev-7", "dev-7", "telemetry.dev-7", "dev-7", "dev-7"))) == \
        ok("g", "m")


# The first place (declaration order: envelopemetadata, then topic, key, headers) binds the text; a later
# place with another text is the `placeholder` violation (silent point: which of the two is blamed).
@pytest.mark.parametrize(("changes", "path"), [
    ({"subject": "b"}, "envelopemetadata.subject"),
    ({"topic": "telemetry.b"}, "protocoloptions.topic"),
    ({"key": "b"}, "protocoloptions.key"),
    ({"header": "b"}, "protocoloptions.headers.x-device"),
])
def test_one_placeholder_two_texts_is_placeholder(tmp_path: Path, changes: dict[str, str], path: str) -> None:
    loaded = _kafka_everywhere(tmp_path)
    verdict = loaded.judge(_record(**changes))
    assert shape(verdict) == bad("g", "m", (path, "placeholder"))
    violation = verdict.violations[0]
    assert violation.actual == "b"
    assert "a" in str(violation.expected)


def test_source_and_key_disagree(tmp_path: Path) -> None:
    # every other place says "b": only the source's own text "a" binds first, so all of them are reported
    loaded = _kafka_everywhere(tmp_path)
    verdict = loaded.judge(_record(source="/devices/a", subject="b", topic="telemetry.b", key="b", header="b"))
    assert shape(verdict) == bad("g", "m", ("envelopemetadata.subject", "placeholder"),
                                 ("protocoloptions.topic", "placeholder"), ("protocoloptions.key", "placeholder"),
                                 ("protocoloptions.headers.x-device", "placeholder"))


@pytest.mark.parametrize(("changes", "path"), [
    ({"source": "/other/a"}, "envelopemetadata.source"),
    ({"topic": "metrics.a"}, "protocoloptions.topic"),
    ({"key": "a/b"}, "protocoloptions.key"),
    ({"header": ""}, "protocoloptions.headers.x-device"),
])
def test_value_outside_the_pattern_is_template(tmp_path: Path, changes: dict[str, str], path: str) -> None:
    loaded = _kafka_everywhere(tmp_path)
    assert shape(loaded.judge(_record(**changes))) == bad("g", "m", (path, "template"))


def test_template_failure_does_not_bind(tmp_path: Path) -> None:
    # source does not fit, so {device} is first bound by the subject: the rest agree with "b"
    loaded = _kafka_everywhere(tmp_path)
    verdict = loaded.judge(_record(source="/nope", subject="b", topic="telemetry.b", key="b", header="b"))
    assert shape(verdict) == bad("g", "m", ("envelopemetadata.source", "template"))


def test_bindings_do_not_leak_between_messages(tmp_path: Path) -> None:
    loaded = _kafka_everywhere(tmp_path)
    assert loaded.judge(_record()).conformant
    assert shape(loaded.judge(_record("/devices/z", "z", "telemetry.z", "z", "z"))) == ok("g", "m")


def test_different_names_bind_independently(tmp_path: Path) -> None:
    message = ce_message("t", {"source": {"value": "/sites/{site}/devices/{device}"}}, protocol="KAFKA",
                         protocoloptions={"key": "{site}:{device}"})
    loaded = load_doc(tmp_path, registry("KAFKA", {"m": message}))
    assert shape(loaded.judge(kafka_ce("t", extra_headers={"ce_source": "/sites/s1/devices/d1"}, key="s1:d1"))) == \
        ok("g", "m")
    assert shape(loaded.judge(kafka_ce("t", extra_headers={"ce_source": "/sites/s1/devices/d1"}, key="s1:d2"))) == \
        bad("g", "m", ("protocoloptions.key", "placeholder"))


def test_placeholder_in_a_string_attribute_without_type(tmp_path: Path) -> None:
    # `subject` defaults to string; an extension attribute defaults to string as well
    message = ce_message("t", {"subject": {"value": "orders/{id}"}, "orderid": {"value": "{id}"}})
    loaded = load_doc(tmp_path, registry(None, {"m": message}))
    good = kafka_ce("t", extra_headers={"ce_subject": "orders/9", "ce_orderid": "9"})
    assert shape(loaded.judge(good)) == ok("g", "m")
    wrong = kafka_ce("t", extra_headers={"ce_subject": "orders/9", "ce_orderid": "8"})
    assert shape(loaded.judge(wrong)) == bad("g", "m", ("envelopemetadata.orderid", "placeholder"))


# --- the same rule on the other protocols' subject / topic / path ------------------------------------


def test_amqp_subject_and_application_property(tmp_path: Path) -> None:
    message = {"protocol": "AMQP/1.0", "protocoloptions": {
        "properties": {"subject": {"type": "uritemplate", "value": "orders/{id}"}},
        "application-properties": {"orderid": {"value": "{id}", "required": True}}}}
    loaded = load_doc(tmp_path, registry("AMQP/1.0", {"m": message}))
    rec = {"protocol": "AMQP/1.0", "properties": {"subject": "orders/7"}, "application-properties": {"orderid": "7"}}
    assert shape(loaded.judge(rec)) == ok("g", "m")
    rec["application-properties"] = {"orderid": "8"}
    assert shape(loaded.judge(rec)) == bad("g", "m", ("protocoloptions.application-properties.orderid",
                                                      "placeholder"))


def test_mqtt_topic_and_user_property(tmp_path: Path) -> None:
    message = {"protocol": "MQTT/5.0", "protocoloptions": {
        "topic_name": "weather/{office}/bulletin",
        "user_properties": [{"name": "office", "value": "{office}"}]}}
    loaded = load_doc(tmp_path, registry("MQTT/5.0", {"m": message}))
    rec = {"protocol": "MQTT/5.0", "topic_name": "weather/tokyo/bulletin",
           "user_properties": [{"name": "office", "value": "tokyo"}]}
    assert shape(loaded.judge(rec)) == ok("g", "m")
    rec["user_properties"] = [{"name": "office", "value": "osaka"}]
    assert shape(loaded.judge(rec)) == bad("g", "m", ("protocoloptions.user_properties.office", "placeholder"))


def test_nats_subject_and_header(tmp_path: Path) -> None:
    message = {"protocol": "NATS", "protocoloptions": {
        "subject": "orders.{id}", "headers": {"Order-Id": {"value": "{id}", "required": True}}}}
    loaded = load_doc(tmp_path, registry("NATS", {"m": message}))
    rec = {"protocol": "NATS", "subject": "orders.5", "headers": {"order-id": "5"}}
    assert shape(loaded.judge(rec)) == ok("g", "m")
    rec["headers"] = {"ORDER-ID": "6"}
    assert shape(loaded.judge(rec)) == bad("g", "m", ("protocoloptions.headers.Order-Id", "placeholder"))


def test_http_path_and_query(tmp_path: Path) -> None:
    message = {"protocol": "HTTP", "protocoloptions": {
        "method": "PUT", "path": "/orders/{id}", "query": {"id": {"value": "{id}", "required": True}}}}
    loaded = load_doc(tmp_path, registry("HTTP", {"m": message}))
    rec = {"protocol": "HTTP", "method": "PUT", "path": "/orders/5", "query": {"id": "5"}}
    assert shape(loaded.judge(rec)) == ok("g", "m")
    rec["query"] = {"id": "6"}
    assert shape(loaded.judge(rec)) == bad("g", "m", ("protocoloptions.query.id", "placeholder"))
    rec = {"protocol": "HTTP", "method": "PUT", "path": "/orders/5/items", "query": {"id": "5"}}
    # the path is the discriminator: a path outside the template leaves no candidate (section 6)
    verdict = loaded.judge(rec)
    assert (verdict.outcome.value, verdict.messagegroupid, verdict.messageid) == ("nonconformant", None, None)
    assert [v.rule.value for v in verdict.violations] == ["no-match"]


# --- no catastrophic backtracking: hostile values against many-placeholder templates ----------------------

HOSTILE = [
    ("{a}.{b}.{c}.{d}.{e}.{f}.{g}.{h}.end", "a." * 100_000 + "x"),      # a backtracking regex: O(n^8)
    ("".join(f"{{p{i}}}" for i in range(50)) + "/x", "a" * 200_000),     # 50 adjacent placeholders
    ("".join(f"{{p{i}}}-" for i in range(50)) + "x", "-a" * 100_000),
    ("/{a}/{b}" * 20, "/a" * 100_000 + "/"),
    ("{a}:{a}:{b}:{b}:{c}:{c}", "a:" * 100_000 + "b"),                   # repeated names: the bounded search
    ("{a}{b}{c}{d}{a}", "ab" * 100_000),
    ("{x}.{y}.{x}.{y}.{x}", "q." * 100_000 + "z"),
    ("/{a}x/{b}x/{a}", "/" + "a" * 200_000 + "/" + "b" * 200_000 + "/c"),  # rule 1: the regex, forced splits
    ("/{a}/{b}/{a}" * 10, "/aaaa" * 100_000),
]


def test_the_regex_serves_only_templates_whose_splits_are_forced() -> None:
    # rule 1: no piece between delimiters holds two placeholders, so a backtracking regex has no choice
    assert compile_template("/sites/{site}/devices/{device}").forced is not None
    assert compile_template("/{id}/x/{id}?q={q}").forced is not None
    for ambiguous in ("{a}.{b}", "com.example.{kind}.{version}", "/{a}-{b}/", "{a}{b}"):
        assert compile_template(ambiguous).forced is None


@pytest.mark.parametrize(("template", "value"), HOSTILE)
def test_hostile_values_finish_at_once(template: str, value: str) -> None:
    # linear work (one rfind per placeholder) or SEARCH_BUDGET steps; a regex took minutes on the first one
    compiled = compile_template(template)
    # this thread's CPU time, which a loaded machine does not stretch: the regex took minutes, so 10 s is generous
    started = time.thread_time()
    compiled.match(value)
    compiled.conflicts(value)
    assert time.thread_time() - started < 10.0


def test_the_consistent_split_search_stops_at_its_budget() -> None:
    # `{a}{b}{c}{d}{a}` on "abab...": a split exists (a = "ab"), but the greedy order reaches it only after
    # trying every shorter b, c, d for every longer a; the search gives up and says `placeholder`
    search = _Search(compile_template("{a}{b}{c}{d}{a}").pieces, ["ab" * 2000])
    assert search.run() is None
    assert SEARCH_BUDGET < search.steps <= SEARCH_BUDGET + 5  # one more per placeholder, unwinding
    assert compile_template("{a}{b}{c}{d}{a}").conflicts("ab" * 2000)
    assert compile_template("{a}{b}{c}{d}{a}").match("ab" * 4) == {"a": "ab", "b": "ab", "c": "a", "d": "b"}


def test_delimiters_must_line_up() -> None:
    template = compile_template("/{a}?x={b}#{c}")
    assert template.match("/1?x=2#3") == {"a": "1", "b": "2", "c": "3"}
    assert template.match("/1?x=2?#3") is None
    assert template.match("/1/?x=2#3") is None
    assert compile_template("{?q}/{x}").match("a/b") == {"q": "a", "x": "b"}  # `?` in a name is no delimiter
