"""A config directory's documents with a candidate folder laid over them by file name (its `shadow/`): a file
there replaces the directory's file of that name, a new name adds one. What the gateway judges as its shadow
candidate (gateway/runtime/shadow.py) and what `xgate diff --against DIR/shadow` compares against."""

from __future__ import annotations

from pathlib import Path

from gateway.loader.discover import discover


def overlaid(config_dir: str | Path, folder: str | Path) -> list[str | Path] | None:
    """The documents of the overlay, or None when the folder holds none (no candidate: an empty `shadow/` left
    after the last file was promoted means nothing to compare, not the active documents again)."""
    candidates, _ = discover([Path(folder)])
    if not candidates:
        return None
    replaced = {path.name for path in candidates}
    active, _ = discover([Path(config_dir)])
    return [*(path for path in active if path.name not in replaced), *candidates]
