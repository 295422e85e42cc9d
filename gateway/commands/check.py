"""`xgate check`: judge recorded messages, one verdict line each (validation rule 7).

The arguments, the start-up and the exit code; the judging loop is gateway/check.py's `check_stream`.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from typing import Any, TextIO

from gateway.check import Summary, check_stream
from gateway.commands.startup import add_settings_option, load_registry, unusable
from gateway.exit_code import ExitCode


class _TextSink:
    """Verdict lines (bytes) onto a text stream without a binary buffer (a test's StringIO)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, data: bytes) -> None:
        self.stream.write(data.decode("utf-8", "surrogateescape"))

    def flush(self) -> None:
        self.stream.flush()


class _Progress:
    """A one-line running count on a terminal's stderr, refreshed at most twice a second."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.started = self.shown = time.monotonic()

    def tick(self, summary: Summary) -> None:
        now = time.monotonic()
        if now - self.shown >= 0.5:
            self.shown = now
            rate = summary.total / max(now - self.started, 1e-9)
            bad = summary.by_verdict.get("nonconformant", 0)
            self.stream.write(f"\r{summary.total} messages, {bad} nonconformant, {rate:,.0f}/s ")
            self.stream.flush()

    def done(self) -> None:
        if self.shown != self.started:
            self.stream.write("\n")


def cmd_check(args: argparse.Namespace) -> ExitCode:
    loaded = load_registry(args.registry, args.settings)
    refused = unusable("check", loaded, strict=args.strict, endpoint=args.endpoint)
    if refused is not None:
        return refused
    try:
        # bytes that are not UTF-8 stay in the line as surrogates: that line gets a `decode` verdict, the rest go on
        source = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8", errors="surrogateescape")
        if source is sys.stdin and isinstance(source, io.TextIOWrapper):
            source.reconfigure(errors="surrogateescape")
    except OSError as exc:
        print(f"xgate check: cannot read {args.input}: {exc.strerror}", file=sys.stderr)
        return ExitCode.USAGE
    summary = Summary()
    out = sys.stdout
    progress = _Progress(sys.stderr) if sys.stderr.isatty() else None
    with source:
        out.flush()
        sink = getattr(out, "buffer", None) or _TextSink(out)
        check_stream(loaded.ruleset, source, sink if args.format == "json" else None, summary, args.endpoint,
                     progress.tick if progress is not None else None)
        sink.flush()
    if progress is not None:
        progress.done()
    if args.format == "table":
        out.write(summary.render() + "\n")
    return ExitCode.OK if summary.by_verdict.get("nonconformant", 0) == 0 else ExitCode.NONCONFORMANT


def add_command(commands: Any) -> None:
    check = commands.add_parser("check", help="judge recorded messages, one verdict per line")
    check.add_argument("--registry", action="append", required=True, metavar="PATH",
                       help="registry document or directory (repeatable)")
    check.add_argument("--endpoint", help="endpoint id for messages that name none")
    check.add_argument("--format", choices=("json", "table"), default="json")
    check.add_argument("--strict", action="store_true", help="exit 2 when any document has an error")
    check.add_argument("input", nargs="?", default="-", help="recorded messages (JSON lines); - is stdin")
    add_settings_option(check)
    check.set_defaults(handler=cmd_check)
