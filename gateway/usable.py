"""What the offline commands share before they judge (`check`, `explain`, `spark`): load problems reported on
standard error, and the refusal of a ruleset that cannot be used as asked (CONFORMANCE.md section 7 exit codes).

Below both gateway/cli.py and the command modules it registers, so that none of them imports the other back.
"""

from __future__ import annotations

import sys
from typing import TextIO

from gateway.compiler import Ruleset
from gateway.errors import Severity
from gateway.loader import Snapshot

EXIT_USAGE = 2


def report_diagnostics(snapshot: Snapshot, ruleset: Ruleset, stream: TextIO) -> int:
    errors = 0
    for diagnostic in list(snapshot.diagnostics) + list(ruleset.diagnostics):
        if diagnostic.code == "duplicate" and diagnostic.severity is Severity.WARNING:
            continue
        errors += diagnostic.severity is Severity.ERROR
        print(diagnostic, file=stream)
    return errors


def nothing_compiled(ruleset: Ruleset) -> bool:
    return not any(rules.definitions for rules in ruleset.endpoints.values())


def unusable(command: str, snapshot: Snapshot, ruleset: Ruleset, *, strict: bool,
             endpoint: str | None) -> int | None:
    """Report load problems on stderr; the exit code when the ruleset cannot be used as asked, else None."""
    errors = report_diagnostics(snapshot, ruleset, sys.stderr)
    if strict and errors:
        print(f"xgate {command}: {errors} load error(s) and --strict is set", file=sys.stderr)
        return EXIT_USAGE
    if nothing_compiled(ruleset):
        print(f"xgate {command}: no endpoint with message definitions could be compiled", file=sys.stderr)
        return EXIT_USAGE
    if endpoint and endpoint not in ruleset.endpoints:
        print(f"xgate {command}: --endpoint {endpoint!r} is not in the registry "
              f"(known: {', '.join(sorted(ruleset.endpoints)) or 'none'})", file=sys.stderr)
        return EXIT_USAGE
    return None
