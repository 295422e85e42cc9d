"""The console's pages as HTML (server-rendered: each reads without JavaScript; live.js refreshes the live ones).

Each page function takes the console's `Sources` (what the running gateway exposes) and returns the page's
main part; `layout` wraps it. Every value from a message or a document is escaped; no page loads anything
from elsewhere (styles and the one script are served under /ui/static).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from gateway.console.marks import message_html, violations_html
from gateway.console.rates import KINDS, RateHistory
from gateway.console.words import definition_words
from gateway.runtime.dead_letter_ring import DeadLetter, DeadLetters
from gateway.runtime.router import kind_of
from gateway.sections.console import ConsoleSettings

if TYPE_CHECKING:
    from gateway.registry_api.write import RegistryWriter
    from gateway.runtime.change_events import ChangePublisher
    from gateway.runtime.engine import Engine
    from gateway.runtime.reload import Reloader

NAV = (("routes", "Routes"), ("dead-letters", "Dead letters"), ("registry", "Registry"),
       ("changes", "Shadow and changes"), ("try", "Try a message"))
SPARK_WIDTH, SPARK_HEIGHT = 240, 36


@dataclass
class Sources:
    """What the console reads from the running gateway (none of it is changed from here)."""

    engine: Engine
    reloader: Reloader
    settings: ConsoleSettings
    show_bodies: bool
    dead_letters: DeadLetters
    rates: RateHistory
    publisher: ChangePublisher | None = None
    writer: RegistryWriter | None = None
    definition_counts: Callable[[], dict[tuple[str, str, str], float]] | None = None


def layout(title: str, page: str, main: str, live: str | None = None) -> str:
    links = "".join(f'<a href="/ui/{key}"{" aria-current=page" if key == page else ""}>{escape(name)}</a>'
                    for key, name in NAV)
    live_attr = f' data-live="{escape(live)}"' if live else ""
    return ("<!doctype html><html lang=en><head><meta charset=utf-8>"
            '<meta name=viewport content="width=device-width, initial-scale=1">'
            f"<title>xgate · {escape(title)}</title>"
            '<link rel=stylesheet href="/ui/static/console.css"></head><body>'
            f'<header><a class=brand href="/ui/routes">xgate</a><nav>{links}</nav></header>'
            f'<main id=main{live_attr}>{main}</main>'
            '<script src="/ui/static/live.js" defer></script></body></html>')


def _when(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _spark(series: list[dict[str, float]]) -> str:
    """Rates by verdict over the kept samples as an inline SVG (no script, no image fetched)."""
    if len(series) < 2:
        return '<span class="muted">collecting…</span>'
    top = max((point[kind] for point in series for kind in KINDS), default=0.0) or 1.0
    step = SPARK_WIDTH / (len(series) - 1)
    lines = []
    for kind in KINDS:
        points = " ".join(f"{i * step:.1f},{SPARK_HEIGHT - point[kind] / top * (SPARK_HEIGHT - 2) - 1:.1f}"
                          for i, point in enumerate(series))
        lines.append(f'<polyline class="{kind}" points="{points}"/>')
    return (f'<svg class=spark width={SPARK_WIDTH} height={SPARK_HEIGHT} viewBox="0 0 {SPARK_WIDTH} {SPARK_HEIGHT}" '
            f'role=img aria-label="rates over the last minutes">{"".join(lines)}</svg>')


def routes_page(sources: Sources) -> str:
    engine, reloader = sources.engine, sources.reloader
    ruleset = engine.ref.ruleset
    out = [(f"<h1>Routes</h1><p class=muted>{ruleset.definition_count} definition(s) in force "
            f"(<code>{escape(ruleset.digest[:12])}</code>).</p>")]
    last = reloader.last_reload
    if last is None:
        out.append("<p>No reload since start.</p>")
    else:
        out.append(f'<p>Last reload: <span class="outcome {escape(last.outcome)}">{escape(last.outcome)}</span> at '
                   f"{_when(last.at)} ({escape(last.reason)})</p>")
        if last.problems:
            out.append("<ul class=problems>" + "".join(f"<li>{escape(p)}</li>" for p in last.problems) + "</ul>")
    ready, _ = engine.ready()
    out.append(f'<p>Readiness: <span class="{"up" if ready else "down"}">{"ready" if ready else "not ready"}</span>'
               "</p>")
    out.append("<table class=routes><thead><tr><th>Route</th><th>Destinations</th><th>Last minute (msg/s)</th>"
               "<th>Last 10 minutes</th><th>Judged since start</th><th>Routed</th><th>In flight</th></tr></thead><tbody>")
    for route, pipeline in engine.running_routes():
        source = route.source.endpoint_id
        stats = pipeline.stats
        down = pipeline.health.down()
        rates = sources.rates.rates(source)
        destinations = []
        for label, destination in (("conformant", route.conformant), ("nonconformant", route.nonconformant),
                                   ("unmatched", route.unmatched)):
            if destination is None:
                destinations.append(f"<li>{label}: <span class=muted>none</span></li>")
                continue
            health = (f'<span class=down title="{escape(down[destination.endpoint_id])}">down</span>'
                      if destination.endpoint_id in down else "<span class=up>up</span>")
            destinations.append(f"<li>{label} → <code>{escape(destination.endpoint_id)}</code> "
                                f"({escape(destination.protocol)}) {health}</li>")
        judged = "".join(f'<li>{kind}: <span class="count {kind}" data-route="{escape(source)}" '
                         f'data-verdict="{kind}">{stats.verdicts.get(kind, 0)}</span></li>' for kind in KINDS)
        routed = "".join(f"<li>{escape(action)}: {count}</li>" for action, count in sorted(stats.actions.items()))
        now = "".join(f'<li class={kind}>{kind}: <span class=rate data-route="{escape(source)}" '
                      f'data-verdict="{kind}">{rates[kind]:.1f}</span></li>' for kind in KINDS)
        connected = "<span class=up>connected</span>" if pipeline.connected else "<span class=down>not connected</span>"
        out.append(f"<tr><th><code>{escape(source)}</code><br><small>{escape(route.source.protocol)} · policy "
                   f"{escape(route.policy)} · {connected}</small></th><td><ul>{''.join(destinations)}</ul></td>"
                   f"<td><ul>{now}</ul></td><td>{_spark(sources.rates.series(source))}</td><td><ul>{judged}</ul></td>"
                   f"<td><ul>{routed or '<li class=muted>nothing yet</li>'}</ul></td>"
                   f"<td>{stats.inflight} of {route.inflight}<br><small>retries {stats.retries}</small></td></tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _letter_row(letter: DeadLetter) -> str:
    verdict = letter.verdict
    named = f"{verdict.messagegroupid}/{verdict.messageid}" if verdict.messageid else "—"
    first = verdict.violations[0] if verdict.violations else None
    reason = (f"<code>{escape(first.path)}</code> [{escape(first.rule.value)}] {escape(first.message)}"
              if first is not None else "")
    more = f" <small>(+{len(verdict.violations) - 1} more)</small>" if len(verdict.violations) > 1 else ""
    kind = kind_of(verdict).value  # as the routes count it: unmatched when no definition is named
    return (f'<tr><td><a href="/ui/dead-letters/{letter.number}">#{letter.number}</a></td><td>{_when(letter.received)}'
            f"</td><td><code>{escape(letter.route)}</code></td><td class=\"verdict {escape(kind)}\">"
            f"{escape(kind)}</td><td>{escape(named)}</td><td>{reason}{more}</td></tr>")


def dead_letters_page(sources: Sources, route: str | None) -> str:
    ring = sources.dead_letters
    letters = ring.latest(route)
    routes = sorted({r.source.endpoint_id for r, _ in sources.engine.running_routes()})
    choices = "".join(f'<a href="/ui/dead-letters?route={quote(r)}"{" aria-current=true" if r == route else ""}>'
                      f"{escape(r)}</a> " for r in routes)
    out = [(f"<h1>Dead letters</h1><p class=muted>The latest nonconformant and unmatched messages: "
            f"{ring.per_route} per route, {ring.max_bytes // 1024} KiB in all ({len(letters)} shown, "
            f"{ring.kept_total} since start).</p><p>Route: <a href=\"/ui/dead-letters\">all</a> {choices}</p>")]
    if not letters:
        out.append("<p>None yet.</p>")
        return "".join(out)
    out.append("<table class=letters><thead><tr><th></th><th>Judged</th><th>Route</th><th>Verdict</th>"
               "<th>Definition (closest)</th><th>Why</th></tr></thead><tbody>")
    out.extend(_letter_row(letter) for letter in letters)
    out.append("</tbody></table>")
    return "".join(out)


def dead_letter_page(sources: Sources, letter: DeadLetter) -> str:
    rules = sources.engine.ref.ruleset.endpoints.get(letter.envelope.endpoint or letter.route)
    return (f"<h1>Dead letter #{letter.number}</h1><p class=muted>Judged {_when(letter.received)} on route "
            f"<code>{escape(letter.route)}</code>; position {escape(json.dumps(letter.envelope.position, default=str))}"
            f"</p>{violations_html(letter.verdict)}"
            + message_html(letter.envelope, letter.verdict, show_bodies=sources.show_bodies,
                           redact=sources.settings.redact, rules=rules))


def registry_page(sources: Sources) -> str:
    snapshot = sources.reloader.snapshot
    registry = snapshot.registry
    counts = sources.definition_counts() if sources.definition_counts is not None else {}
    out = [("<h1>Registry</h1><p class=muted>As loaded now; the xRegistry API serves it at "
            '<a href="/registry?inline">/registry</a>.</p><h2>Endpoints</h2><table class=endpoints><thead><tr>'
            "<th>Endpoint</th><th>Protocol</th><th>Usage</th><th>Messages</th></tr></thead><tbody>")]
    for endpoint_id, endpoint in sorted(registry.endpoints.items()):
        attrs = endpoint.attrs
        usage = ", ".join(str(u) for u in attrs.get("usage") or [])
        out.append(f'<tr><td><a href="/registry/endpoints/{quote(endpoint_id)}"><code>{escape(endpoint_id)}</code></a>'
                   f'<br><small>{escape(str(attrs.get("description") or ""))}</small></td>'
                   f"<td>{escape(str(attrs.get('protocol') or ''))}</td><td>{escape(usage)}</td>"
                   f"<td>{len(endpoint.messages)}</td></tr>")
    out.append("</tbody></table><h2>Message definitions</h2>")
    # a message group's definitions, and those an endpoint declares inline (listed under the endpoint's id)
    every = dict(registry.messages)
    for endpoint in registry.endpoints.values():
        for definition in endpoint.messages:
            every.setdefault((definition.groupid, definition.messageid), definition)
    by_group: dict[str, list[Any]] = {}
    for (group, _), definition in sorted(every.items()):
        by_group.setdefault(group, []).append(definition)
    for group, definitions in by_group.items():
        collection = "messagegroups" if group in registry.messagegroups else "endpoints"
        out.append(f'<h3><a href="/registry/{collection}/{quote(group)}">{escape(group)}</a></h3><dl class=defs>')
        for definition in definitions:
            conformant = sum(v for (g, m, k), v in counts.items()
                             if g == group and m == definition.messageid and k == "conformant")
            nonconformant = sum(v for (g, m, k), v in counts.items()
                                if g == group and m == definition.messageid and k == "nonconformant")
            words = "".join(f"<li>{escape(line)}</li>" for line in definition_words(definition))
            url = f"/registry/{collection}/{quote(group)}/messages/{quote(definition.messageid)}"
            out.append(f'<dt><a href="{url}"><code>{escape(definition.messageid)}</code></a> '
                       f"<small>{conformant:.0f} conformant, {nonconformant:.0f} nonconformant since start"
                       f"</small></dt><dd><ul>{words}</ul></dd>")
        out.append("</dl>")
    if registry.schemagroups:
        out.append("<h2>Schema groups</h2><ul>")
        for group, entity in sorted(registry.schemagroups.items()):
            schemas = ", ".join(f'<a href="/registry/schemagroups/{quote(group)}/schemas/{quote(sid)}$details">'
                                f"{escape(sid)}</a>" for sid in sorted(entity.children))
            out.append(f"<li><code>{escape(group)}</code>: {schemas}</li>")
        out.append("</ul>")
    return "".join(out)


def changes_page(sources: Sources) -> str:
    out = ["<h1>Shadow and changes</h1><h2>Shadow candidate</h2>"]
    shadow = sources.engine.ref.shadow
    if shadow is None:
        out.append("<p>No candidate: put documents in <code>DIR/shadow/</code> to judge traffic with them beside "
                   "the rules in force.</p>")
    else:
        view = shadow.view()
        candidate = view["candidate"]
        out.append(f"<p>From <code>{escape(str(candidate['source']))}</code>: {candidate['definitions']} definitions; "
                   f"{view['judged']} messages judged, {view['disagreements']} disagreements.</p>")
        # the candidate keeps each message in its recorded form, which `redact` cannot reach into: with names
        # to redact, those messages are not shown at all
        shown = sources.show_bodies and not sources.settings.redact
        for item in reversed(view["latest"]):
            out.append(f'<details class=disagreement><summary>{_when(item["at"])} · <code>{escape(item["endpoint"])}'
                       f'</code> · now <b>{escape(item["active"]["verdict"])}</b>, candidate '
                       f'<b>{escape(item["candidate"]["verdict"])}</b></summary><div class=pair>'
                       f'<div><h4>Rules in force</h4><pre>{escape(json.dumps(item["active"], indent=1, default=str))}'
                       f'</pre></div><div><h4>Candidate</h4><pre>'
                       f'{escape(json.dumps(item["candidate"], indent=1, default=str))}</pre></div></div>'
                       + (f'<h4>Message</h4><pre>{escape(json.dumps(item["message"], indent=1, default=str))}</pre>'
                          if shown else "") + "</details>")
    out.append("<h2>Registry change events</h2>")
    publisher = sources.publisher
    if publisher is None:
        out.append("<p>Off (gateway.yaml <code>registry.events</code> names an endpoint to publish them to).</p>")
    elif not publisher.recent:
        out.append("<p>None since start.</p>")
    else:
        out.append("<table><thead><tr><th>Time</th><th>Type</th><th>Subject</th><th>Epoch</th><th>Changed</th>"
                   "</tr></thead><tbody>")
        for event in reversed(publisher.recent):
            data = event.get("data") or {}
            out.append(f"<tr><td>{escape(str(event.get('time')))}</td><td>{escape(str(event.get('type')))}</td>"
                       f"<td><code>{escape(str(event.get('subject')))}</code></td><td>{escape(str(data.get('epoch')))}"
                       f"</td><td>{escape(', '.join(data.get('changed') or []))}</td></tr>")
        out.append("</tbody></table>")
    out.append("<h2>Latest dry run</h2>")
    last = sources.writer.last_dry_run if sources.writer is not None else None
    if last is None:
        out.append("<p>None since start (a registry write with <code>?dryrun=true</code>).</p>")
    else:
        method, path, answer = last
        out.append(f"<p><code>{escape(method)} {escape(path)}</code>: {escape(str(answer.get('summary', '')))}</p>"
                   f"<pre>{escape(json.dumps(answer, indent=1, default=str)[:20000])}</pre>")
    return "".join(out)


def try_page(sources: Sources, text: str = "", endpoint: str = "", answer: str = "") -> str:
    endpoints = sorted(sources.engine.ref.ruleset.endpoints)
    options = "".join(f'<option value="{escape(e)}"{" selected" if e == endpoint else ""}>{escape(e)}</option>'
                      for e in endpoints)
    return ("<h1>Try a message</h1><p class=muted>Paste a recorded message (the form <code>xgate check</code> "
            "reads) or a bare CloudEvent (JSON, sent in structured mode on the endpoint's protocol). It is judged "
            "here with the rules in force and sent nowhere.</p>"
            '<form method=post action="/ui/try"><label>Endpoint <select name=endpoint>'
            f'<option value="">(the message\'s own)</option>{options}</select></label>'
            f'<textarea name=message rows=12 spellcheck=false required>{escape(text)}</textarea>'
            "<button type=submit>Judge</button></form>" + answer)
