"""`xgate export --config DIR [--resolved] [--output FILE]`: the merged registry as one xRegistry document.

The directory is loaded as `xgate run` loads it (its gateway.yaml `remote` section says what may be
fetched; its `sources` are fetched once and merged as `run` merges them). Without `--resolved` the
document holds the merged documents as declared (`basemessageuri` references kept); with it, what xgate judges with: basemessage chains materialized and payload schemas
inlined where they were resolved. Either way the document loads again on its own (`xgate check --registry
FILE`) and gives the same verdicts. Load problems go to standard error; the exit code is 2 when DIR does
not exist, else 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gateway.commands.startup import load_documents, report
from gateway.exit_code import ExitCode
from gateway.registry_api.document import registry_document
from gateway.settings import load_settings


def cmd_export(args: argparse.Namespace) -> ExitCode:
    config = Path(args.config)
    if not config.is_dir():
        print(f"xgate export: {config} is not a directory", file=sys.stderr)
        return ExitCode.USAGE
    settings, settings_problems = load_settings(config)  # gateway.yaml `sources:` are part of what `run` enforces
    snapshot, problems = load_documents([config], settings, settings_problems)
    report([*problems, *snapshot.diagnostics])
    text = json.dumps(registry_document(snapshot, resolved=args.resolved), indent=2, ensure_ascii=False,
                      default=str) + "\n"
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text, "utf-8")
    return ExitCode.OK


def add_command(commands: Any) -> None:
    export = commands.add_parser("export", help="write the merged registry as one xRegistry document (JSON)")
    export.add_argument("--config", required=True, metavar="DIR", help="documents (and gateway.yaml), as for run")
    export.add_argument("--resolved", action="store_true",
                        help="basemessage chains materialized and schemas inlined where resolved")
    export.add_argument("-o", "--output", metavar="FILE", help="where to write (default: standard output)")
    export.set_defaults(handler=cmd_export)
