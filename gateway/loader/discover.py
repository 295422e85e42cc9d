"""Find registry documents in files and directories."""

from __future__ import annotations

import os
from pathlib import Path

DOCUMENT_SUFFIXES = (".xreg.json", ".cereg.yaml", ".cereg.yml", ".cereg", ".json", ".yaml", ".yml")
# gateway settings live beside the documents but are not registry documents
SETTINGS_NAMES = frozenset({"gateway.yaml", "gateway.yml"})


def is_document(path: Path) -> bool:
    name = path.name.lower()
    return name not in SETTINGS_NAMES and name.endswith(DOCUMENT_SUFFIXES)


def discover(paths: list[str | Path]) -> tuple[list[Path], list[str]]:
    """Expand PATHs into document files (sorted, deduplicated) and report paths that do not exist."""
    found: dict[Path, None] = {}
    missing: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            found[path.resolve()] = None
        elif path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    candidate = Path(root) / name
                    if is_document(candidate):
                        found[candidate.resolve()] = None
        else:
            missing.append(str(raw))
    return list(found), missing
