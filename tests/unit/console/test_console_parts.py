"""The console's parts alone: its gateway.yaml section, the dead-letter ring's two bounds, where a violation's
path points, and the rate history."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from gateway.console.marks import locate
from gateway.console.rates import RateHistory
from gateway.envelope import Envelope
from gateway.runtime.dead_letter_ring import OVERHEAD_BYTES, DeadLetters
from gateway.runtime.stats import GatewayStats
from gateway.sections.console import ConsoleSettings
from gateway.settings import load_settings
from gateway.verdict import Outcome, Rule, Verdict, Violation


def _settings(tmp_path: Path, text: str) -> tuple[ConsoleSettings | None, list[str]]:
    (tmp_path / "gateway.yaml").write_text(text)
    settings, problems = load_settings(tmp_path)
    return settings.console, [f"{p.pointer} {p.message}" for p in problems]


def test_the_console_section(tmp_path: Path) -> None:
    assert _settings(tmp_path, "runtime: {}\n") == (None, [])
    assert _settings(tmp_path, "console:\n") == (ConsoleSettings(), [])
    assert _settings(tmp_path, "console: false\n") == (None, [])
    assert _settings(tmp_path, "console: {show_bodies: false, redact: [/card, Authorization], dead_letters: 5}\n") \
        == (ConsoleSettings(False, ("/card", "Authorization"), 5), [])
    console, problems = _settings(tmp_path, "console: {show_bodies: maybe, dead_letters: 0, colour: red}\n")
    assert console is None and len(problems) == 3
    assert any("/console/show_bodies" in p for p in problems) and any("/console/dead_letters" in p for p in problems)
    assert any("colour" in p for p in problems)


def _verdict() -> Verdict:
    return Verdict(Outcome.NONCONFORMANT, "g", "m", (Violation("dataschema:/v", Rule.SCHEMA, "maximum: 1", 5, "x"),))


def test_the_ring_keeps_the_latest_per_route_and_a_byte_cap_in_all() -> None:
    ring = DeadLetters(per_route=3, max_bytes=10 * (100 + OVERHEAD_BYTES), interval=0.0)
    for n in range(5):
        ring.add("a", Envelope("KAFKA", {}, b"x" * 100), _verdict())
    assert [letter.number for letter in ring.latest("a")] == [5, 4, 3]
    for n in range(9):
        ring.add("b", Envelope("KAFKA", {}, b"x" * 100), _verdict())
    # 3 of b's would fit per route; the byte cap (10 messages) is not reached: 3 + 3
    assert len(ring.latest()) == 6 and ring.bytes == 6 * (100 + OVERHEAD_BYTES)
    ring.add("c", Envelope("KAFKA", {}, b"x" * (6 * 100 + 6 * OVERHEAD_BYTES)), _verdict())
    # the big one pushes the oldest messages out, whichever route they came from
    assert ring.bytes <= ring.max_bytes and ring.latest("c")[0].number == 15
    assert ring.latest("a") == [] and ring.find(15) is not None and ring.find(1) is None
    assert ring.kept_total == 15


def test_a_violations_path_says_where_it_is_marked() -> None:
    violations = tuple(Violation(path, Rule.VALUE, "", "", path) for path in (
        "envelopemetadata.source", "protocoloptions.headers.ce_type", "protocoloptions.key",
        "protocoloptions.user_properties.Building", "dataschema:/items/0/qty", "dataschema:", "body", "record"))
    marks = locate(violations)
    assert marks.attributes == {"source": [1]}
    assert marks.groups == {"headers": {"ce_type": [2]}, "user_properties": {"building": [4]}}
    assert marks.fields == {"key": [3]} and marks.payload == {"/items/0/qty": [5], "": [6]}
    assert marks.whole == [7, 8]


def test_rates_by_verdict_from_the_route_counters() -> None:
    stats = GatewayStats()
    route = stats.route("in")
    history = RateHistory(stats, interval=5.0)
    history.sample(now=0.0)
    route.verdicts.update(Counter(conformant=100, nonconformant=10))
    history.sample(now=5.0)
    route.verdicts.update(Counter(conformant=50))
    assert history.rates("in", window=60.0, now=10.0) == {"conformant": 15.0, "nonconformant": 1.0,
                                                          "unmatched": 0.0}
    assert history.series("in") == [{"conformant": 20.0, "nonconformant": 2.0, "unmatched": 0.0}]
    assert history.rates("other", now=10.0) == {"conformant": 0.0, "nonconformant": 0.0, "unmatched": 0.0}


def test_a_binary_payload_is_shown_as_hex_and_decoded_by_its_definitions_schema(tmp_path: Path) -> None:
    """issue 37: "binary payloads as hex with the decoded view where the format allows" (Avro here)."""
    import io
    import json

    from fastavro import schemaless_writer

    from gateway.compiler import compile_registry
    from gateway.console.marks import message_html
    from gateway.loader import load_snapshot

    schema = {"type": "record", "name": "Reading", "fields": [{"name": "v", "type": "long"},
                                                             {"name": "unit", "type": "string"}]}
    (tmp_path / "r.json").write_text(json.dumps({"endpoints": {"in": {
        "usage": ["consumer"], "protocol": "KAFKA", "envelope": "CloudEvents/1.0", "messages": {"reading": {
            "envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "com.example.reading"},
                                                                "source": {"value": "/sites/{site}"}},
            "dataschemaformat": "Avro/1.11.1", "dataschema": schema}}}}}))
    snapshot = load_snapshot([tmp_path])
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    body = io.BytesIO()
    schemaless_writer(body, schema, {"v": 42, "unit": "kPa"})
    envelope = Envelope("KAFKA", {"topic": "in", "headers": [
        ("ce_specversion", b"1.0"), ("ce_id", b"1"), ("ce_type", b"com.example.reading"),
        ("ce_source", b"elsewhere"), ("content-type", b"avro/binary")]}, body.getvalue(), endpoint="in")
    verdict = ruleset.classify(envelope)
    assert not verdict.conformant and verdict.messageid == "reading"  # the source breaks its template
    page = message_html(envelope, verdict, show_bodies=True, rules=ruleset.endpoints["in"])
    assert "not JSON" in page and body.getvalue()[:1].hex() in page  # the hex
    assert "<h4>Decoded (Avro, by the definition's schema)</h4>" in page
    assert '<span class="key">&quot;unit&quot;</span>: &quot;kPa&quot;' in page and "42" in page


def test_a_full_ring_takes_a_routes_next_batch_only_after_its_interval() -> None:
    """At full rate the console keeps the latest batch of every interval, not every message (KEEP_INTERVAL)."""
    ring = DeadLetters(per_route=3, max_bytes=1 << 20, interval=60.0)
    batch = [(Envelope("KAFKA", {}, f"{n}".encode()), _verdict()) for n in range(5)]
    ring.add_many("a", batch)
    assert [letter.envelope.body for letter in ring.latest("a")] == [b"4", b"3", b"2"]  # the batch's latest 3
    ring.add_many("a", batch[:1])  # full, and within the interval: not kept
    ring.add_many("b", batch[:2])  # another route has its own
    assert len(ring.latest("a")) == 3 and ring.latest("a")[0].envelope.body == b"4"
    assert len(ring.latest("b")) == 2 and ring.kept_total == 8  # every message handed over is counted
