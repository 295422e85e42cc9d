"""Command line: `xgate check | lint | explain | run | capture | replay | export | init | spark`."""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from gateway import __version__
from gateway.check import Summary, judge_lines, judge_record
from gateway.compiler import Ruleset, compile_registry
from gateway.errors import Diagnostic, Severity
from gateway.loader import Snapshot, load_snapshot

EXIT_OK, EXIT_NONCONFORMANT, EXIT_USAGE = 0, 1, 2


def _load(paths: Sequence[str], settings_file: str | None = None) -> tuple[Snapshot, Ruleset]:
    """Load as `xgate run` would: http(s) references are fetched as the `remote` settings allow, and each
    gateway.yaml source once (one that cannot be fetched is a warning, as at `run`'s startup)."""
    from gateway.loader.fetch import RemoteFetcher, fetcher_for
    from gateway.loader.sources import RegistrySources
    from gateway.schemaregistry import SchemaRegistrySettings, load_schema_registries
    from gateway.limits import DEFAULT_LIMITS
    from gateway.settings import SETTINGS_FILES, load_limits, load_remote_policy, load_sources

    if settings_file is None:
        beside = (Path(p) / name for p in paths if Path(p).is_dir() for name in SETTINGS_FILES)
        settings_file = next((str(candidate) for candidate in beside if candidate.is_file()), None)
    fetcher: RemoteFetcher | None = None
    problems: list[Diagnostic] = []
    registries: dict[str, SchemaRegistrySettings] = {}
    sources = RegistrySources()
    limits = DEFAULT_LIMITS
    if settings_file is not None:
        policy, problems = load_remote_policy(settings_file)
        fetcher = fetcher_for(policy)
        registries, registry_problems = load_schema_registries(settings_file)
        listed, source_problems = load_sources(settings_file)
        limits, limit_problems = load_limits(settings_file)
        sources.configure(listed)
        problems = [*problems, *registry_problems, *source_problems, *limit_problems, *sources.start(fetcher)]
    snapshot = load_snapshot(list(paths), fetcher=fetcher, schemaregistries=registries,
                             documents=sources.documents())
    if problems:
        snapshot = replace(snapshot, diagnostics=(*problems, *snapshot.diagnostics))
    return snapshot, compile_registry(snapshot.registry, snapshot.digest, limits)


def _report_diagnostics(snapshot: Snapshot, ruleset: Ruleset, stream: TextIO) -> int:
    errors = 0
    for diagnostic in list(snapshot.diagnostics) + list(ruleset.diagnostics):
        if diagnostic.code == "duplicate" and diagnostic.severity is Severity.WARNING:
            continue
        errors += diagnostic.severity is Severity.ERROR
        print(diagnostic, file=stream)
    return errors


def _nothing_compiled(ruleset: Ruleset) -> bool:
    return not any(rules.definitions for rules in ruleset.endpoints.values())


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


def unusable(command: str, snapshot: Snapshot, ruleset: Ruleset, *, strict: bool,
             endpoint: str | None) -> int | None:
    """Report load problems on stderr; the exit code when the ruleset cannot be used as asked, else None."""
    errors = _report_diagnostics(snapshot, ruleset, sys.stderr)
    if strict and errors:
        print(f"xgate {command}: {errors} load error(s) and --strict is set", file=sys.stderr)
        return EXIT_USAGE
    if _nothing_compiled(ruleset):
        print(f"xgate {command}: no endpoint with message definitions could be compiled", file=sys.stderr)
        return EXIT_USAGE
    if endpoint and endpoint not in ruleset.endpoints:
        print(f"xgate {command}: --endpoint {endpoint!r} is not in the registry "
              f"(known: {', '.join(sorted(ruleset.endpoints)) or 'none'})", file=sys.stderr)
        return EXIT_USAGE
    return None


def cmd_check(args: argparse.Namespace) -> int:
    snapshot, ruleset = _load(args.registry, args.settings)
    refused = unusable("check", snapshot, ruleset, strict=args.strict, endpoint=args.endpoint)
    if refused is not None:
        return refused
    try:
        # bytes that are not UTF-8 stay in the line as surrogates: that line gets a `decode` verdict, the rest go on
        source = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8", errors="surrogateescape")
        if source is sys.stdin and isinstance(source, io.TextIOWrapper):
            source.reconfigure(errors="surrogateescape")
    except OSError as exc:
        print(f"xgate check: cannot read {args.input}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    summary = Summary()
    out = sys.stdout
    progress = _Progress(sys.stderr) if sys.stderr.isatty() else None
    with source:
        for verdict in judge_lines(ruleset, source, args.endpoint):
            summary.add(verdict)
            if args.format == "json":
                out.write(json.dumps(verdict.as_dict(), default=str) + "\n")
            if progress is not None:
                progress.tick(summary)
    if progress is not None:
        progress.done()
    if args.format == "table":
        out.write(summary.render() + "\n")
    return EXIT_OK if summary.by_verdict.get("nonconformant", 0) == 0 else EXIT_NONCONFORMANT


def cmd_lint(args: argparse.Namespace) -> int:
    from gateway.lint import lint_report, render_json, render_text, route_diagnostics
    from gateway.settings import SETTINGS_FILES, Settings, load_settings

    snapshot, ruleset = _load(args.paths, args.settings)
    # the routes `xgate run` would start from these documents and the gateway.yaml beside them (or --settings)
    beside = [Path(args.settings).parent] if args.settings and Path(args.settings).name in SETTINGS_FILES else \
        [Path(p) for p in args.paths if Path(p).is_dir() and any((Path(p) / n).is_file() for n in SETTINGS_FILES)]
    settings = load_settings(beside[0])[0] if beside else Settings()
    report = lint_report(snapshot, ruleset, route_diagnostics(snapshot, settings))
    print(render_json(report) if args.format == "json" else render_text(report))
    return EXIT_NONCONFORMANT if report["errors"] else EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    from gateway.explain import explain
    from gateway.recorded import RecordError, envelope_from_record

    snapshot, ruleset = _load(args.registry, args.settings)
    _report_diagnostics(snapshot, ruleset, sys.stderr)
    try:
        record = json.loads(Path(args.message).read_text("utf-8") if args.message != "-" else sys.stdin.read())
        rules = ruleset.endpoints.get(record.get("endpoint", args.endpoint) or "") or ruleset.default_endpoint()
        envelope = envelope_from_record(record, args.endpoint, rules.protocol if rules else None)
    except (OSError, ValueError, AttributeError, RecordError) as exc:
        print(f"xgate explain: cannot read the message: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(explain(ruleset, envelope))
    verdict = judge_record(ruleset, record, args.endpoint)
    return EXIT_OK if verdict.conformant else EXIT_NONCONFORMANT


def _add_settings_option(command: argparse.ArgumentParser) -> None:
    command.add_argument("--settings", metavar="FILE",
                         help="gateway.yaml whose `remote` section allows fetching http(s) references "
                              "(default: a gateway.yaml in a given directory; without one nothing is fetched)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="xgate", description="Streaming validation gateway for xRegistry "
                                     "message definitions.")
    parser.add_argument("--version", action="version", version=f"xgate {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    check = commands.add_parser("check", help="judge recorded messages, one verdict per line")
    check.add_argument("--registry", action="append", required=True, metavar="PATH",
                       help="registry document or directory (repeatable)")
    check.add_argument("--endpoint", help="endpoint id for messages that name none")
    check.add_argument("--format", choices=("json", "table"), default="json")
    check.add_argument("--strict", action="store_true", help="exit 2 when any document has an error")
    check.add_argument("input", nargs="?", default="-", help="recorded messages (JSON lines); - is stdin")
    _add_settings_option(check)
    check.set_defaults(handler=cmd_check)

    lint = commands.add_parser("lint", help="load and compile documents, report what each holds")
    lint.add_argument("paths", nargs="+", metavar="PATH")
    lint.add_argument("--format", choices=("text", "json"), default="text")
    _add_settings_option(lint)
    lint.set_defaults(handler=cmd_lint)

    explain = commands.add_parser("explain", help="why one message matched or did not")
    explain.add_argument("--registry", action="append", required=True, metavar="PATH")
    explain.add_argument("--endpoint")
    explain.add_argument("message", help="one recorded message (JSON file, or - for stdin)")
    _add_settings_option(explain)
    explain.set_defaults(handler=cmd_explain)

    from gateway.export import add_command as add_export_command
    from gateway.runtime.commands import add_commands
    from gateway.scaffold import add_command as add_init_command
    from gateway.spark.commands import add_commands as add_spark_commands

    add_commands(commands)
    add_export_command(commands)
    add_init_command(commands)
    add_spark_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if exc.code in (0, None) else EXIT_USAGE
    result: int = args.handler(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
