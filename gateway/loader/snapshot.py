"""Load documents into an immutable Snapshot: resolved registry, diagnostics, digest and provenance."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway import collector
from gateway.errors import Diagnostic, Severity
from gateway.loader.confine import Confinement
from gateway.loader.context import SchemaSource
from gateway.loader.decode import decode_bytes, decode_file, read_document
from gateway.loader.discover import find_documents
from gateway.loader.fetch import RemoteFetcher
from gateway.loader.generations import normalize_document
from gateway.loader.merge import merge_documents
from gateway.loader.referenced import ReferencedSources
from gateway.loader.resolve import Resolver, build_registry
from gateway.model import Doc
from gateway.model.resolved import Registry


@dataclass(frozen=True, slots=True)
class FileSummary:
    file: str
    generation: str
    endpoints: tuple[str, ...]
    messagegroups: tuple[str, ...]
    messages: int
    schemagroups: tuple[str, ...]
    schemas: int


@dataclass(frozen=True)
class Snapshot:
    registry: Registry
    diagnostics: tuple[Diagnostic, ...]
    files: tuple[FileSummary, ...]
    digest: str
    roots: tuple[str, ...] = field(default=())
    # the bytes each document was loaded from (a reload keeps a broken file's last good bytes)
    contents: dict[str, bytes] = field(default_factory=dict)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity is Severity.WARNING]


def _summary(doc: Doc) -> FileSummary:
    return FileSummary(
        doc.file, doc.generation, tuple(doc.endpoints), tuple(doc.messagegroups),
        sum(len(g.children) for g in doc.messagegroups.values()) + sum(len(e.children) for e in doc.endpoints.values()),
        tuple(doc.schemagroups), sum(len(g.children) for g in doc.schemagroups.values()))


def _add(name: str, decoded: tuple[Any, Diagnostic | None], docs: dict[str, Doc],
         diagnostics: list[Diagnostic]) -> None:
    raw, problem = decoded
    if problem is not None:
        diagnostics.append(problem)
        docs[name] = Doc(name, "unparsable")
        return
    doc, normalized = normalize_document(raw, name)
    diagnostics.extend(normalized)
    docs[name] = doc


@collector.paused()
def load_snapshot(paths: list[str | Path], overrides: dict[str, bytes | None] | None = None, *,
                  fetcher: RemoteFetcher | None = None,
                  schemas: Callable[[ReferencedSources], SchemaSource] | None = None,
                  documents: Mapping[str, bytes] | None = None) -> Snapshot:
    """Every file is decoded and normalized on its own, so one broken file never stops the others.

    `overrides` replaces the bytes of some files (a reload keeps a broken file's last good content);
    None leaves that file out. `fetcher` fetches http(s) references (None: remote fetching is off).
    `schemas` makes, for this load's referenced sources, what resolves schema references the documents
    do not hold (gateway/schemaregistry: the registries of gateway.yaml `schemaregistries`); None: none.
    `documents` are fetched registry documents by URL (gateway.yaml `sources:`), merged after the files in
    their order, so that for the same id a local file wins, then the earlier source; `overrides` apply to
    them too. Named by URL, their references stay remote (refs.py): they never reach local files.
    """
    overrides = overrides or {}
    found = find_documents(paths)
    files = found.files
    diagnostics: list[Diagnostic] = [Diagnostic(Severity.ERROR, m, "no such file or directory", code="io")
                                     for m in found.missing]
    diagnostics.extend(Diagnostic(Severity.ERROR, str(link), f"not loaded: it is a symbolic link to {target}, "
                                  "outside the directory being loaded", code="link-outside")
                       for link, target in found.escaping)
    diagnostics.extend(Diagnostic(Severity.ERROR, str(link), f"not loaded: its symbolic links never end ({why})",
                                  code="link-loop") for link, why in found.unresolved)
    roots = [Path(p).resolve() if Path(p).is_dir() else Path(p).resolve().parent for p in paths if Path(p).exists()]
    digest = hashlib.sha256()
    docs: dict[str, Doc] = {}
    contents: dict[str, bytes] = {}
    for path in files:
        if str(path) in overrides and overrides[str(path)] is None:
            continue
        data = overrides.get(str(path))
        if data is None:
            data, problem = read_document(path)
        else:
            problem = None
        digest.update(str(path).encode() + b"\0" + (data or b"") + b"\0")
        if data is not None:
            contents[str(path)] = data
        _add(str(path), decode_file(path, data) if data is not None else (None, problem), docs, diagnostics)
    for name, data in (documents or {}).items():
        replaced = overrides.get(name, data)
        if replaced is None:
            continue
        digest.update(name.encode() + b"\0" + replaced + b"\0")
        contents[name] = replaced
        _add(name, decode_bytes(replaced, name, yaml_syntax=False), docs, diagnostics)
    merged, merge_problems = merge_documents(list(docs.values()))
    diagnostics.extend(merge_problems)
    sources = ReferencedSources(docs, Confinement(roots), fetcher)
    resolver = Resolver(merged, sources, schemas(sources) if schemas is not None else None)
    registry = build_registry(merged, resolver)
    diagnostics.extend(resolver.diagnostics)
    diagnostics.extend(sources.diagnostics)
    for url, sha in sorted(sources.fetched.items()):
        # fetched documents are part of the configuration: a changed remote schema changes the digest
        digest.update(url.encode() + b"\0" + sha.encode() + b"\0")
    summaries = tuple(_summary(d) for d in docs.values())
    return Snapshot(registry, tuple(diagnostics), summaries, digest.hexdigest(), tuple(str(r) for r in roots),
                    contents)
