"""Which produced topics are judged, under which policy, and the verdicts on one partition's record batch.

A topic is judged when a KAFKA endpoint of the documents names it (`topic` or `topics`); its policy is the
endpoint's route policy when that is `reject` or `observe` (labels or gateway.yaml, as for `xgate run`), else
the proxy's own (`proxy.policy`, reject by default), and its dead-letter destination the route's
`nonconformant` (or `unmatched` for messages no definition matches). The native core reads plain record
batches (uncompressed, v2) in place and judges them in one call; other batches are decoded with aiokafka's
record reader (every codec Kafka defines, with the kafka extra's cramjam) and judged by the core in one call,
as `xgate run` judges a fetched batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aiokafka.record.memory_records import MemoryRecords  # type: ignore[import-untyped]

from gateway.compiler.core import NativeJudge
from gateway.errors import Diagnostic, Severity
from gateway.model.resolved import Registry
from gateway.routes.resolve import endpoint_config, resolve_routes
from gateway.sections.proxy import POLICIES
from gateway.settings import Settings
from gateway.verdict import Verdict
from protocol_adapters.base import EndpointConfig
from protocol_adapters.kafka.mapping import kafka_envelope

REFUSAL_TEXT_LIMIT = 1024


@dataclass(frozen=True, slots=True)
class TopicRule:
    endpoint_id: str
    policy: str  # reject | observe
    nonconformant: EndpointConfig | None
    unmatched: EndpointConfig | None


def topic_rules(registry: Registry, settings: Settings, default_policy: str,
                judged_endpoints: set[str]) -> tuple[dict[str, TopicRule], list[Diagnostic]]:
    """Each judged topic's rule; a topic two endpoints name is a problem naming both."""
    routes = {route.source.endpoint_id: route for route in resolve_routes(registry, settings)[0]}
    rules: dict[str, TopicRule] = {}
    problems: list[Diagnostic] = []
    for endpoint_id in sorted(judged_endpoints):
        endpoint = registry.endpoints.get(endpoint_id)
        if endpoint is None or (endpoint.attrs.get("protocol") or "").upper() != "KAFKA":
            continue
        config = endpoint_config(registry, endpoint_id, settings)
        route = routes.get(endpoint_id)
        policy = route.policy if route is not None and route.policy in POLICIES else default_policy
        rule = TopicRule(endpoint_id, policy, route.nonconformant if route else None,
                         (route.unmatched or route.nonconformant) if route else None)
        for topic in _topics(config.options):
            if topic in rules:
                problems.append(Diagnostic(
                    Severity.ERROR, endpoint.origin.file,
                    f"topic {topic!r} is named by both {rules[topic].endpoint_id!r} and {endpoint_id!r}: the proxy "
                    "judges a produced topic by one endpoint's definitions", pointer=endpoint.origin.pointer,
                    code="proxy"))
                continue
            rules[topic] = rule
    return rules, problems


def _topics(options: Mapping[str, Any]) -> list[str]:
    raw = options.get("topics") or options.get("topic")
    names = raw.split(",") if isinstance(raw, str) else raw if isinstance(raw, list) else []
    return [n.strip() for n in names if isinstance(n, str) and n.strip() and "{" not in n]


@dataclass(slots=True)
class BatchVerdicts:
    """One partition's records as the core judged them."""

    count: int  # records in the batch
    # (topic, partition, key, headers, value, timestamp), in batch order: decoded by the client's reader when a
    # record did not conform (or the core could not read the batch), empty when the core read them all conformant
    records: list[tuple[Any, ...]]
    failed: list[tuple[int, Verdict]]  # (index in the batch, verdict) of each record that did not conform
    corrupt: str | None = None  # why the data could not be read as record batches


def decode(topic: str, partition: int, data: bytes | None) -> tuple[list[tuple[Any, ...]], str | None]:
    """The records of a produce request's partition data, or why they cannot be read."""
    if not data:
        return [], None
    records: list[tuple[Any, ...]] = []
    try:
        batches = MemoryRecords(data)
        while (batch := batches.next_batch()) is not None:
            if not batch.validate_crc():
                return [], "a record batch whose CRC does not match its contents"
            records.extend((topic, partition, r.key, r.headers, r.value, r.timestamp) for r in batch)
    except Exception as exc:  # aiokafka raises several kinds for a batch that is not one
        return [], f"record batch not readable: {exc}"
    return records, None


def judge(native: NativeJudge, endpoint_id: str, topic: str, partition: int, data: bytes | None) -> BatchVerdicts:
    """The batch's verdicts. The core reads plain (uncompressed, v2) batches in place and judges them with no
    Python object per record; the records are decoded here only to name what did not conform. Any other batch
    (compressed, corrupt, ...) is decoded by aiokafka's reader, which says why one cannot be read."""
    position = native.endpoint_position(endpoint_id)
    decoded = None
    if position is not None and data:
        read = native.judge_batches(position, topic, partition, data)
        if read is not None:
            count, others = read
            if not others:
                return BatchVerdicts(count, [], [])
            records, corrupt = decoded = decode(topic, partition, data)
            if corrupt is None and len(records) == count:  # the two readers agree (else: aiokafka's way, below)
                return BatchVerdicts(count, records, _failed(native, endpoint_id, records, others))
    records, corrupt = decoded or decode(topic, partition, data)
    if corrupt is not None or not records:
        return BatchVerdicts(len(records), records, [], corrupt)
    results: list[Any] = native.judge_records(position, records) if position is not None else [None] * len(records)
    return BatchVerdicts(len(records), records, _failed(native, endpoint_id, records, enumerate(results)))


def _failed(native: NativeJudge, endpoint_id: str, records: list[tuple[Any, ...]],
            results: Iterable[tuple[int, Any]]) -> list[tuple[int, Verdict]]:
    """(index, verdict) of each record whose result says it did not conform; one the core left to the Python
    judge (None) is judged here."""
    failed = []
    for index, result in results:
        if result.__class__ is int:
            continue
        record = records[index]
        envelope = None if result is not None else kafka_envelope(
            record[0], record[1], -1, record[2], record[4], record[3], record[5], endpoint_id)
        verdict = native.verdict(result, envelope)
        if verdict is not None and not verdict.conformant:
            failed.append((index, verdict))
    return failed


def refusal_text(verdict: Verdict) -> str:
    """One record's reason as a producer's error shows it: the closest definition and each violation."""
    named = f"{verdict.messagegroupid}/{verdict.messageid}" if verdict.messageid else "no definition"
    parts = [f"{v.rule.value} at {v.path or '/'}: {v.message}" for v in verdict.violations]
    text = f"xgate: {verdict.outcome.value} ({named}): " + "; ".join(parts)
    return text if len(text) <= REFUSAL_TEXT_LIMIT else text[:REFUSAL_TEXT_LIMIT - 3] + "..."
