"""`xgate replay`: publish recorded messages to one endpoint (re-mapped when they were recorded on another
protocol; gateway/runtime/replay.py sends them)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from typing import Any

from gateway.commands.startup import endpoint_to_connect
from gateway.errors import GatewayError
from gateway.exit_code import ExitCode
from gateway.recorded import RecordError, envelope_from_record
from gateway.runtime.replay import replay
from protocol_adapters import registry


def cmd_replay(args: argparse.Namespace) -> ExitCode:
    config = endpoint_to_connect(args.config, args.endpoint, "replay", "sink")
    if config is None:
        return ExitCode.USAGE
    source = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")
    envelopes = []
    skipped = 0
    with contextlib.ExitStack() as stack:
        if source is not sys.stdin:
            stack.callback(source.close)
        for number, line in enumerate(source, 1):
            if not line.strip():
                continue
            try:
                envelopes.append(envelope_from_record(json.loads(line), default_protocol=config.protocol))
            except (ValueError, RecordError) as exc:
                print(f"xgate replay: line {number} skipped: {exc}", file=sys.stderr)
                skipped += 1
    try:
        result = asyncio.run(replay(config, envelopes, registry.create_sink, inflight=args.inflight))
    except GatewayError as exc:
        print(f"xgate replay: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    for error in result.errors:
        print(f"xgate replay: {error}", file=sys.stderr)
    print(f"xgate replay: {result.sent} messages sent to {args.endpoint}"
          + (f", {result.refused} refused" if result.refused else "")
          + (f", {skipped} lines skipped" if skipped else ""), file=sys.stderr)
    return ExitCode.OK if not (skipped or result.refused) else ExitCode.FAILED


def add_command(commands: Any) -> None:
    command = commands.add_parser("replay", help="publish recorded messages to an endpoint")
    command.add_argument("--config", required=True, metavar="DIR")
    command.add_argument("--endpoint", required=True)
    command.add_argument("--inflight", type=int, default=500, help="unconfirmed sends at once")
    command.add_argument("input", nargs="?", default="-")
    command.set_defaults(handler=cmd_replay)
