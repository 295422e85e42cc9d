"""Every metric xgate exports, in one table: name, type, labels, meaning.

Labels are bounded: endpoint and destination ids, message group and message
ids come from the registry; verdict, action, rule, role and outcome are
fixed vocabularies. The metric table of docs/operations.md and the dashboard test read
this table.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MetricName:
    name: str
    kind: str  # counter | gauge | histogram
    labels: tuple[str, ...]
    help: str
    # how `xgate run --workers N` combines the workers' samples into one series: sum, min or max
    merge: str = "sum"


MESSAGES = MetricName("xgate_messages_total", "counter", ("endpoint", "verdict"),
                      "Messages judged, by source endpoint and verdict (conformant, nonconformant, unmatched).")
DEFINITION_MESSAGES = MetricName(
    "xgate_definition_messages_total", "counter", ("endpoint", "messagegroup", "message", "verdict"),
    "Messages by the message definition the verdict names (empty ids for unmatched messages).")
VIOLATIONS = MetricName("xgate_violations_total", "counter", ("endpoint", "rule"),
                        "Violations found, by source endpoint and rule (required, type, schema, no-match, ...).")
ROUTED = MetricName("xgate_routed_messages_total", "counter", ("endpoint", "destination", "action"),
                    "Messages settled, by source endpoint, destination endpoint ('' when none) and action "
                    "(forwarded, deadlettered, rejected, dropped).")
VALIDATION_SECONDS = MetricName("xgate_validation_seconds", "histogram", ("endpoint",),
                                "Time to judge one message (reading it, dispatch, every check).")
END_TO_END_SECONDS = MetricName("xgate_end_to_end_seconds", "histogram", ("endpoint",),
                                "Time from receiving a message to its destination confirming it (or its settlement).")
INFLIGHT = MetricName("xgate_inflight_messages", "gauge", ("endpoint",),
                      "Messages received and not yet settled at the source.")
DELIVERY_FAILURES = MetricName("xgate_delivery_failures_total", "counter", ("endpoint", "destination", "retriable"),
                               "Failed sends to a destination; retriable ones are retried with backoff.")
ADAPTER_UP = MetricName("xgate_adapter_up", "gauge", ("endpoint", "role"),
                        "1 while the route's adapter is connected (role: source or sink), else 0.", merge="min")
UNDELIVERABLE = MetricName(
    "xgate_undeliverable_messages_total", "counter", ("endpoint", "destination", "cause"),
    "Messages a destination can never accept (cause: too-large, refused) that no dead-letter destination could "
    "hold either: acknowledged and dropped, each one logged; and records the source could not read (cause: "
    "unreadable, destination ''), skipped and logged by range.")
DESTINATION_UP = MetricName("xgate_destination_up", "gauge", ("endpoint", "destination"),
                            "0 while a route's destination has failed every send for a few seconds, else 1.",
                            merge="min")
ADAPTER_RECONNECTS = MetricName("xgate_adapter_reconnects_total", "counter", ("endpoint", "role"),
                                "Times a route had to connect its adapters again after losing them.")
RELOADS = MetricName("xgate_reloads_total", "counter", ("outcome",),
                     "Configuration reloads by outcome (applied, unchanged, failed).")
LAST_RELOAD = MetricName("xgate_last_reload_success_timestamp_seconds", "gauge", (),
                         "Unix time of the last configuration load that applied (startup included).", merge="min")
CONFIG_WATCH_UP = MetricName("xgate_config_watch_up", "gauge", (),
                             "1 while the config directory is watched for changes; 0 while a failed watch waits to "
                             "be started again (SIGHUP still reloads).", merge="min")
DEFINITIONS = MetricName("xgate_compiled_definitions", "gauge", (),
                         "Message definitions in the active ruleset.", merge="max")
ROUTES = MetricName("xgate_routes", "gauge", (), "Routes running.", merge="min")
BUILD_INFO = MetricName("xgate_build_info", "gauge", ("version", "python"), "Always 1; the labels say what runs.", merge="max")

SHADOW_DISAGREEMENTS = MetricName(
    "xgate_shadow_disagreements_total", "counter", ("endpoint", "active", "candidate", "messageid", "rule"),
    "Messages the shadow candidate (the config directory's shadow/ documents) judged otherwise than the active "
    "rules: active and candidate verdicts, the message id the candidate (else the active rules) named, and the "
    "rule of the first violation that explains it (the candidate's when it refuses, else the active rules').")
SHADOW_JUDGED = MetricName(
    "xgate_shadow_judged_total", "counter", ("endpoint",),
    "Messages the shadow candidate judged beside the active rules (the denominator of a disagreement rate).")

ALL: tuple[MetricName, ...] = (MESSAGES, DEFINITION_MESSAGES, VIOLATIONS, ROUTED, VALIDATION_SECONDS,
                               END_TO_END_SECONDS, INFLIGHT, DELIVERY_FAILURES, UNDELIVERABLE, DESTINATION_UP,
                               ADAPTER_UP, ADAPTER_RECONNECTS, RELOADS, LAST_RELOAD, CONFIG_WATCH_UP, DEFINITIONS, ROUTES, BUILD_INFO,
                               SHADOW_DISAGREEMENTS, SHADOW_JUDGED)


def exported_series(metric: MetricName) -> tuple[str, ...]:
    """The series names Prometheus sees (histograms expose _bucket, _sum and _count)."""
    if metric.kind == "histogram":
        return tuple(f"{metric.name}_{suffix}" for suffix in ("bucket", "sum", "count"))
    return (metric.name,)
