"""Would the config directory, with some files replaced, load and compile as a reload loads it? (registry writes)

The candidate files are staged beside their final names (store.stage: names the directory walk never reads)
and loaded in their place, with the same settings, fetcher, registry sources and limits the reloader uses;
then compiled, and the routes resolved and their adapters built (options read, nothing connected), as a
reload does. A problem counts when it is new: one the directory already has without the write (a broken file
the operator dropped, kept at its last good content) never blocks a write elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gateway.compiler import Ruleset, compile_registry
from gateway.errors import Diagnostic, Severity
from gateway.limits import Limits
from gateway.loader import Snapshot, load_snapshot
from gateway.loader.fetch import RemoteFetcher
from gateway.routes.resolve import Route, adapter_diagnostics, resolve_routes
from gateway.schemaregistry import registry_schemas
from gateway.settings import Settings


@dataclass(frozen=True)
class Loading:
    """How the reloader in force loads the directory (gateway/runtime/reload.py)."""

    config_dir: Path
    settings: Settings
    fetcher: RemoteFetcher | None
    schemaregistries: Mapping[str, Any]
    documents: Mapping[str, bytes]
    limits: Limits
    adapter_problems: Callable[[list[Route]], dict[str, str]]


@dataclass(frozen=True)
class Checked:
    """A staged write checked: the errors it would add, all the errors the directory would have with it (the
    next write's "before"), and what it loads and compiles to (a dry run compares and judges with it)."""

    new: list[Diagnostic]
    every: list[Diagnostic]
    snapshot: Snapshot
    ruleset: Ruleset


def _problems(loading: Loading, paths: list[Path], overrides: dict[str, bytes | None],
              ) -> tuple[Snapshot, Ruleset, list[Diagnostic]]:
    snapshot = load_snapshot([loading.config_dir, *paths], overrides, fetcher=loading.fetcher,
                             schemas=registry_schemas(loading.schemaregistries), documents=loading.documents)
    ruleset = compile_registry(snapshot.registry, snapshot.digest, loading.limits)
    found = [d for d in (*snapshot.diagnostics, *ruleset.diagnostics) if d.severity is Severity.ERROR]
    routes, route_problems = resolve_routes(snapshot.registry, loading.settings)
    found += route_problems + adapter_diagnostics(loading.adapter_problems(routes), snapshot.registry)
    return snapshot, ruleset, found


def _key(diagnostic: Diagnostic) -> tuple[str, str, str]:
    return diagnostic.file, diagnostic.pointer or "", diagnostic.message


def new_problems(loading: Loading, staged: dict[Path, Path | None], before: list[Diagnostic] | None = None,
                 ) -> Checked:
    """Errors the directory would have with each final path of `staged` replaced by its staged file (None:
    removed) that it does not have now, each named by the final path, never the staged one; and all the
    errors it would have (what `before` is for the next write, once this one is in place). `before`: the
    directory's errors now, when the caller knows them (write.py keeps the last write's), else loaded here."""
    if before is None:
        _, _, before = _problems(loading, [], {})
    overrides: dict[str, bytes | None] = {str(final): None for final in staged}
    snapshot, ruleset, after = _problems(loading, [s for s in staged.values() if s is not None], overrides)
    names = {str(s): str(final) for final, s in staged.items() if s is not None}
    known = {_key(d) for d in before}
    out, every = [], []
    for diagnostic in after:
        named = diagnostic
        for staged_name, final in names.items():
            if staged_name in named.file or staged_name in named.message:
                named = replace(named, file=named.file.replace(staged_name, final),
                                message=named.message.replace(staged_name, final))
        every.append(named)
        if _key(named) not in known:
            out.append(named)
    return Checked(out, every, snapshot, ruleset)
