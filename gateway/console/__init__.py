"""The operator's console: `/ui` on the metrics address, read-only, on when gateway.yaml has `console:`.

    app       the aiohttp routes under /ui, the security headers, the rate sampler's lifetime
    pages     each page as HTML: routes, dead letters, registry, shadow and changes, try a message
    marks     one message with each violation marked in place (attributes, fields, headers, payload pointer)
    words     a definition's rules in words
    rates     rates by verdict over the last minutes, from the gateway's own counters
    trying    "Try a message": judged as `xgate check` does, explained as `xgate explain` does
    static/   the stylesheet and the one script (live refresh), served by xgate itself

What it reads is kept by the runtime: the route stats and health, the latest nonconformant and unmatched
messages (runtime/dead_letter_ring.py, kept only while the console is on), the shadow candidate, the last
reload, the registry's change events and the last dry run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.console.pages import Sources
from gateway.console.rates import RateHistory
from gateway.runtime.dead_letter_ring import DeadLetters
from gateway.sections.console import ConsoleSettings

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from gateway.registry_api.write import RegistryWriter
    from gateway.runtime.change_events import ChangePublisher
    from gateway.runtime.engine import Engine
    from gateway.runtime.reload import Reloader


def console_sources(settings: ConsoleSettings, engine: Engine, reloader: Reloader, metrics: CollectorRegistry,
                    host: str, publisher: ChangePublisher | None = None,
                    writer: RegistryWriter | None = None) -> Sources:
    """What the console reads; from here on the routes keep their latest dead letters for it."""
    from gateway.console.app import definition_counts, loopback

    kept = engine.ref.dead_letters = DeadLetters(settings.dead_letters, settings.max_bytes)
    show = settings.show_bodies if settings.show_bodies is not None else loopback(host)
    return Sources(engine, reloader, settings, show, kept, RateHistory(engine.stats), publisher, writer,
                   lambda: definition_counts(metrics))
