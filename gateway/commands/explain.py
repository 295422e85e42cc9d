"""`xgate explain`: for one message, which definitions were tried and why each did or did not match."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gateway.check import judge_record
from gateway.cloudevents import protocol_content_type, read_cloudevents
from gateway.commands.startup import add_settings_option, load_registry, report
from gateway.compiler import Ruleset
from gateway.compiler.view import MessageView
from gateway.envelope import Envelope
from gateway.exit_code import ExitCode
from gateway.loader.names import protocol_family
from gateway.recorded import RecordError, envelope_from_record


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


def cmd_explain(args: argparse.Namespace) -> ExitCode:
    loaded = load_registry(args.registry, args.settings)
    report(loaded.diagnostics)
    ruleset = loaded.ruleset
    try:
        record = json.loads(Path(args.message).read_text("utf-8") if args.message != "-" else sys.stdin.read())
        rules = ruleset.endpoints.get(record.get("endpoint", args.endpoint) or "") or ruleset.default_endpoint()
        envelope = envelope_from_record(record, args.endpoint, rules.protocol if rules else None)
    except (OSError, ValueError, AttributeError, RecordError) as exc:
        print(f"xgate explain: cannot read the message: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    print(explain(ruleset, envelope))
    verdict = judge_record(ruleset, record, args.endpoint)
    return ExitCode.OK if verdict.conformant else ExitCode.NONCONFORMANT


def add_command(commands: Any) -> None:
    explain = commands.add_parser("explain", help="why one message matched or did not")
    explain.add_argument("--registry", action="append", required=True, metavar="PATH")
    explain.add_argument("--endpoint")
    explain.add_argument("message", help="one recorded message (JSON file, or - for stdin)")
    add_settings_option(explain)
    explain.set_defaults(handler=cmd_explain)
