"""Keep file references inside the directories being loaded.

A document may name other files (`other.json#/...`, `reading.avsc`,
`file:///...`); those are read only when they lie inside one of the roots
the loader was given (a named file's own directory counts as a root). A
path written with `..` or as an absolute path outside, or a symbolic link
that resolves outside, is refused: a dropped document must not make the
gateway read (and echo in errors) files the operator never pointed it at.
"""

from __future__ import annotations

import os
from pathlib import Path


class Confinement:
    def __init__(self, roots: list[Path]) -> None:
        self.roots = [root.resolve() for root in roots]

    def contains(self, path: Path) -> bool:
        return any(path == root or root in path.parents for root in self.roots)

    def refusal(self, path: Path) -> str | None:
        """Why `path` may not be read, or None when it lies inside a root (symbolic links followed)."""
        resolved = path.resolve()
        if self.contains(resolved):
            return None
        where = ", ".join(str(root) for root in self.roots) or "no directory"
        if self.contains(Path(os.path.abspath(path))):
            return (f"{os.path.abspath(path)} is a symbolic link (or lies under one) to {resolved}, outside the "
                    f"directories being loaded ({where}); references may not leave them")
        return f"{os.path.abspath(path)} is outside the directories being loaded ({where}); references may not leave them"
