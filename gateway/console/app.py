"""`/ui` on the metrics address: the console's routes, added to the metrics server's application so that its TLS
and basic auth guard them as they guard /metrics and /registry (gateway/metrics/server.py).

Read-only: GET for every page, and POST only for "Try a message", which judges and sends nothing. Every answer
carries a Content-Security-Policy that allows nothing but this address, so a page cannot load or send anything
elsewhere even if a message's content tried to.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from collections.abc import AsyncIterator, Callable
from html import escape
from importlib import resources
from urllib.parse import quote

from aiohttp import web
from prometheus_client import CollectorRegistry

from gateway.console.marks import message_html, violations_html
from gateway.console.pages import (
    Sources,
    changes_page,
    dead_letter_page,
    dead_letters_page,
    layout,
    registry_page,
    routes_page,
    try_page,
)
from gateway.console.trying import try_message

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
STATIC = {"console.css": "text/css", "live.js": "text/javascript"}


def loopback(host: str) -> bool:
    """Whether the metrics address is a loopback one (bodies are shown there by default)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def definition_counts(registry: CollectorRegistry) -> dict[tuple[str, str, str], float]:
    """xgate_definition_messages_total by (group, message, verdict), summed over routes (read when the registry
    page is asked for, from prometheus_client's public collect())."""
    counts: dict[tuple[str, str, str], float] = {}
    for family in registry.collect():
        if family.name != "xgate_definition_messages":
            continue
        for sample in family.samples:
            if sample.name.endswith("_total"):
                labels = sample.labels
                key = (labels.get("messagegroup", ""), labels.get("message", ""), labels.get("verdict", ""))
                counts[key] = counts.get(key, 0.0) + sample.value
    return counts


def _page(title: str, page: str, main: str, request: web.Request, live: str | None = None) -> web.Response:
    """The whole page, or only its main part for live.js (`?part=main`)."""
    body = main if request.query.get("part") == "main" else layout(title, page, main, live)
    return web.Response(text=body, content_type="text/html", headers=SECURITY_HEADERS)


class Console:
    def __init__(self, sources: Sources) -> None:
        self.sources = sources

    async def index(self, request: web.Request) -> web.Response:
        raise web.HTTPFound("/ui/routes")

    async def routes(self, request: web.Request) -> web.Response:
        return _page("Routes", "routes", routes_page(self.sources), request, "/ui/routes?part=main")

    async def dead_letters(self, request: web.Request) -> web.Response:
        route = request.query.get("route") or None
        live = "/ui/dead-letters?part=main" + (f"&route={quote(route)}" if route else "")
        return _page("Dead letters", "dead-letters", dead_letters_page(self.sources, route), request, live)

    async def dead_letter(self, request: web.Request) -> web.Response:
        try:
            number = int(request.match_info["number"])
        except ValueError:
            raise web.HTTPNotFound() from None
        letter = self.sources.dead_letters.find(number)
        if letter is None:
            main = (f"<h1>Dead letter #{number}</h1><p>No longer kept (the console keeps the latest "
                    f"{self.sources.dead_letters.per_route} per route).</p>")
            return _page("Dead letter", "dead-letters", main, request)
        return _page(f"Dead letter #{number}", "dead-letters", dead_letter_page(self.sources, letter), request)

    async def registry(self, request: web.Request) -> web.Response:
        return _page("Registry", "registry", registry_page(self.sources), request)

    async def changes(self, request: web.Request) -> web.Response:
        return _page("Shadow and changes", "changes", changes_page(self.sources), request, "/ui/changes?part=main")

    async def try_form(self, request: web.Request) -> web.Response:
        return _page("Try a message", "try", try_page(self.sources), request)

    async def try_submit(self, request: web.Request) -> web.Response:
        form = await request.post()
        text, endpoint = str(form.get("message", "")), str(form.get("endpoint", ""))
        sources = self.sources
        tried = try_message(sources.engine.ref.ruleset, sources.reloader.snapshot.registry, text, endpoint or None)
        if tried.verdict is None:
            answer = f'<section class=answer><p class="verdict nonconformant">{escape(tried.problem)}</p></section>'
        else:
            rules = sources.engine.ref.ruleset.endpoints.get(tried.envelope.endpoint or "") \
                if tried.envelope is not None else None
            shown = message_html(tried.envelope, tried.verdict, show_bodies=True, redact=sources.settings.redact,
                                 rules=rules) if tried.envelope is not None else ""
            explanation = f"<h3>Explanation (as xgate explain)</h3><pre>{escape(tried.explanation)}</pre>" \
                if tried.explanation else ""
            answer = (f'<section class=answer><h2>Verdict</h2><div id=verdict data-verdict="'
                      f'{escape(tried.verdict.outcome.value)}">{violations_html(tried.verdict)}</div>'
                      f"{explanation}{shown}</section>")
        return _page("Try a message", "try", try_page(sources, text, endpoint, answer), request)

    async def static(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        kind = STATIC.get(name)
        if kind is None:
            raise web.HTTPNotFound()
        data = resources.files("gateway.console").joinpath("static", name).read_bytes()
        return web.Response(body=data, content_type=kind,
                            headers={**SECURITY_HEADERS, "Cache-Control": "max-age=300"})


def add_console_routes(app: web.Application, sources: Sources) -> None:
    """The console's pages under /ui, and its rate sampler for as long as the application runs."""
    console = Console(sources)
    app.router.add_get("/ui", console.index)
    app.router.add_get("/ui/", console.index)
    app.router.add_get("/ui/routes", console.routes)
    app.router.add_get("/ui/dead-letters", console.dead_letters)
    app.router.add_get("/ui/dead-letters/{number}", console.dead_letter)
    app.router.add_get("/ui/registry", console.registry)
    app.router.add_get("/ui/changes", console.changes)
    app.router.add_get("/ui/try", console.try_form)
    app.router.add_post("/ui/try", console.try_submit)
    app.router.add_get("/ui/static/{name}", console.static)
    app.cleanup_ctx.append(_sampler(sources))


def _sampler(sources: Sources) -> Callable[[web.Application], AsyncIterator[None]]:
    """The rate sampler as aiohttp's cleanup context: started with the server, cancelled with it."""
    async def sampling(_: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(sources.rates.run())
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return sampling
