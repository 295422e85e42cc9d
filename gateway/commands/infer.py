"""`xgate infer`: a draft registry document from recorded traffic (gateway/infer/ drafts it); what the draft
accepts of held-back traffic on stderr."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from gateway import jsontext
from gateway.exit_code import ExitCode
from gateway.infer import infer
from gateway.infer.draft import read_sample, refused
from gateway.infer.update import update

NOT_JSON = "lines that are not JSON"


def cmd_infer(args: argparse.Namespace) -> ExitCode:
    if not 0 <= args.holdout < 1:
        print(f"xgate infer: --holdout must be at least 0 and below 1, found {args.holdout}", file=sys.stderr)
        return ExitCode.USAGE
    records: list[tuple[int, object]] = []
    unreadable: list[tuple[int, str]] = []  # (line, its text)
    try:
        with (sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")) as source:
            for number, line in enumerate(source, 1):
                if line.strip():
                    try:
                        records.append((number, jsontext.loads(line)))
                    except ValueError:
                        unreadable.append((number, line.rstrip("\r\n")))
    except OSError as exc:
        print(f"xgate infer: cannot read {args.input}: {exc.strerror}", file=sys.stderr)
        return ExitCode.USAGE
    held = int(len(records) * args.holdout)
    training, held_back = records[:len(records) - held], records[len(records) - held:]
    if not training:
        print("xgate infer: no recorded messages to learn from", file=sys.stderr)
        return ExitCode.USAGE
    if args.update is not None:
        try:
            reviewed = jsontext.loads(Path(args.update).read_bytes())
        except (OSError, ValueError) as exc:
            print(f"xgate infer: cannot read --update {args.update}: {exc}", file=sys.stderr)
            return ExitCode.USAGE
        if not isinstance(reviewed, dict) or not isinstance(reviewed.get("messagegroups", {}), dict):
            print(f"xgate infer: --update {args.update} is not an xRegistry 1.0 document", file=sys.stderr)
            return ExitCode.USAGE
        widened = update(reviewed, training)
        document, left_out = widened.document, widened.left_out
        _write(args.output, document)
        print(f"xgate infer --update: {len(widened.widened)} place(s) widened, {len(widened.added)} definition(s) "
              "added; review them:", file=sys.stderr)
        for line in [*(f"widened {w}" for w in widened.widened), *(f"added {a}" for a in widened.added)]:
            print(f"  {line}", file=sys.stderr)
    else:
        result = infer(training)
        document, left_out = result.document, result.left_out
        _write(args.output, document)
        used = sum(len(group.samples) for group in result.groups)
        print(f"xgate infer: {len(result.groups)} definitions from {used} of {len(training)} messages",
              file=sys.stderr)
    _report_left_out(args, [*left_out, *((number, NOT_JSON) for number, _ in unreadable)], dict(records),
                     dict(unreadable))
    if held_back:  # judged with the document as written; a held-back line that is no message counts as refused
        samples = [s for s in (read_sample(n, r) for n, r in held_back) if not isinstance(s, str)]
        accepted = len(samples) - len(refused(document, samples))
        print(f"  held back {len(held_back)}: the draft accepts {accepted} ({100 * accepted / len(held_back):.1f}%)",
              file=sys.stderr)
    return ExitCode.OK


def _write(output: str, document: dict[str, Any]) -> None:
    text = json.dumps(document, indent=2) + "\n"
    if output == "-":
        sys.stdout.write(text)
    else:
        Path(output).write_text(text, "utf-8")


def _report_left_out(args: argparse.Namespace, left_out: list[tuple[int, str]], records: dict[int, object],
                     unreadable: dict[int, str]) -> None:
    for reason, count in Counter(reason for _, reason in left_out).most_common():
        lines = [str(n) for n, r in sorted(left_out) if r == reason]
        shown = f"lines {', '.join(lines)}" if args.left_out is None else f"in {args.left_out}"
        print(f"  left out {count}: {reason} ({shown})", file=sys.stderr)
    if args.left_out is not None:
        _write_left_out(Path(args.left_out), left_out, records, unreadable)


def _write_left_out(path: Path, left_out: list[tuple[int, str]], records: dict[int, object],
                    unreadable: dict[int, str]) -> None:
    """Every message the draft was not made from, one JSON line each: its line, why, and the message itself
    (or the line's text when it is not JSON), in line order."""
    with path.open("w", encoding="utf-8") as out:
        for number, reason in sorted(left_out):
            found: dict[str, Any] = {"line": number, "reason": reason}
            if number in records:
                found["message"] = records[number]
            else:
                found["text"] = unreadable.get(number, "")
            out.write(json.dumps(found) + "\n")


def add_command(commands: Any) -> None:
    command = commands.add_parser("infer", help="a draft registry document (definitions, schemas) from recorded "
                                                "traffic")
    command.add_argument("input", nargs="?", default="-", help="recorded messages, one JSON object per line")
    command.add_argument("-o", "--output", default="-", help="where the draft goes (default: standard output)")
    command.add_argument("--update", metavar="EXISTING",
                         help="widen the reviewed 1.0 document EXISTING to accept the traffic instead of drafting "
                              "anew: only where it refuses a message, each loosening listed; its edits are kept")
    command.add_argument("--left-out", metavar="FILE",
                         help="write every message the draft was not made from (line, reason, message) to FILE, "
                              "one JSON line each; without it, stderr lists every left-out line number")
    command.add_argument("--holdout", type=float, default=0.0, metavar="FRACTION",
                         help="keep the last FRACTION of the messages out of the draft and say how many it accepts")
    command.set_defaults(handler=cmd_infer)
