"""The `xgate` entry point: one parser over the commands of gateway/commands/, each registered by its module."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from gateway import __version__
from gateway.runtime import early_stop

early_stop.catch_for(sys.argv)  # first: a SIGTERM while `run` or `proxy` starts is theirs to answer

from gateway.commands import capture, check, diff, explain, export, infer, lint, proxy, replay, run, scaffold, spark
from gateway.exit_code import ExitCode

# in the order `xgate --help` lists them
COMMANDS = (check, lint, diff, infer, explain, run, proxy, capture, replay, export, scaffold, spark)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="xgate", description="Streaming validation gateway for xRegistry "
                                     "message definitions.")
    parser.add_argument("--version", action="version", version=f"xgate {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help and --version exit 0; a usage error is ours to number
        return int(exc.code or 0) if exc.code in (0, None) else int(ExitCode.USAGE)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
