"""Regenerate tests/conformance/corpus_expectations.json from what the loader reports today.

    .venv/bin/python tests/conformance/pin_corpus.py            # check against INVENTORY.md, write, show the diff
    .venv/bin/python tests/conformance/pin_corpus.py --check    # only show what would change; exit 1 if anything

Not a blind re-pin: every file's outcome is compared with the shared INVENTORY.md (its "INVALID JSON"
flag and its "ref check" column). A file INVENTORY marks ok/tsel/frag that now has errors, a file it
marks dangling that loads clean, or an invalid-JSON file without a parse error with line and column, is
a disagreement. Each disagreement must be explained in JUDGEMENTS below (decided by a person after
reading the document); an unexplained one stops the script before anything is written (--force to
write anyway). The judgement text is stored beside the pin and printed when the test fails.

Independently of the loader, corpus_by_hand.py holds what a person read in a sample of the documents
(definition counts, error locations); a pin that disagrees with it is never written, --force or not.
Every run prints, file by file, what a re-pin would change (definitions, errors added and removed,
warning counts, generation), then the raw diff, for review before the result is committed.
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.conformance.corpus_by_hand import by_hand_disagreements
from tests.conformance.corpus_outcomes import EXPECTATIONS, corpus_documents, current_pins
from tests.conftest import SHARED_CONFORMANCE

# Reviewed disagreements with INVENTORY.md (patterns are fnmatch globs over corpus-relative paths).
JUDGEMENTS: dict[str, str] = {
    "*/message-definitions/minimal-proto.*": (
        "INVENTORY checks references only (tsel=3, all resolve). The inline .proto texts are invalid: "
        "`message x1 { string a = 1; } }` has an unmatched `}`, so protoc rejects all three schemas "
        "(schema-compile). The grp2 selectors are also crossed (ev1 -> s2:q1 but s2 declares q2). Loader right."),
    "codegen/samples/split-files/index.json": (
        "INVENTORY: ok (the xid prefix exists). Alone, version 1 of TurnedOnEventData only holds a `schemaurl` "
        "to its own schema (split-file convention: the content lives in schemagroups/.../index.json), so there "
        "is no content: circular-ref + message-left-out. Loaded as the split-files directory it is clean "
        "(test_split_files_directory_loads_clean)."),
    "codegen/samples/split-files/schemagroups/*$meta/index.json": (
        "INVENTORY: dangling=1 (self-referential schemaurl). No message uses this schema, and the loader follows "
        "schema links only from messages, so there is nothing to report; the directory loads clean."),
    "*/message-definitions/Microsoft.Storage.xreg.json": (
        "1.0 shape: INVENTORY counts `self` attributes (`#/messagegroups/G/M` without /messages/, "
        "`#/schemagroups/G/S` without /schemas/) as dangling. `self` is a server-generated, informational "
        "attribute that xgate never follows; every dataschemauri resolves (double fragment into a schema whose "
        "versions are remote URLs: remote-schema warnings). Loader right."),
}
# Context shown with a pin even where the loader and INVENTORY agree.
NOTES: dict[str, str] = {
    "*/message-definitions/Microsoft.Storage.cereg": (
        "schemaurl names `Microsoft.Storage.*EventData`, the keys are `microsoft.Storage.*EventData`; ids are "
        "case-sensitive for look-up (core spec), so 5 dangling-ref. INVENTORY's 42 also counts `self` values."),
    "*-metadata-schemaurl/samples/message-definitions/Microsoft.Storage.xreg.json": (
        "schemaurl names `Microsoft.Storage.*EventData`, the keys are `microsoft.Storage.*EventData` (ids are "
        "case-sensitive for look-up): 5 dangling-ref. INVENTORY's 42 also counts `self` values."),
    "*/mqtt-sparkplugB.*": (
        "dataschemauri name group `Sparkplug` (the document has `Eclipse.Sparkplug`); will-message to the "
        "missing group `Eclipse.SparkplugB.HostApplication` is dangling; `#/messagegroups/…/definitions/NDEATH` "
        "resolves (old `definitions` spelling tolerated), so one fewer than INVENTORY's count."),
    "*/protocols/kafka-*": "missing `/` in `#/schemagroupsContoso.Sensors.Temperature/...` (upstream typo)",
    "*/protocols/nats-*": "missing `/` in `#/schemagroupsContoso.Sensors.Temperature/...` (upstream typo)",
    "*/protocols/mqtt-producer-endpoint.*": "endpoint refers to the missing group `mygroup`",
    "*/contoso-erp.*": "endpoints refer to the missing group `mygroup`",
}


def inventory() -> dict[str, dict[str, Any]]:
    """INVENTORY.md rows: corpus-relative path -> invalid-JSON flag and ref-check text."""
    rows: dict[str, dict[str, Any]] = {}
    prefix = None
    for line in (SHARED_CONFORMANCE / "INVENTORY.md").read_text("utf-8").splitlines():
        heading = re.match(r"^### .*— `xregistry/(.*)`", line)
        if heading:
            prefix = heading.group(1)
        elif line.startswith("## "):
            prefix = None
        elif prefix and line.startswith("| `"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows[prefix + cells[0].strip("`")] = {"invalid": "INVALID JSON" in line, "refs": cells[-1]}
    return rows


def _match(table: dict[str, str], path: str) -> str | None:
    return next((text for pattern, text in table.items() if fnmatch.fnmatchcase(path, pattern)), None)


def disagreement(path: str, pin: dict[str, Any], row: dict[str, Any] | None) -> str | None:
    """Why the outcome does not match what INVENTORY leads one to expect, or None."""
    codes = {e.split("@", 1)[0] for e in pin["errors"]}
    if row is None:
        return f"not in INVENTORY (non-registry material) but has errors {sorted(codes)}" if codes else None
    if row["invalid"]:
        parse = [e for e in pin["errors"] if e.startswith("parse@") and re.search(r":\d+:\d+$", e)]
        return None if parse and codes == {"parse"} else f"INVENTORY: invalid JSON, loader: {pin['errors']}"
    if "parse" in codes:
        return "INVENTORY: parses, loader: parse error"
    if "dangling" in row["refs"] and not codes:
        return f"INVENTORY: {row['refs']}, loader: no errors"
    if "dangling" not in row["refs"] and codes:
        return f"INVENTORY: {row['refs']}, loader: errors {sorted(codes)}"
    return None


def build(force: bool) -> tuple[dict[str, Any], list[str]]:
    rows = inventory()
    pins = current_pins()
    unreviewed = []
    files: dict[str, Any] = {}
    for path in sorted(pins):
        pin = dict(pins[path])
        row = rows.get(path)
        problem = disagreement(path, pin, row)
        judgement = _match(JUDGEMENTS, path)
        if problem and not judgement:
            unreviewed.append(f"{path}: {problem}")
        note = [f"inventory: {'INVALID JSON' if row['invalid'] else row['refs']}" if row else "not in inventory"]
        if problem and judgement:
            note = [f"disagrees with {problem}; judgement: {judgement}"]
        elif (extra := _match(NOTES, path)) and pin["errors"]:
            note.append(extra)
        pin["note"] = "; ".join(note)
        files[path] = pin
    if unreviewed and not force:
        return {}, unreviewed
    return {"about": "Pinned `xgate lint` outcome of every document under ../shared/conformance/xregistry, one file "
                     "at a time. Generated by tests/conformance/pin_corpus.py; review the diff before committing.",
            "files": files}, unreviewed


def review(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What changes file by file, in words a reviewer can check against the document."""
    lines = []
    for path in sorted(set(old) | set(new)):
        before, after = old.get(path), new.get(path)
        if before is None or after is None:
            lines.append(f"{'+' if before is None else '-'} {path}")
            continue
        changes = []
        if before["definitions"] != after["definitions"]:
            changes.append(f"definitions {before['definitions']} -> {after['definitions']}")
        added = sorted(set(after["errors"]) - set(before["errors"]))
        removed = sorted(set(before["errors"]) - set(after["errors"]))
        changes += [f"new error {e}" for e in added] + [f"error gone {e}" for e in removed]
        if before["warnings"] != after["warnings"]:
            changes.append(f"warnings {before['warnings']} -> {after['warnings']}")
        if before["generation"] != after["generation"]:
            changes.append(f"generation {before['generation']} -> {after['generation']}")
        if changes:
            lines.append(f"~ {path}: " + "; ".join(changes))
    return lines


def summary(files: dict[str, Any]) -> str:
    from collections import Counter

    codes: Counter[str] = Counter()
    for pin in files.values():
        codes.update(e.split("@", 1)[0].split("!")[-1] for e in pin["errors"])
    clean = sum(1 for p in files.values() if not p["errors"])
    return (f"{len(files)} files: {clean} clean, {len(files) - clean} with errors; errors by code: "
            + ", ".join(f"{c}={n}" for c, n in codes.most_common()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="show what would change; write nothing")
    parser.add_argument("--force", action="store_true", help="write even with unreviewed INVENTORY disagreements")
    args = parser.parse_args(argv)
    if not corpus_documents():
        print(f"no corpus at {SHARED_CONFORMANCE}", file=sys.stderr)
        return 2
    data, unreviewed = build(args.force)
    for line in unreviewed:
        print(f"UNREVIEWED {line}", file=sys.stderr)
    if unreviewed and not args.force:
        print("add a judgement to JUDGEMENTS in pin_corpus.py after reading each document (or --force)",
              file=sys.stderr)
        return 1
    by_hand = [f"{path}: {problem}" for path, pin in data["files"].items()
               for problem in by_hand_disagreements(path, pin)]
    for line in by_hand:
        print(f"DISAGREES WITH THE DOCUMENT READ BY HAND {line}", file=sys.stderr)
    if by_hand:
        print("the loader changed what a person read in these documents (corpus_by_hand.py): fix the loader, "
              "or reread the document and correct corpus_by_hand.py; nothing written", file=sys.stderr)
        return 1
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    old = EXPECTATIONS.read_text("utf-8") if EXPECTATIONS.exists() else ""
    pinned = json.loads(old)["files"] if old else {}
    changes = review(pinned, data["files"])
    print("review, file by file:\n" + ("\n".join(changes) if changes else "no file changes"))
    diff = list(difflib.unified_diff(old.splitlines(), text.splitlines(), "pinned", "now", lineterm="", n=2))
    print("\n".join(diff) if diff else "no change")
    print(summary(data["files"]))
    if args.check:
        return 1 if diff else 0
    EXPECTATIONS.write_text(text, "utf-8")
    print(f"wrote {EXPECTATIONS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

