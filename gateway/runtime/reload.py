"""Hot reload: watch the config directory (and SIGHUP), rebuild everything aside, swap one reference.

A reload loads the documents and gateway.yaml again and compiles a whole new
ruleset beside the running one. An unchanged digest does nothing. A file
with errors keeps its last good content (so the rules it held keep working)
while every other change applies; the reload then counts as failed and each
error is logged with file and location. A reload that would leave a route
without an endpoint it names (a destination's document removed) or with an
adapter that cannot be built (a bad option) fails as a whole: the last good
ruleset, routes and adapters keep running, and the log says why. Registry sources (gateway.yaml
`sources:`) are polled on their intervals beside the watch; a changed one
reloads the same way, a failed poll keeps that source's last good copy,
logs a warning and counts as a failed reload. The engine swaps the ruleset in one
assignment and starts, drains or restarts only the routes that changed. One
log record per reload says what changed, in structured fields (gateway/logs.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway import logs
from gateway.compiler import Ruleset, compile_registry
from gateway.compiler.core import NativeJudge
from gateway.envelope import Envelope
from gateway.errors import Diagnostic, Severity
from gateway.loader import Snapshot, load_snapshot
from gateway.loader.fetch import RemoteFetcher, fetcher_for
from gateway.loader.sources import RegistrySources
from gateway.metrics import names
from gateway.routes.resolve import adapter_diagnostics, resolve_routes
from gateway.runtime import heap
from gateway.runtime.config_watch import watch_quietly
from gateway.runtime.engine import Engine
from gateway.runtime.shadow import load_shadow
from gateway.runtime.source_follow import follow_sources
from gateway.schemaregistry import registry_schemas
from gateway.settings import SETTINGS_FILES, Settings, load_settings, shadow_folder

log = logging.getLogger("xgate.reload")
MAX_PASSES = 4


def _settings_digest(config_dir: Path) -> str:
    digest = hashlib.sha256()
    for name in SETTINGS_FILES:
        path = config_dir / name
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _changes(old: Snapshot, new: Snapshot) -> dict[str, list[str]]:
    def endpoints(s: Snapshot) -> dict[str, Any]:
        return {k: (e.attrs, [(m.groupid, m.messageid) for m in e.messages]) for k, e in s.registry.endpoints.items()}

    def messages(s: Snapshot) -> dict[str, Any]:
        return {f"{g}/{m}": (d.attrs, d.payload) for (g, m), d in s.registry.messages.items()}
    out: dict[str, list[str]] = {}
    for kind, old_items, new_items in (("endpoints", endpoints(old), endpoints(new)),
                                       ("messages", messages(old), messages(new))):
        out[f"{kind}_added"] = sorted(set(new_items) - set(old_items))
        out[f"{kind}_removed"] = sorted(set(old_items) - set(new_items))
        out[f"{kind}_modified"] = sorted(k for k in set(old_items) & set(new_items) if _differ(old_items[k], new_items[k]))
    return out


def _differ(old: Any, new: Any) -> bool:
    """Documents' values compared as they were read (JSON data): `==`, which walks them once; repr (which
    formats every value first, 0.37 s for 5,000 definitions) only where `==` cannot tell (NaN)."""
    try:
        return bool(old != new) and repr(old) != repr(new)
    except Exception:  # a value whose comparison raises
        return repr(old) != repr(new)


@dataclass(frozen=True, slots=True)
class LastReload:
    """The latest reload (the console shows it): when, why, how it went, and its problems."""

    at: float          # wall-clock time
    reason: str
    outcome: str       # applied, failed or unchanged
    problems: tuple[str, ...] = ()


class Reloader:
    def __init__(self, config_dir: str | Path, engine: Engine, snapshot: Snapshot, settings: Settings,
                 debounce: float = 1.0, on_snapshot: Callable[[Snapshot], None] | None = None,
                 sources: RegistrySources | None = None) -> None:
        self.config_dir = Path(config_dir)
        # told every snapshot that is swapped in (the /registry API), off the loop
        self.on_snapshot = on_snapshot
        self.engine = engine
        self.snapshot = snapshot
        self.settings = settings
        self.debounce = debounce
        self.settings_digest = _settings_digest(self.config_dir)
        self.last_good: dict[str, bytes] = {f: b for f, b in snapshot.contents.items()
                                            if not any(d.file == f for d in snapshot.errors)}
        self._lock = asyncio.Lock()
        self.last_reload: LastReload | None = None
        # kept across reloads for its cache; follows the `remote` section of the settings in force
        self.fetcher: RemoteFetcher | None = fetcher_for(settings.remote)
        self.schemaregistries = settings.schemaregistries  # likewise: the registries of the settings in force
        self.limits = settings.runtime.limits  # and the message limits
        # what the sources answered last (startup's fetch when given); follows the `sources` in force
        self.sources = sources if sources is not None else RegistrySources()
        self.sources.configure(settings.sources)

    def _load(self) -> tuple[Snapshot, Ruleset, list[Diagnostic], set[str]]:
        """Load and compile; files with errors fall back to their last good bytes (or are left out)."""
        overrides: dict[str, bytes | None] = {}
        broken: set[str] = set()
        reported: list[Diagnostic] = []
        documents = self.sources.documents()
        for _ in range(MAX_PASSES):
            snapshot = load_snapshot([self.config_dir], overrides, fetcher=self.fetcher,
                                     schemas=registry_schemas(self.schemaregistries), documents=documents)
            ruleset = compile_registry(snapshot.registry, snapshot.digest, self.limits)
            errors = [d for d in (*snapshot.diagnostics, *ruleset.diagnostics) if d.severity is Severity.ERROR]
            newly = {d.file for d in errors if d.file not in overrides}
            if not newly:
                return snapshot, ruleset, reported, broken
            reported.extend(d for d in errors if d.file in newly)
            for file in newly:
                broken.add(file)
                overrides[file] = self.last_good.get(file)
        return snapshot, ruleset, reported, broken

    async def reload(self, reason: str) -> str:
        async with self._lock:
            return await self._reload(reason)

    # issue 24, registry writes (gateway/registry_api/write.py): a write holds the lock from its check to the
    # swap, so that no other reload runs between them, and reloads while holding it
    @property
    def lock(self) -> asyncio.Lock:
        return self._lock

    async def reload_locked(self, reason: str) -> str:
        """`reload` for a caller that holds `lock`."""
        return await self._reload(reason)

    # a registry write's dry run (gateway/registry_api/dryrun.py) judges the recent traffic under both
    def active_ruleset(self) -> Ruleset:
        return self.engine.ref.ruleset

    def recent_traffic(self) -> dict[str, list[Envelope]]:
        return self.engine.ref.recent.sample()

    async def _reload_shadow(self, settings: Settings) -> None:
        """The shadow candidate follows its folder (`DIR/shadow/`, or gateway.yaml's `runtime.shadow_dir` in
        the settings just read): compiled again on every reload, gone with the folder."""
        judge, problems = await asyncio.to_thread(load_shadow, self.config_dir, self.engine.metrics,
                                                  settings.runtime.limits, settings.runtime.shadow_dir)
        for problem in problems:
            log.error("reload: shadow candidate: %s", problem)
        current = self.engine.ref.shadow
        if judge is not None and current is not None and judge.ruleset.digest == current.ruleset.digest:
            return  # unchanged: keep its counts and latest disagreements
        self.engine.ref.shadow = judge

    async def _reload(self, reason: str) -> str:
        metrics = self.engine.metrics
        settings, settings_problems = load_settings(self.config_dir)
        settings_digest = _settings_digest(self.config_dir)
        if settings_problems:
            settings, settings_digest = self.settings, self.settings_digest  # keep the last good settings
        await self._reload_shadow(settings)
        self.fetcher = fetcher_for(settings.remote, self.fetcher)  # before loading: it decides what is fetched
        self.schemaregistries = settings.schemaregistries
        self.limits = settings.runtime.limits
        self.sources.configure(settings.sources)
        for warning in await asyncio.to_thread(self.sources.start, self.fetcher):  # sources listed just now
            log.warning("reload: %s", warning)
        snapshot, ruleset, errors, broken = await asyncio.to_thread(self._load)
        if snapshot.digest == self.snapshot.digest and settings_digest == self.settings_digest \
                and not errors and not settings_problems:
            metrics[names.RELOADS].labels("unchanged").inc()
            self.last_reload = LastReload(time.time(), reason, "unchanged")
            return "unchanged"
        routes, route_problems = resolve_routes(snapshot.registry, settings)
        # compared off the event loop: 5,000 definitions took a quarter of a second, every route waiting
        changes = await asyncio.to_thread(_changes, self.snapshot, snapshot)
        blocking = route_problems + adapter_diagnostics(self.engine.adapter_problems(routes), snapshot.registry)
        if blocking:
            return self._refuse(reason, snapshot, errors + settings_problems + blocking, changes)
        native = await asyncio.to_thread(NativeJudge, ruleset)  # lowered off the event loop
        applied = await self.engine.apply(routes, ruleset, native)
        self.snapshot, self.settings, self.settings_digest = snapshot, settings, settings_digest
        if self.on_snapshot is not None:
            try:
                await asyncio.to_thread(self.on_snapshot, snapshot)
            except Exception:  # the registry API must never keep a reload from completing
                log.exception("reload: the registry API could not take the new snapshot")
        for file, data in snapshot.contents.items():
            if file not in broken:
                self.last_good[file] = data
        heap.resettle()  # the replaced ruleset goes; the new one joins what full collections skip
        problems = errors + settings_problems
        outcome = "failed" if problems else "applied"
        metrics[names.RELOADS].labels(outcome).inc()
        if outcome == "applied":
            # a partly applied reload (broken files kept at their last good content) does not count:
            # the stale-config alert must see that the operator's last edit did not take
            metrics[names.LAST_RELOAD].set(time.time())
        for problem in problems:
            log.error("reload: %s", problem)
        self.last_reload = LastReload(time.time(), reason, outcome, tuple(str(p) for p in problems[:20]))
        log.info("reload %s", outcome, extra=logs.fields(
            event="reload", reason=reason, outcome=outcome, digest=snapshot.digest[:12],
            definitions=ruleset.definition_count, routes=applied, **changes, kept_last_good=sorted(broken),
            errors=[str(p) for p in problems][:20]))
        return outcome

    def _refuse(self, reason: str, snapshot: Snapshot, problems: list[Diagnostic],
                changes: dict[str, list[str]]) -> str:
        """A reload that cannot apply as a whole: nothing changes, the last good ruleset and routes keep running."""
        self.engine.metrics[names.RELOADS].labels("failed").inc()
        for problem in problems:
            log.error("reload: %s", problem)
        log.error("reload: not applied; the last good ruleset, routes and adapters keep running")
        self.last_reload = LastReload(time.time(), reason, "failed", tuple(str(p) for p in problems[:20]))
        log.info("reload failed", extra=logs.fields(
            event="reload", reason=reason, outcome="failed", applied=False, digest=snapshot.digest[:12], **changes,
            errors=[str(p) for p in problems][:20]))
        return "failed"

    async def watch(self, stop: asyncio.Event) -> None:
        """Reload after the directory has been quiet for `debounce` seconds (config_watch.py)."""
        metrics = self.engine.metrics

        def state(up: bool) -> None:
            self.engine.config_watch = up
            metrics[names.CONFIG_WATCH_UP].set(1 if up else 0)

        shadow = shadow_folder(self.config_dir, self.settings.runtime.shadow_dir)
        outside = () if shadow.resolve().is_relative_to(self.config_dir.resolve()) else (shadow,)
        await watch_quietly(self.config_dir, self.debounce, stop, lambda: self.reload("file change"), state,
                            metrics[names.RELOADS].labels("failed").inc, also=outside)

    async def follow(self, stop: asyncio.Event) -> None:
        """Poll each source on its interval until `stop`; a changed source reloads like a file change."""
        await follow_sources(self.sources, lambda: self.fetcher, stop, self.reload,
                             self.engine.metrics[names.RELOADS].labels("failed").inc)
