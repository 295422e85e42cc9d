"""validation rule 6 (and 3, 8): which candidate a verdict names. Most specific match wins, ties by
(messagegroupid, messageid); a nonconformant verdict names the closest candidate whose discriminator matches;
no qualifying candidate is `no-match`; an unknown endpoint is `endpoint`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.unit.builders import CE, bad, ce_message, kafka_ce, load_doc, ok, registry, shape

SOURCE = {"source": {"value": "/src", "required": True}}


def _no_match(verdict: Any) -> None:
    assert (verdict.outcome.value, verdict.messagegroupid, verdict.messageid) == ("nonconformant", None, None)
    assert [v.rule.value for v in verdict.violations] == ["no-match"]


# --- conformant: the most specific match ------------------------------------------------------------


def test_most_specific_match_wins(tmp_path: Path) -> None:
    messages = {
        "a-loose": ce_message("t"),
        "z-tight": ce_message("t", {**SOURCE, "subject": {"value": "s1", "required": True}}),
        "m-middle": ce_message("t", SOURCE),
        "0-floating": {"envelope": CE},
    }
    loaded = load_doc(tmp_path, registry("KAFKA", messages))
    assert shape(loaded.judge(kafka_ce("t", extra_headers={"ce_subject": "s1"}))) == ok("g", "z-tight")
    assert shape(loaded.judge(kafka_ce("t"))) == ok("g", "m-middle")
    assert shape(loaded.judge(kafka_ce("t", extra_headers={"ce_source": "/other"}))) == ok("g", "a-loose")
    assert shape(loaded.judge(kafka_ce("other"))) == ok("g", "0-floating")


def test_payload_and_protocol_options_count_as_constraints(tmp_path: Path) -> None:
    messages = {
        "a": ce_message("t"),
        "b": ce_message("t", protocol="KAFKA", protocoloptions={"topic": "t"}),
        "c": ce_message("t", protocol="KAFKA", protocoloptions={"topic": "t"},
                        dataschemaformat="JsonSchema/draft-07", dataschema={"type": "object"}),
    }
    loaded = load_doc(tmp_path, registry("KAFKA", messages))
    assert shape(loaded.judge(kafka_ce("t", body="{}"))) == ok("g", "c")
    assert shape(loaded.judge(kafka_ce("t", body="[]"))) == ok("g", "b")
    assert shape(loaded.judge(kafka_ce("t", body="[]", topic="u"))) == ok("g", "a")


def test_ties_broken_by_message_id(tmp_path: Path) -> None:
    loaded = load_doc(tmp_path, registry("KAFKA", {"b": ce_message("t"), "a": ce_message("t"), "c": ce_message("t")}))
    assert shape(loaded.judge(kafka_ce("t"))) == ok("g", "a")


def test_ties_broken_by_group_id_first(tmp_path: Path) -> None:
    doc = {"endpoints": {"ep": {"protocol": "KAFKA", "messagegroups": ["#/messagegroups/zz", "#/messagegroups/aa"]}},
           "messagegroups": {"zz": {"messages": {"a": ce_message("t")}},
                             "aa": {"messages": {"z": ce_message("t")}}}}
    loaded = load_doc(tmp_path, doc)
    assert shape(loaded.judge(kafka_ce("t"))) == ok("aa", "z")


def test_inline_endpoint_messages_use_the_endpoint_id_as_group(tmp_path: Path) -> None:
    doc = registry("KAFKA", {"shared": ce_message("u")}, endpoint="telemetry.in",
                   inline={"own": ce_message("t"), "tight": ce_message("u", SOURCE)})
    loaded = load_doc(tmp_path, doc)
    assert shape(loaded.judge(kafka_ce("t"))) == ok("telemetry.in", "own")
    assert shape(loaded.judge(kafka_ce("u"))) == ok("telemetry.in", "tight")
    assert shape(loaded.judge(kafka_ce("t", omit=["ce_id"]))) == \
        bad("telemetry.in", "own", ("envelopemetadata.id", "required"))


# --- nonconformant: the closest candidate -----------------------------------------------------------------


def test_closest_is_the_one_with_fewest_violations(tmp_path: Path) -> None:
    messages = {
        "a-two": ce_message("t", {"x": {"required": True}, "y": {"required": True}}),
        "b-one": ce_message("t", {"x": {"required": True}}),
    }
    loaded = load_doc(tmp_path, registry("KAFKA", messages))
    assert shape(loaded.judge(kafka_ce("t"))) == bad("g", "b-one", ("envelopemetadata.x", "required"))


def test_closest_then_most_specific(tmp_path: Path) -> None:
    messages = {
        "a-plain": ce_message("t", {"x": {"required": True}}),
        "b-specific": ce_message("t", {"x": {"required": True}, "z": {"value": "optional"}}),
    }
    loaded = load_doc(tmp_path, registry("KAFKA", messages))
    assert shape(loaded.judge(kafka_ce("t"))) == bad("g", "b-specific", ("envelopemetadata.x", "required"))


def test_closest_then_ids(tmp_path: Path) -> None:
    messages = {"b": ce_message("t", {"x": {"required": True}}), "a": ce_message("t", {"y": {"required": True}})}
    loaded = load_doc(tmp_path, registry("KAFKA", messages))
    assert shape(loaded.judge(kafka_ce("t"))) == bad("g", "a", ("envelopemetadata.y", "required"))


def test_candidate_with_other_discriminator_is_never_named(tmp_path: Path) -> None:
    # "u" would have no violation apart from its type, but only candidates of type "t" qualify
    messages = {"t-def": ce_message("t", {"x": {"required": True}, "y": {"required": True}}),
                "u-def": ce_message("u")}
    loaded = load_doc(tmp_path, registry("KAFKA", messages))
    verdict = loaded.judge(kafka_ce("t"))
    assert shape(verdict) == bad("g", "t-def", ("envelopemetadata.x", "required"), ("envelopemetadata.y", "required"))


def test_no_qualifying_candidate_is_no_match(tmp_path: Path) -> None:
    loaded = load_doc(tmp_path, registry("KAFKA", {"m": ce_message("t")}))
    verdict = loaded.judge(kafka_ce("unknown.type"))
    _no_match(verdict)
    assert verdict.violations[0].actual == "unknown.type"
    _no_match(loaded.judge(kafka_ce(None)))


def test_templated_discriminator_qualifies(tmp_path: Path) -> None:
    messages = {"tpl": ce_message("com.example.{kind}", {"x": {"required": True}})}
    loaded = load_doc(tmp_path, registry("KAFKA", messages))
    assert shape(loaded.judge(kafka_ce("com.example.a", extra_headers={"ce_x": "1"}))) == ok("g", "tpl")
    assert shape(loaded.judge(kafka_ce("com.example.a"))) == bad("g", "tpl", ("envelopemetadata.x", "required"))
    _no_match(loaded.judge(kafka_ce("org.example.a")))
    _no_match(loaded.judge(kafka_ce("com.example.a/b")))


def test_candidate_without_discriminator_always_counts(tmp_path: Path) -> None:
    messages = {"fixed": ce_message("t", {"x": {"required": True}, "y": {"required": True}}),
                "floating": {"envelope": CE, "envelopemetadata": {"x": {"required": True}}}}
    loaded = load_doc(tmp_path, registry("KAFKA", messages))
    # both qualify for type "t": the floating one has fewer violations
    assert shape(loaded.judge(kafka_ce("t"))) == bad("g", "floating", ("envelopemetadata.x", "required"))
    # for any other type only the floating one qualifies
    assert shape(loaded.judge(kafka_ce("other"))) == bad("g", "floating", ("envelopemetadata.x", "required"))


NON_CE = [
    ("AMQP/1.0", {"properties": {"subject": "order.created"}},
     {"protocol": "AMQP/1.0", "properties": {"subject": "order.created"}},
     {"protocol": "AMQP/1.0", "properties": {"subject": "order.deleted"}}),
    ("MQTT/5.0", {"topic_name": "plant/{line}/temp"},
     {"protocol": "MQTT/5.0", "topic_name": "plant/3/temp"},
     {"protocol": "MQTT/5.0", "topic_name": "plant/3/pressure"}),
    ("MQTT/3.1.1", {"topic_name": "plant/temp"},
     {"protocol": "MQTT/3.1.1", "topic_name": "plant/temp"},
     {"protocol": "MQTT/3.1.1", "topic_name": "plant/other"}),
    ("KAFKA", {"topic": "orders"},
     {"protocol": "KAFKA", "topic": "orders"},
     {"protocol": "KAFKA", "topic": "payments"}),
    ("NATS", {"subject": "orders.{id}"},
     {"protocol": "NATS", "subject": "orders.7"},
     {"protocol": "NATS", "subject": "payments.7"}),
    ("HTTP", {"path": "/orders"},
     {"protocol": "HTTP", "path": "/orders"},
     {"protocol": "HTTP", "path": "/payments"}),
]


@pytest.mark.parametrize(("protocol", "options", "matching", "other"), NON_CE)
def test_protocol_field_discriminator(tmp_path: Path, protocol: str, options: dict[str, Any],
                                      matching: dict[str, Any], other: dict[str, Any]) -> None:
    header_key = "application-properties" if protocol == "AMQP/1.0" else \
        "user_properties" if protocol.startswith("MQTT") else "headers"
    declared = {"tenant": {"required": True}}
    if protocol.startswith("MQTT"):
        declared = [{"name": "tenant", "required": True}]  # type: ignore[assignment]
    if protocol == "MQTT/3.1.1":
        options = {**options, "qos": 1}
        path = "protocoloptions.qos"
    else:
        options = {**options, header_key: declared}
        path = f"protocoloptions.{header_key}.tenant"
    loaded = load_doc(tmp_path, registry(protocol, {"m": {"protocol": protocol, "protocoloptions": options}}))
    assert loaded.errors == []
    assert shape(loaded.judge(matching)) == bad("g", "m", (path, "required"))
    _no_match(loaded.judge(other))


def test_non_cloudevents_definition_without_discriminator_always_counts(tmp_path: Path) -> None:
    message = {"protocol": "KAFKA", "protocoloptions": {"headers": {"tenant": {"required": True}}}}
    loaded = load_doc(tmp_path, registry("KAFKA", {"m": message}))
    assert shape(loaded.judge({"protocol": "KAFKA", "topic": "anything"})) == \
        bad("g", "m", ("protocoloptions.headers.tenant", "required"))


# --- endpoints and protocols --------------------------------------------------------------------------


def test_unknown_endpoint(tmp_path: Path) -> None:
    loaded = load_doc(tmp_path, registry("KAFKA", {"m": ce_message("t")}))
    verdict = loaded.judge({**kafka_ce("t"), "endpoint": "nope"})
    assert shape(verdict) == bad(None, None, ("endpoint", "endpoint"))
    assert verdict.violations[0].actual == "nope"
    assert shape(loaded.judge(kafka_ce("t"), "nope")) == bad(None, None, ("endpoint", "endpoint"))
    assert shape(loaded.judge(kafka_ce("t"), "ep")) == ok("g", "m")


def test_record_endpoint_wins_over_the_default(tmp_path: Path) -> None:
    doc = registry("KAFKA", {"m": ce_message("t")})
    doc["endpoints"]["other"] = {"protocol": "KAFKA", "messages": {"o": ce_message("t")}}
    loaded = load_doc(tmp_path, doc)
    assert shape(loaded.judge({**kafka_ce("t"), "endpoint": "other"}, "ep")) == ok("other", "o")
    assert shape(loaded.judge(kafka_ce("t"), "ep")) == ok("g", "m")


def test_no_endpoint_named_with_several_endpoints(tmp_path: Path) -> None:
    # silent point (assumed): without a name, a registry with several endpoints cannot pick one: `endpoint`
    doc = registry("KAFKA", {"m": ce_message("t")})
    doc["endpoints"]["other"] = {"protocol": "KAFKA", "messagegroups": ["#/messagegroups/g"]}
    loaded = load_doc(tmp_path, doc)
    assert shape(loaded.judge(kafka_ce("t"))) == bad(None, None, ("endpoint", "endpoint"))


def test_registry_without_endpoints_uses_every_definition(tmp_path: Path) -> None:
    # silent point (assumed): a registry with message groups but no endpoints judges against all messages
    doc = {"messagegroups": {"g": {"messages": {"m": ce_message("t")}}, "h": {"messages": {"n": ce_message("u")}}}}
    loaded = load_doc(tmp_path, doc)
    assert shape(loaded.judge(kafka_ce("t"))) == ok("g", "m")
    assert shape(loaded.judge(kafka_ce("u"))) == ok("h", "n")


def test_group_not_referenced_by_the_endpoint_does_not_apply(tmp_path: Path) -> None:
    doc = registry("KAFKA", {"m": ce_message("t")})
    doc["messagegroups"]["unlisted"] = {"messages": {"u": ce_message("u")}}
    loaded = load_doc(tmp_path, doc)
    _no_match(loaded.judge(kafka_ce("u")))


def test_definitions_bound_to_another_protocol_do_not_apply(tmp_path: Path) -> None:
    messages = {
        "kafka": ce_message("t", protocol="KAFKA"),
        "mqtt-tight": ce_message("t", SOURCE, protocol="MQTT/5.0", protocoloptions={"qos": 1}),
        "amqp-only": ce_message("amqp.only", protocol="AMQP/1.0"),
        "unbound": ce_message("any"),
    }
    loaded = load_doc(tmp_path, registry(None, messages))
    assert shape(loaded.judge(kafka_ce("t"))) == ok("g", "kafka")
    _no_match(loaded.judge(kafka_ce("amqp.only")))
    assert shape(loaded.judge(kafka_ce("any"))) == ok("g", "unbound")
    mqtt = {"protocol": "MQTT/5.0", "topic_name": "x", "qos": 1,
            "user_properties": [["specversion", "1.0"], ["id", "1"], ["source", "/src"], ["type", "t"]]}
    assert shape(loaded.judge(mqtt)) == ok("g", "mqtt-tight")


def test_mqtt_versions_share_definitions(tmp_path: Path) -> None:
    # silent point (assumed): a definition bound to MQTT/5.0 also applies to MQTT/3.1.1 traffic (one family)
    message = {"protocol": "MQTT/5.0", "protocoloptions": {"topic_name": "a"}}
    loaded = load_doc(tmp_path, registry(None, {"m": message}))
    assert shape(loaded.judge({"protocol": "MQTT/3.1.1", "topic_name": "a"})) == ok("g", "m")


def test_endpoint_protocol_options_add_no_constraint(tmp_path: Path) -> None:
    # section 8: endpoint-level protocoloptions configure the connection only
    doc = registry("KAFKA", {"m": ce_message("t")}, endpoint_attrs={
        "protocoloptions": {"options": {"topic": "telemetry", "headers": {"x": "y"}}, "topic": "telemetry"}})
    loaded = load_doc(tmp_path, doc)
    assert shape(loaded.judge(kafka_ce("t", topic="something-else"))) == ok("g", "m")


def test_inferred_dataschema_attribute_is_not_enforced(tmp_path: Path) -> None:
    # section 8: a `dataschema` attribute inferred from dataschemauri is not enforced; a declared one is
    schemagroups = {"sg": {"schemas": {"s": {"format": "JsonSchema/draft-07",
                                             "versions": {"1": {"schema": {"type": "object"}}}}}}}
    messages = {"inferred": ce_message("i", dataschemaformat="JsonSchema/draft-07",
                                       dataschemauri="#/schemagroups/sg/schemas/s"),
                "declared": ce_message("d", {"dataschema": {"value": "https://example.com/s.json"}},
                                       dataschemaformat="JsonSchema/draft-07",
                                       dataschemauri="#/schemagroups/sg/schemas/s")}
    loaded = load_doc(tmp_path, registry("KAFKA", messages, schemagroups=schemagroups))
    other = {"ce_dataschema": "https://example.com/other.json"}
    assert shape(loaded.judge(kafka_ce("i", body="{}", extra_headers=other))) == ok("g", "inferred")
    assert shape(loaded.judge(kafka_ce("i", body="{}"))) == ok("g", "inferred")
    assert shape(loaded.judge(kafka_ce("d", body="{}", extra_headers=other))) == \
        bad("g", "declared", ("envelopemetadata.dataschema", "value"))
