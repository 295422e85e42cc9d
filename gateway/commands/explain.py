"""`xgate explain`: for one message, which definitions were tried and why each did or did not match."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gateway.check import judge_record
from gateway.commands.startup import add_settings_option, load_registry, report
from gateway.exit_code import ExitCode
from gateway.explanation import explain
from gateway.recorded import RecordError, envelope_from_record


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
