"""`xgate lint`: what each document holds, and every warning and error found loading and compiling it, and
every problem that would stop `xgate run` or a reload: gateway.yaml's sections, its routes, and each endpoint a
route connects to as its adapter reads it (the same `load_settings_file` and `resolve_routes` they call)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from gateway.commands.startup import Loaded, add_settings_option, load_registry
from gateway.compiler import Ruleset
from gateway.errors import Diagnostic, Severity
from gateway.exit_code import ExitCode
from gateway.loader import Snapshot
from gateway.routes.credentials import credential_warnings
from gateway.routes.resolve import resolve_routes, route_warnings


def cmd_lint(args: argparse.Namespace) -> ExitCode:
    loaded = load_registry(args.paths, args.settings, whole_settings=True)  # gateway.yaml read once, all of it
    report = lint_report(loaded.snapshot, loaded.ruleset, [*loaded.problems, *run_diagnostics(loaded)])
    print(render_json(report) if args.format == "json" else render_text(report))
    return ExitCode.FAILED if report["errors"] else ExitCode.OK


def add_command(commands: Any) -> None:
    lint = commands.add_parser("lint", help="load and compile documents, report what each holds")
    lint.add_argument("paths", nargs="+", metavar="PATH")
    lint.add_argument("--format", choices=("text", "json"), default="text")
    add_settings_option(lint)
    lint.set_defaults(handler=cmd_lint)


def run_diagnostics(loaded: Loaded) -> list[Diagnostic]:
    """What `run` (and a reload) refuses beyond loading and compiling: the routes and the endpoints they connect
    to."""
    routes, route_problems = resolve_routes(loaded.snapshot.registry, loaded.settings)
    return [*route_problems, *route_warnings(routes, loaded.snapshot.registry, loaded.settings)]


def all_diagnostics(snapshot: Snapshot, ruleset: Ruleset, more: list[Diagnostic] | None = None) -> list[Diagnostic]:
    found = [*snapshot.diagnostics, *ruleset.diagnostics, *credential_warnings(snapshot.registry), *(more or ())]
    return list(dict.fromkeys(found))  # one problem two checks find is listed once


def lint_report(snapshot: Snapshot, ruleset: Ruleset, more: list[Diagnostic] | None = None) -> dict[str, Any]:
    diagnostics = all_diagnostics(snapshot, ruleset, more)
    by_file: dict[str, list[Diagnostic]] = {}
    for diagnostic in diagnostics:
        by_file.setdefault(diagnostic.file, []).append(diagnostic)
    files: list[dict[str, Any]] = []
    for summary in snapshot.files:
        found = by_file.pop(summary.file, [])
        files.append({
            "file": summary.file, "generation": summary.generation,
            "endpoints": list(summary.endpoints), "messagegroups": list(summary.messagegroups),
            "messages": summary.messages, "schemagroups": list(summary.schemagroups), "schemas": summary.schemas,
            "errors": [d.as_dict() for d in found if d.severity is Severity.ERROR],
            "warnings": [d.as_dict() for d in found if d.severity is Severity.WARNING],
        })
    for file, found in by_file.items():  # files outside the load set (missing paths, referenced files)
        files.append({"file": file, "generation": None, "endpoints": [], "messagegroups": [], "messages": 0,
                      "schemagroups": [], "schemas": 0,
                      "errors": [d.as_dict() for d in found if d.severity is Severity.ERROR],
                      "warnings": [d.as_dict() for d in found if d.severity is Severity.WARNING]})
    errors = sum(len(f["errors"]) for f in files)
    warnings = sum(len(f["warnings"]) for f in files)
    return {"files": files, "errors": errors, "warnings": warnings,
            "compiled": {"endpoints": len(ruleset.endpoints), "definitions": ruleset.definition_count},
            "digest": snapshot.digest}


def render_text(report: dict[str, Any]) -> str:
    lines = []
    for entry in report["files"]:
        held = (f"{len(entry['endpoints'])} endpoints, {len(entry['messagegroups'])} message groups, "
                f"{entry['messages']} messages, {len(entry['schemagroups'])} schema groups, "
                f"{entry['schemas']} schemas")
        generation = f" [{entry['generation']}]" if entry["generation"] else ""
        lines.append(f"{entry['file']}{generation}: {held}")
        for kind in ("errors", "warnings"):
            for item in entry[kind]:
                diagnostic = Diagnostic(Severity(item["severity"]), item["file"], item["message"], item["pointer"],
                                        item["line"], item["column"], item["code"])
                lines.append(f"  {diagnostic}")
    compiled = report["compiled"]
    lines.append(f"{len(report['files'])} files, {compiled['endpoints']} endpoints and "
                 f"{compiled['definitions']} message definitions compiled, "
                 f"{report['errors']} errors, {report['warnings']} warnings")
    return "\n".join(lines)


def render_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2)
