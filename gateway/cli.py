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
from gateway.check import Summary, check_stream, judge_line, judge_record
from gateway.compiler import Ruleset, compile_registry
from gateway.errors import Diagnostic
from gateway.loader import Snapshot, load_snapshot
from gateway.usable import EXIT_USAGE, report_diagnostics, unusable

EXIT_OK, EXIT_NONCONFORMANT = 0, 1


def _settings_file(paths: Sequence[str], given: str | None) -> str | None:
    """The gateway.yaml given, or the first one in a given directory."""
    from gateway.settings import SETTINGS_FILES

    if given is not None:
        return given
    beside = (Path(p) / name for p in paths if Path(p).is_dir() for name in SETTINGS_FILES)
    return next((str(candidate) for candidate in beside if candidate.is_file()), None)


def _load(paths: Sequence[str], settings_file: str | None = None) -> tuple[Snapshot, Ruleset]:
    """Load as `xgate run` would: http(s) references are fetched as the `remote` settings allow, and each
    gateway.yaml source once (one that cannot be fetched is a warning, as at `run`'s startup)."""
    from gateway.limits import DEFAULT_LIMITS
    from gateway.loader.fetch import RemoteFetcher, fetcher_for
    from gateway.loader.sources import RegistrySources
    from gateway.schemaregistry import SchemaRegistrySettings, load_schema_registries
    from gateway.settings import load_limits, load_remote_policy, load_sources

    settings_file = _settings_file(paths, settings_file)
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
        out.flush()
        sink = getattr(out, "buffer", None) or _TextSink(out)
        check_stream(ruleset, source, sink if args.format == "json" else None, summary, args.endpoint,
                     progress.tick if progress is not None else None)
        sink.flush()
    if progress is not None:
        progress.done()
    if args.format == "table":
        out.write(summary.render() + "\n")
    return EXIT_OK if summary.by_verdict.get("nonconformant", 0) == 0 else EXIT_NONCONFORMANT


def cmd_lint(args: argparse.Namespace) -> int:
    from gateway.lint import lint_report, render_json, render_text, run_diagnostics

    snapshot, ruleset = _load(args.paths, args.settings)
    # what `run` and a reload would refuse besides: every section of gateway.yaml, routes, each routed
    # endpoint as its adapter reads it
    report = lint_report(snapshot, ruleset, run_diagnostics(snapshot, _settings_file(args.paths, args.settings)))
    print(render_json(report) if args.format == "json" else render_text(report))
    return EXIT_NONCONFORMANT if report["errors"] else EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    from gateway.explain import explain
    from gateway.recorded import RecordError, envelope_from_record

    snapshot, ruleset = _load(args.registry, args.settings)
    report_diagnostics(snapshot, ruleset, sys.stderr)
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


def cmd_diff(args: argparse.Namespace) -> int:
    """Judge the same recorded messages under two registries and report every change of verdict."""
    from gateway.diff import compare

    rulesets = []
    for option, paths in (("--registry", args.registry), ("--against", args.against)):
        snapshot, ruleset = _load(paths, args.settings)
        refused = unusable(f"diff ({option})", snapshot, ruleset, strict=args.strict, endpoint=args.endpoint)
        if refused is not None:
            return refused
        rulesets.append(ruleset)
    old, new = rulesets
    captured = _capture_for_diff(args) if args.capture else None
    if args.capture and captured is None:
        return EXIT_USAGE
    path = str(captured) if captured is not None else args.input
    try:
        source = sys.stdin if path == "-" else open(path, encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        print(f"xgate diff: cannot read {path}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    try:
        with source:
            report = compare((judge_line(old, line, args.endpoint), judge_line(new, line, args.endpoint))
                             for line in source if line.strip())
    finally:
        if captured is not None:
            captured.unlink(missing_ok=True)
    if args.format == "json":
        print(json.dumps(report.to_json(), default=str))
    else:
        print(report.render())
    return EXIT_NONCONFORMANT if report.tightened else EXIT_OK


def _capture_for_diff(args: argparse.Namespace) -> Path | None:
    """`diff --capture ENDPOINT --count N`: live messages of ENDPOINT, read beside the gateway as `xgate capture`
    reads them (the first --registry is the config directory that names the endpoint), into a temporary file."""
    import tempfile

    from gateway.runtime.commands import cmd_capture

    folder = Path(args.registry[0])
    if not folder.is_dir():
        print(f"xgate diff: --capture reads ENDPOINT as configured in a config directory; {folder} is not one",
              file=sys.stderr)
        return None
    output = Path(tempfile.mkstemp(prefix="xgate-diff-", suffix=".jsonl")[1])
    capture = argparse.Namespace(config=str(folder), endpoint=args.capture, count=args.count, timeout=args.timeout,
                                 output=str(output), destructive=False)
    if cmd_capture(capture) != EXIT_OK:
        output.unlink(missing_ok=True)
        return None
    return output


def cmd_infer(args: argparse.Namespace) -> int:
    """A draft registry document from recorded traffic; what it accepts of held-back traffic on stderr."""
    from collections import Counter

    from gateway import jsontext
    from gateway.infer import infer

    if not 0 <= args.holdout < 1:
        print(f"xgate infer: --holdout must be at least 0 and below 1, found {args.holdout}", file=sys.stderr)
        return EXIT_USAGE
    records: list[tuple[int, object]] = []
    unreadable = 0
    try:
        with (sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")) as source:
            for number, line in enumerate(source, 1):
                if line.strip():
                    try:
                        records.append((number, jsontext.loads(line)))
                    except ValueError:
                        unreadable += 1
    except OSError as exc:
        print(f"xgate infer: cannot read {args.input}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    held = int(len(records) * args.holdout)
    training, held_back = records[:len(records) - held], records[len(records) - held:]
    if not training:
        print("xgate infer: no recorded messages to learn from", file=sys.stderr)
        return EXIT_USAGE
    result = infer(training)
    text = json.dumps(result.document, indent=2) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text, "utf-8")
    used = sum(len(group.samples) for group in result.groups)
    print(f"xgate infer: {len(result.groups)} definitions from {used} of {len(training)} messages", file=sys.stderr)
    for reason, count in Counter(reason for _, reason in result.left_out).most_common():
        lines = [str(n) for n, r in result.left_out if r == reason][:5]
        print(f"  left out {count}: {reason} (lines {', '.join(lines)})", file=sys.stderr)
    if unreadable:
        print(f"  left out {unreadable}: lines that are not JSON", file=sys.stderr)
    if held_back:  # judged with the draft as written; a held-back line that is no message counts as refused
        from gateway.infer.draft import read_sample, refused

        samples = [s for s in (read_sample(n, r) for n, r in held_back) if not isinstance(s, str)]
        accepted = len(samples) - len(refused(result.document, samples))
        print(f"  held back {len(held_back)}: the draft accepts {accepted} ({100 * accepted / len(held_back):.1f}%)",
              file=sys.stderr)
    return EXIT_OK


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

    diff = commands.add_parser("diff", help="what a new registry would change: the verdicts of the same traffic "
                                            "under both (exit 1 when a message would newly fail)")
    diff.add_argument("--registry", action="append", required=True, metavar="PATH",
                      help="the registry in force: document or directory (repeatable)")
    diff.add_argument("--against", action="append", required=True, metavar="PATH",
                      help="the candidate registry: document or directory (repeatable)")
    diff.add_argument("--endpoint", help="endpoint id for records that do not name one")
    diff.add_argument("--format", choices=("table", "json"), default="table")
    diff.add_argument("--strict", action="store_true", help="any load error in either registry is exit 2")
    diff.add_argument("input", nargs="?", default="-", help="recorded messages, one JSON object per line")
    diff.add_argument("--capture", metavar="ENDPOINT",
                      help="judge live messages of ENDPOINT instead (read beside the gateway, as `xgate capture`)")
    diff.add_argument("--count", type=int, default=1000, help="with --capture: stop after N messages")
    diff.add_argument("--timeout", type=float, default=60.0, help="with --capture: stop after SECONDS")
    _add_settings_option(diff)
    diff.set_defaults(handler=cmd_diff)

    infer = commands.add_parser("infer", help="a draft registry document (definitions, schemas) from recorded "
                                              "traffic")
    infer.add_argument("input", nargs="?", default="-", help="recorded messages, one JSON object per line")
    infer.add_argument("-o", "--output", default="-", help="where the draft goes (default: standard output)")
    infer.add_argument("--holdout", type=float, default=0.0, metavar="FRACTION",
                       help="keep the last FRACTION of the messages out of the draft and say how many it accepts")
    infer.set_defaults(handler=cmd_infer)

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
