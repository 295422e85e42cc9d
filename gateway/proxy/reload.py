"""The proxy's rules from the config directory, at start and again on every change (watch and SIGHUP).

A reload builds the new rules aside and swaps `Proxy.judging` in one assignment: connections stay open and
the next produce request is judged by the new rules. Unlike `xgate run`, whose reload keeps a broken file's
last good content, the proxy applies a reload only when every document loads without an error: a document
caught half-written would otherwise leave its topics unjudged, open to anything, until the next change.
`proxy` settings (listeners, upstream) are read at start only; a changed section is said and not applied.
Registry sources (gateway.yaml `sources:`) are fetched at start and followed on their intervals as `xgate run`
follows them (runtime/source_follow.py): a changed source reloads the rules like a changed file.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path

from gateway.compiler import compile_registry
from gateway.compiler.core import NativeJudge
from gateway.errors import Diagnostic, Severity
from gateway.loader import load_snapshot
from gateway.loader.fetch import RemoteFetcher, fetcher_for
from gateway.loader.sources import RegistrySources
from gateway.proxy.judging import topic_rules
from gateway.proxy.metrics import ProxyMetrics
from gateway.proxy.server import Judging, Proxy
from gateway.runtime import heap
from gateway.runtime.config_watch import watch_quietly
from gateway.runtime.source_follow import follow_sources
from gateway.schemaregistry import registry_schemas
from gateway.sections.proxy import ProxySettings
from gateway.settings import Settings, load_settings

log = logging.getLogger("xgate.proxy")


@dataclass(frozen=True, slots=True)
class Loaded:
    judging: Judging | None  # None when the rules cannot be used
    settings: Settings
    section: ProxySettings | None
    digest: str
    problems: list[Diagnostic]  # every problem found; errors among them keep `judging` None on reload
    fetcher: RemoteFetcher | None = None  # of the settings read (None while remote fetching is off)


def load_rules(config_dir: str | Path, policy: str | None = None, *, whole: bool = False,
               sources: RegistrySources | None = None, fetcher: RemoteFetcher | None = None) -> Loaded:
    """The judging rules of the config directory and of the registry sources its settings list (their last good
    copies in `sources`; a source not fetched yet is fetched now, and one that does not answer is a warning).
    `whole`: any error in a document refuses them (reload). `fetcher`: the one whose cache to keep."""
    settings, problems = load_settings(config_dir)
    fetcher = fetcher_for(settings.remote, fetcher)
    sources = sources if sources is not None else RegistrySources()
    sources.configure(settings.sources)
    problems += sources.start(fetcher)
    snapshot = load_snapshot([config_dir], fetcher=fetcher, schemas=registry_schemas(settings.schemaregistries),
                             documents=sources.documents())
    ruleset = compile_registry(snapshot.registry, snapshot.digest, settings.runtime.limits)
    problems += [*snapshot.diagnostics, *ruleset.diagnostics]
    section = settings.proxy
    judged = {endpoint_id for endpoint_id, rules in ruleset.endpoints.items() if rules.definitions}
    chosen = policy or (section.policy if section is not None else "reject")
    topics, topic_problems = topic_rules(snapshot.registry, settings, chosen, judged)
    problems += topic_problems
    fatal = [p for p in problems if p.severity is Severity.ERROR and (whole or p.code in ("settings", "proxy"))]
    judging = None if fatal else Judging(NativeJudge(ruleset), topics)
    return Loaded(judging, settings, section, snapshot.digest, problems, fetcher)


class ProxyReloader:
    def __init__(self, config_dir: str | Path, proxy: Proxy, metrics: ProxyMetrics, digest: str,
                 debounce: float = 1.0, section: ProxySettings | None = None,
                 sources: RegistrySources | None = None, fetcher: RemoteFetcher | None = None) -> None:
        self.config_dir = Path(config_dir)
        self.section = section  # the `proxy` section as read at start (the command line may override parts)
        self.proxy = proxy
        self.metrics = metrics
        self.digest = digest
        self.debounce = debounce
        self.watching: bool | None = None  # None: not watching (--no-watch); False: the watch failed, restarting
        # what the registry sources answered last (start-up's fetch), and the fetcher of the settings in force
        self.sources = sources if sources is not None else RegistrySources()
        self.fetcher = fetcher
        self._lock = asyncio.Lock()

    async def reload(self, reason: str) -> str:
        """applied, unchanged or failed; the running rules stay unless applied. Loading and compiling run in a
        thread (a large registry takes seconds): connections are served meanwhile, by the rules in force."""
        async with self._lock:  # a change during a reload reloads again after it, never beside it
            loaded = await asyncio.to_thread(load_rules, self.config_dir, self.proxy.settings.policy, whole=True,
                                             sources=self.sources, fetcher=self.fetcher)
            self.fetcher = loaded.fetcher
            return self._apply(reason, loaded)

    def _apply(self, reason: str, loaded: Loaded) -> str:
        errors = [p for p in loaded.problems if p.severity is Severity.ERROR]
        if loaded.judging is None:
            for problem in errors:
                log.error("proxy: reload (%s): %s", reason, problem)
            log.error("proxy: reload (%s) failed: the rules in force stay", reason)
            self.metrics.reloaded("failed")
            return "failed"
        if loaded.section != self.section:
            log.warning("proxy: the `proxy` section changed; listeners and upstream apply at the next start")
        if loaded.digest == self.digest and loaded.judging.topics == self.proxy.judging.topics:
            self.metrics.reloaded("unchanged")
            log.info("proxy: reload (%s): nothing changed", reason)
            return "unchanged"
        self.proxy.judging = loaded.judging
        self.digest = loaded.digest
        heap.resettle()  # the replaced rules go; the new ones join what full collections skip
        self.metrics.endpoints({rule.endpoint_id for rule in loaded.judging.topics.values()},
                               loaded.judging.native.ruleset.definition_count)
        self.metrics.reloaded("applied")
        log.info("proxy: reload (%s) applied: %d judged topic(s)", reason, len(loaded.judging.topics))
        return "applied"

    async def watch(self, stop: asyncio.Event) -> None:
        """Reload after the directory has been quiet for `debounce` seconds (gateway/runtime/config_watch.py)."""

        def state(up: bool) -> None:
            self.watching = up
            self.metrics.watching(up)

        await watch_quietly(self.config_dir, self.debounce, stop, lambda: self.reload("file change"), state,
                            lambda: self.metrics.reloaded("failed"))

    async def follow(self, stop: asyncio.Event) -> None:
        """Poll each registry source on its interval until `stop`; a changed one reloads the rules."""
        await follow_sources(self.sources, lambda: self.fetcher, stop, self.reload,
                             lambda: self.metrics.reloaded("failed"))
