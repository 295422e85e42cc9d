"""Find registry documents in files and directories."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

DOCUMENT_SUFFIXES = (".xreg.json", ".cereg.yaml", ".cereg.yml", ".cereg", ".json", ".yaml", ".yml")
# gateway settings live beside the documents but are not registry documents
SETTINGS_NAMES = frozenset({"gateway.yaml", "gateway.yml"})


def is_document(path: Path) -> bool:
    name = path.name.lower()
    return name not in SETTINGS_NAMES and name.endswith(DOCUMENT_SUFFIXES)


@dataclass
class Found:
    files: list[Path] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    # documents in a directory that are symbolic links resolving outside it: (link, target)
    escaping: list[tuple[Path, Path]] = field(default_factory=list)
    # documents whose symbolic links cannot be resolved (a loop): (link, why)
    unresolved: list[tuple[Path, str]] = field(default_factory=list)


# the folder of a config directory whose documents are judged beside the active ones, routing nothing
SHADOW_DIR = "shadow"


def find_documents(paths: list[str | Path]) -> Found:
    """Expand PATHs into document files (sorted, deduplicated), the paths that do not exist, and the links
    inside a directory that lead out of it (not loaded: a dropped link must not read other files).

    A document is named by its absolute path as found (symbolic links not resolved), so that a file
    keeps its name when a link under it moves: a Kubernetes ConfigMap volume presents `name.json ->
    ..data/name.json` with `..data -> ..2026_11_24_10_00_00.1/`, and an update swaps `..data` to a new
    hidden directory. Named by the link, the same content is the same configuration (same digest) and a
    broken file keeps its last good content across the swap. Hidden entries (`..data`, the versioned
    directories) are not walked; two names leading to the same file load it once, under the first name.
    Nor is a `shadow/` folder: its documents are a candidate, judged apart (gateway/runtime/shadow.py).
    """
    found: dict[Path, None] = {}
    targets: set[Path] = set()
    result = Found()

    def add(candidate: Path, target: Path) -> None:
        if target not in targets:
            targets.add(target)
            found[Path(os.path.abspath(candidate))] = None

    for raw in paths:
        path = Path(raw)
        if path.is_file():
            add(path, path.resolve())
        elif path.is_dir():
            root = path.resolve()
            for walked, dirs, files in os.walk(path):
                # a config directory's `shadow/` holds candidate documents (gateway/runtime/shadow.py), not these
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != SHADOW_DIR)
                for name in sorted(files):
                    candidate = Path(walked) / name
                    if not is_document(candidate):
                        continue
                    try:
                        target = candidate.resolve()
                    except (RuntimeError, OSError) as exc:  # a symbolic link loop: pathlib says RuntimeError
                        result.unresolved.append((candidate, str(exc)))
                        continue
                    if root in target.parents:
                        add(candidate, target)
                    else:
                        result.escaping.append((candidate, target))
        else:
            result.missing.append(str(raw))
    result.files = list(found)
    return result


def discover(paths: list[str | Path]) -> tuple[list[Path], list[str]]:
    """Expand PATHs into document files (sorted, deduplicated) and report paths that do not exist."""
    found = find_documents(paths)
    return found.files, found.missing
