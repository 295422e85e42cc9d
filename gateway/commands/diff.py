"""`xgate diff`: what a new contract would change, from the documents and on the traffic you already have.

The two registries' definitions are compared first (gateway/compat): every change that decides a verdict, with
whom it breaks (producers, consumers, both, nobody). `--compatibility` (default `backward`, Confluent Schema
Registry's modes) says which of those refuse the change: exit 1 when one does. With no traffic that is all.

With recorded messages (a file, `-` for standard input, or `--capture`), the
same recorded messages are judged under the registry in force (OLD) and a
candidate (NEW), with the same compiler the gateway runs. Every message
whose verdict changes is counted in one of three kinds of change, grouped
by the definition and rule that explain it:

- tightened: conformant under OLD, not under NEW (the new violations say why);
- loosened: not conformant under OLD, conformant under NEW;
- renamed: conformant under both, but as another message definition.

A change of the violations of a message that fails under both is not a
change of verdict and is not reported. Exit 1 also when a message is
tightened, so a CI job can refuse a contract change that would dead-letter
traffic; a traffic file holding no message is exit 2 (nothing was measured).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from gateway.check import judge_line
from gateway.commands.capture import cmd_capture
from gateway.commands.startup import add_settings_option, load_registry, settings_file_for, unusable
from gateway.compat import Change as ContractChange
from gateway.compat import Mode, compare_registries
from gateway.compat.evidence import Evidence
from gateway.exit_code import ExitCode
from gateway.loader.discover import SHADOW_DIR
from gateway.loader.overlay import overlaid
from gateway.settings import load_settings, shadow_folder
from gateway.verdict import Verdict

EXAMPLES_KEPT = 3


class Change(Enum):
    TIGHTENED = "tightened"
    LOOSENED = "loosened"
    RENAMED = "renamed"


def _name(verdict: Verdict) -> str:
    if verdict.messageid is None:
        return "(no definition)"
    return f"{verdict.messagegroupid}/{verdict.messageid}"


def change_of(old: Verdict, new: Verdict) -> Change | None:
    if old.conformant and not new.conformant:
        return Change.TIGHTENED
    if new.conformant and not old.conformant:
        return Change.LOOSENED
    if old.conformant and (old.messagegroupid, old.messageid) != (new.messagegroupid, new.messageid):
        return Change.RENAMED
    return None


def _group_key(change: Change, old: Verdict, new: Verdict) -> tuple[str, str, str]:
    """(change, definition, rule): the definition the change is about, and the rule that explains it."""
    if change is Change.TIGHTENED:
        rule = ",".join(sorted({v.rule.value for v in new.violations})) or "-"
        return change.value, _name(new) if new.messageid else _name(old), rule
    if change is Change.LOOSENED:
        rule = ",".join(sorted({v.rule.value for v in old.violations})) or "-"
        return change.value, _name(new), f"was {rule}"
    return change.value, f"{_name(old)} -> {_name(new)}", "-"


@dataclass
class Group:
    count: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class DiffReport:
    total: int = 0
    changes: Counter[str] = field(default_factory=Counter)
    groups: dict[tuple[str, str, str], Group] = field(default_factory=dict)

    def add(self, number: int, old: Verdict, new: Verdict) -> None:
        self.total += 1
        change = change_of(old, new)
        if change is None:
            return
        self.changes[change.value] += 1
        group = self.groups.setdefault(_group_key(change, old, new), Group())
        group.count += 1
        if len(group.examples) < EXAMPLES_KEPT:
            group.examples.append({"line": number, "old": old.as_dict(), "new": new.as_dict()})

    @property
    def tightened(self) -> int:
        return self.changes[Change.TIGHTENED.value]

    def to_json(self) -> dict[str, Any]:
        return {"messages": self.total,
                "changed": {change.value: self.changes[change.value] for change in Change},
                "groups": [{"change": change, "definition": definition, "rule": rule, "count": group.count,
                            "examples": group.examples}
                           for (change, definition, rule), group in self._ordered()]}

    def render(self) -> str:
        lines = [f"messages: {self.total}"]
        lines += [f"  {change.value:<10} {self.changes[change.value]:>8}" for change in Change]
        if self.groups:
            width = max(len(definition) for (_, definition, _), _ in self._ordered())
            lines.append("by change, definition and rule:")
            for (change, definition, rule), group in self._ordered():
                lines.append(f"  {change:<10} {definition:<{width}} {rule:<24} {group.count:>8}  "
                             f"(lines {', '.join(str(e['line']) for e in group.examples)})")
        return "\n".join(lines)

    def _ordered(self) -> list[tuple[tuple[str, str, str], Group]]:
        return sorted(self.groups.items(), key=lambda item: ([c.value for c in Change].index(item[0][0]),
                                                             -item[1].count, item[0]))


def compare(pairs: Iterable[tuple[Verdict, Verdict]]) -> DiffReport:
    """The report for (old verdict, new verdict) pairs of the same messages, numbered from 1 in order."""
    report = DiffReport()
    for number, (old, new) in enumerate(pairs, 1):
        report.add(number, old, new)
    return report


def cmd_diff(args: argparse.Namespace) -> ExitCode:
    """Judge the same recorded messages under two registries and report every change of verdict."""
    against = _against(args.against, args.settings, args.registry)
    if against is None:
        print(f"xgate diff: {args.against[0]} holds no document: there is no candidate to compare", file=sys.stderr)
        return ExitCode.USAGE
    rulesets, registries = [], []
    for option, (paths, settings) in (("--registry", (args.registry, args.settings)), ("--against", against)):
        loaded = load_registry(paths, settings)
        refused = unusable(f"diff ({option})", loaded, strict=args.strict, endpoint=args.endpoint)
        if refused is not None:
            return refused
        rulesets.append(loaded.ruleset)
        registries.append(loaded.snapshot.registry)
    mode = Mode(args.compatibility)
    contract = compare_registries(*registries, transitive=mode.transitive)
    refused_by_mode = [change for change in contract if mode.refuses(change.breaks)]
    if args.input is None and not args.capture:
        _print_contract(contract, mode, args.format)
        return ExitCode.NONCONFORMANT if refused_by_mode else ExitCode.OK
    old, new = rulesets
    captured = _capture_for_diff(args) if args.capture else None
    if args.capture and captured is None:
        return ExitCode.USAGE
    path = str(captured) if captured is not None else args.input
    try:
        source = sys.stdin if path == "-" else open(path, encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        print(f"xgate diff: cannot read {path}: {exc.strerror}", file=sys.stderr)
        return ExitCode.USAGE
    evidence = Evidence(contract)

    def judged() -> Iterable[tuple[Verdict, Verdict]]:
        for number, line in enumerate((line for line in source if line.strip()), 1):
            pair = judge_line(old, line, args.endpoint), judge_line(new, line, args.endpoint)
            evidence.add(number, *pair)
            yield pair

    try:
        with source:
            report = compare(judged())
    finally:
        if captured is not None:
            captured.unlink(missing_ok=True)
    if report.total == 0:
        print(f"xgate diff: {path if path != '-' else 'standard input'} holds no recorded message: nothing was "
              "measured (leave the input out to compare the documents alone)", file=sys.stderr)
        return ExitCode.USAGE
    if args.format == "json":
        print(json.dumps({**report.to_json(), **_contract_json(contract, mode, evidence)}, default=str))
    else:
        _print_contract(contract, mode, "table", evidence)
        print(report.render())
    return ExitCode.NONCONFORMANT if report.tightened or refused_by_mode else ExitCode.OK


def _contract_json(contract: list[ContractChange], mode: Mode, evidence: Evidence | None = None) -> dict[str, Any]:
    changes: list[dict[str, Any]] = [change.as_dict() for change in contract]
    if evidence is not None:
        for listed, measured in zip(changes, evidence.measured, strict=True):
            listed["measured"] = measured.as_dict()
    found: dict[str, Any] = {"compatibility": mode.value, "contract_changes": changes,
                             "refused_by_mode": sum(mode.refuses(change.breaks) for change in contract)}
    if evidence is not None:
        found["unexplained_by_a_document_change"] = evidence.unexplained
    return found


def _print_contract(contract: list[ContractChange], mode: Mode, form: str, evidence: Evidence | None = None) -> None:
    if form == "json":
        print(json.dumps(_contract_json(contract, mode, evidence)))
        return
    refused = [change for change in contract if mode.refuses(change.breaks)]
    print(f"contract: {len(contract)} change(s), {len(refused)} refused by --compatibility {mode.value}")
    for index, change in enumerate(contract):
        mark = "x" if mode.refuses(change.breaks) else " "
        print(f" {mark} {change.definition}  {change.path or '(the definition)'}  {change.kind}  "
              f"breaks {change.breaks.value}: {change.reason}")
        if evidence is not None:
            measured = evidence.measured[index]
            lines = f", e.g. line {', '.join(map(str, measured.lines))}" if measured.lines else ""
            print(f"     traffic: {measured.messages} message(s) changed verdict by it "
                  f"({measured.alone} by it alone){lines}")


def _against(paths: list[str], settings: str | None, active: list[str]) -> tuple[list[str], str | None] | None:
    """The candidate's documents and gateway.yaml: as given, or for a config directory's shadow folder (`DIR/shadow`,
    or the folder the `--registry` directory's gateway.yaml names as `runtime.shadow_dir`) DIR's documents with
    the folder laid over them, as the gateway judges its shadow candidate; None for a shadow folder holding no
    document."""
    folder = Path(paths[0])
    if len(paths) != 1 or not folder.is_dir():
        return paths, settings
    if folder.name == SHADOW_DIR:
        config_dir = folder.parent
    elif len(active) == 1 and Path(active[0]).is_dir() and _names_as_shadow(Path(active[0]), folder):
        config_dir = Path(active[0])
    else:
        return paths, settings
    documents = overlaid(config_dir, folder)
    if documents is None:
        return None
    return [str(path) for path in documents], settings_file_for([str(config_dir)], settings)


def _names_as_shadow(config_dir: Path, folder: Path) -> bool:
    """Whether the config directory's gateway.yaml names `folder` as its shadow candidate's."""
    named = load_settings(config_dir)[0].runtime.shadow_dir
    return named is not None and shadow_folder(config_dir, named).resolve() == folder.resolve()


def _capture_for_diff(args: argparse.Namespace) -> Path | None:
    """`diff --capture ENDPOINT --count N`: live messages of ENDPOINT, read beside the gateway as `xgate capture`
    reads them (the first --registry is the config directory that names the endpoint), into a temporary file."""
    folder = Path(args.registry[0])
    if not folder.is_dir():
        print(f"xgate diff: --capture reads ENDPOINT as configured in a config directory; {folder} is not one",
              file=sys.stderr)
        return None
    output = Path(tempfile.mkstemp(prefix="xgate-diff-", suffix=".jsonl")[1])
    capture = argparse.Namespace(config=str(folder), endpoint=args.capture, count=args.count, timeout=args.timeout,
                                 output=str(output), destructive=False)
    if cmd_capture(capture) != ExitCode.OK:
        output.unlink(missing_ok=True)
        return None
    return output


def add_command(commands: Any) -> None:
    diff = commands.add_parser("diff", help="what a new registry would change: the verdicts of the same traffic "
                                            "under both (exit 1 when a message would newly fail)")
    diff.add_argument("--registry", action="append", required=True, metavar="PATH",
                      help="the registry in force: document or directory (repeatable)")
    diff.add_argument("--against", action="append", required=True, metavar="PATH",
                      help="the candidate registry: document or directory (repeatable); DIR/shadow: DIR's documents "
                           "with its shadow folder laid over them, as the gateway judges its shadow candidate")
    diff.add_argument("--endpoint", help="endpoint id for records that do not name one")
    diff.add_argument("--format", choices=("table", "json"), default="table")
    diff.add_argument("--strict", action="store_true", help="any load error in either registry is exit 2")
    diff.add_argument("input", nargs="?", default=None,
                      help="recorded messages, one JSON object per line (`-`: standard input); without it (and "
                           "without --capture) the documents alone are compared")
    diff.add_argument("--compatibility", choices=[mode.value for mode in Mode], default=Mode.BACKWARD.value,
                      help="which contract changes are refused (exit 1): backward (the default: changes that "
                           "refuse what producers send today), forward (changes that admit what consumers did not "
                           "expect), full (both), none; each -transitive form also compares every earlier version "
                           "of a payload schema the registries hold")
    diff.add_argument("--capture", metavar="ENDPOINT",
                      help="judge live messages of ENDPOINT instead (read beside the gateway, as `xgate capture`)")
    diff.add_argument("--count", type=int, default=1000, help="with --capture: stop after N messages")
    diff.add_argument("--timeout", type=float, default=60.0, help="with --capture: stop after SECONDS")
    add_settings_option(diff)
    diff.set_defaults(handler=cmd_diff)
