"""Why one message matched or did not: every definition of its endpoint tried, with each one's violations
(`xgate explain` prints it; the console's "Try a message" shows it)."""

from __future__ import annotations

import json

from gateway.cloudevents import protocol_content_type, read_cloudevents
from gateway.compiler import Ruleset
from gateway.compiler.view import MessageView
from gateway.envelope import Envelope
from gateway.loader.names import protocol_family


def explain(ruleset: Ruleset, envelope: Envelope) -> str:
    verdict = ruleset.classify(envelope)
    lines = [f"verdict: {verdict.outcome.value}"
             + (f" as {verdict.messagegroupid}/{verdict.messageid}" if verdict.messageid else "")]
    rules = ruleset.endpoints.get(envelope.endpoint) if envelope.endpoint else ruleset.default_endpoint()
    if rules is None:
        lines.extend(f"  {v.rule.value}: {v.message}" for v in verdict.violations)
        return "\n".join(lines)
    lines.append(f"endpoint: {rules.endpoint_id} (protocol {rules.protocol or 'any'}, "
                 f"CloudEvents mode {rules.envelope_mode or 'binary or structured'})")
    index = rules.index_for(envelope.protocol)
    content_type = protocol_content_type(envelope)
    events = read_cloudevents(envelope, rules.envelope_mode) if index.needs_cloudevents else [None]
    for number, event in enumerate(events):
        view = MessageView(envelope, event, content_type)
        if len(events) > 1:
            lines.append(f"event {number}:")
        if event is not None:
            lines.append(f"read as CloudEvent ({event.mode} mode): " + json.dumps(event.attributes, default=str))
            if event.problem is not None:
                lines.append(f"  cannot read: {event.problem.message}")
        candidates = index.candidates(view)
        family = protocol_family(envelope.protocol)
        for definition in sorted(rules.definitions, key=lambda d: d.rank):
            name = f"{definition.groupid}/{definition.messageid} (specificity {definition.specificity})"
            if definition.family is not None and definition.family != family:
                lines.append(f"  - {name}: skipped, bound to protocol {definition.family}")
                continue
            if definition not in candidates:
                disc = definition.discriminator
                shown = f"{disc.path} = {disc.value!r}" if disc else "its discriminator"
                lines.append(f"  - {name}: not tried, the message does not match {shown}")
                continue
            violations = definition.violations(view)
            if not violations:
                lines.append(f"  + {name}: matches")
                continue
            lines.append(f"  x {name}: {len(violations)} violation(s)")
            for violation in violations:
                lines.append(f"      {violation.path} [{violation.rule.value}]: {violation.message} "
                             f"(expected {violation.expected!r}, got {violation.as_dict()['actual']!r})")
        if not candidates:
            lines.append("  no definition applies: the message is unknown on this endpoint")
    return "\n".join(lines)
