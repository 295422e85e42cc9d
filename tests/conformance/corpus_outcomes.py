"""What `xgate lint` makes of each document of the shared xRegistry corpus, in a form that can be pinned.

Shared by `test_xregistry_corpus.py` (compares) and `pin_corpus.py` (regenerates the pins). One file is
loaded and compiled on its own, exactly as `xgate lint FILE` would; its outcome is:

- `errors`: sorted compact strings `code@pointer`, plus `:line:col` when the diagnostic has a line
  (parse errors); a diagnostic about another file is prefixed with that file's corpus-relative path and `!`;
- `warnings`: how many warnings of each code (the texts are not pinned);
- `definitions`: how many message definitions compiled;
- `generation`: the document generation the loader recognized.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from gateway.compiler import compile_registry
from gateway.errors import Diagnostic, Severity
from gateway.loader import load_snapshot
from gateway.loader.discover import discover
from tests.conftest import SHARED_CONFORMANCE

EXPECTATIONS = Path(__file__).resolve().with_name("corpus_expectations.json")


def xregistry_corpus() -> Path:
    return SHARED_CONFORMANCE / "xregistry"


def corpus_documents() -> list[Path]:
    """Every document file under the corpus, as `xgate lint DIR` would find them."""
    root = xregistry_corpus()
    if not root.is_dir():
        return []
    files, _ = discover([root])
    return files


def relative(path: Path | str) -> str:
    path = Path(path)
    try:
        return path.resolve().relative_to(xregistry_corpus().resolve()).as_posix()
    except ValueError:
        return str(path)


def compact(diagnostic: Diagnostic, document: Path) -> str:
    text = f"{diagnostic.code or '-'}@{diagnostic.pointer}"
    if diagnostic.line is not None:
        text += f":{diagnostic.line}:{diagnostic.column}"
    if Path(diagnostic.file).resolve() != document.resolve():
        text = f"{relative(diagnostic.file)}!{text}"
    return text


@dataclass(frozen=True)
class Outcome:
    document: Path
    diagnostics: tuple[Diagnostic, ...]
    definitions: int
    generation: str | None

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity is Severity.ERROR]

    def pinned(self) -> dict[str, Any]:
        warnings = Counter(d.code or "-" for d in self.diagnostics if d.severity is Severity.WARNING)
        return {"errors": sorted(compact(d, self.document) for d in self.errors),
                "warnings": dict(sorted(warnings.items())),
                "definitions": self.definitions,
                "generation": self.generation}


@cache
def lint_outcome(document: Path) -> Outcome:
    """Load and compile one document on its own (what `xgate lint FILE` reports), cached per process."""
    snapshot = load_snapshot([document])
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    generation = snapshot.files[0].generation if snapshot.files else None
    return Outcome(document, tuple(snapshot.diagnostics) + tuple(ruleset.diagnostics), ruleset.definition_count,
                   generation)


def current_pins() -> dict[str, dict[str, Any]]:
    return {relative(path): lint_outcome(path).pinned() for path in corpus_documents()}


def load_expectations() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(EXPECTATIONS.read_text("utf-8"))
    return data


PINNED_KEYS = ("errors", "warnings", "definitions", "generation")
