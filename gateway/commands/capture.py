"""`xgate capture`: record live messages of one endpoint in the validation rule 7 form, reading beside the
gateway (an observer: never its consumer group, durable consumer or shared subscription) unless --destructive."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from typing import Any

from gateway.commands.startup import endpoint_to_connect
from gateway.errors import GatewayError, ObserverRefused
from gateway.exit_code import ExitCode
from gateway.recorded import record_from_envelope
from protocol_adapters import registry


def cmd_capture(args: argparse.Namespace) -> ExitCode:
    config = endpoint_to_connect(args.config, args.endpoint, "capture", "source")
    if config is None:
        return ExitCode.USAGE
    try:
        reader = registry.create_source(config) if args.destructive else registry.create_observer(config)
    except ObserverRefused as exc:
        print(f"xgate capture: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except GatewayError as exc:
        print(f"xgate capture: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    out = open(args.output, "w", encoding="utf-8") if args.output != "-" else sys.stdout

    async def main() -> int:
        count = 0
        async with reader as source:
            async def pump() -> None:
                nonlocal count
                async for envelope in source:
                    out.write(json.dumps(record_from_envelope(envelope)) + "\n")
                    out.flush()
                    await source.ack(envelope)
                    count += 1
                    if args.count and count >= args.count:
                        return
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(pump(), args.timeout or None)
        return count

    try:
        count = asyncio.run(main())
    except GatewayError as exc:  # e.g. a queue declared with other properties: one line, no traceback
        print(f"xgate capture: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    finally:
        if out is not sys.stdout:
            out.close()
    print(f"xgate capture: {count} messages from {args.endpoint}", file=sys.stderr)
    return ExitCode.OK


def add_command(commands: Any) -> None:
    capture = commands.add_parser("capture", help="record live messages of an endpoint as recorded JSON lines")
    capture.add_argument("--config", required=True, metavar="DIR")
    capture.add_argument("--endpoint", required=True)
    capture.add_argument("--count", type=int, default=0, help="stop after N messages (0: no limit)")
    capture.add_argument("--timeout", type=float, default=0, help="stop after SECONDS (0: no limit)")
    capture.add_argument("-o", "--output", default="-")
    capture.add_argument("--destructive", action="store_true",
                         help="read as the gateway's own consumer (an AMQP queue has no other way): the messages "
                              "captured are taken from the gateway")
    capture.set_defaults(handler=cmd_capture)
