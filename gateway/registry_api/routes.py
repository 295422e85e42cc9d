"""`/registry`: the read-only xRegistry HTTP API (core/http.md) over the registry `xgate run` loaded.

    /registry                                           the Registry entity (`?inline`, `?filter`)
    /registry/capabilities, /registry/model             what this server supports, its model
    /registry/<GROUPS>[/<GID>]                          endpoints, messagegroups, schemagroups
    /registry/<GROUPS>/<GID>/<RESOURCES>[/<RID>]        messages (both group types), schemas
    /registry/<GROUPS>/<GID>/<RESOURCES>/<RID>/meta
    /registry/<GROUPS>/<GID>/<RESOURCES>/<RID>/versions[/<VID>]

Schemas have a domain document (`hasdocument`): `.../schemas/<RID>` and `.../versions/<VID>` answer with
the schema itself (or `303 See Other` to where it lives) and `xRegistry-` headers; `$details` appended to
the id asks for the metadata. Only GET, HEAD and OPTIONS are supported; errors are the spec's problem
details. `RegistryView.update` takes each loaded snapshot (startup and every reload) and keeps epochs.
"""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urljoin

from aiohttp import web

from gateway.registry_api.model import MODEL
from gateway.registry_api.query import (
    NO_INLINE,
    ROOT,
    Level,
    QueryError,
    level_of,
    parse_filters,
    parse_inline,
)
from gateway.registry_api.render import CAPABILITIES, DETAILS, Chain, Renderer
from gateway.registry_api.tree import GROUPS, Node
from gateway.registry_api.view import ApiState, RegistryView

PREFIX = "/registry"
ALLOW = "GET, HEAD, OPTIONS"
SPEC = "https://github.com/xregistry/spec/blob/main/core/"
JSON_TYPE = "application/json"


# -- errors ---------------------------------------------------------------------------------------------------------

class ApiError(Exception):
    """An xRegistry error (core spec "Error Processing"), served as problem details JSON."""

    def __init__(self, status: int, code: str, title: str, subject: str | None = None,
                 args: dict[str, str] | None = None, *, spec: str = "spec.md",
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(title)
        self.status, self.headers = status, headers or {}
        self.body: dict[str, Any] = {"type": f"{SPEC}{spec}#{code}", "title": title}
        if subject is not None:
            self.body["subject"] = subject
        if args:
            self.body["args"] = args

    def response(self) -> web.Response:
        return _json(self.body, self.status, self.headers)


def not_found(xid: str) -> ApiError:
    return ApiError(404, "not_found", f"The targeted entity ({xid}) cannot be found.", xid)


def api_not_found(path: str) -> ApiError:
    return ApiError(404, "api_not_found", f"The specified API is not supported: {path}.", path, spec="http.md")


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    text = json.dumps(body, ensure_ascii=False, default=str, indent=2) + "\n"
    return web.Response(text=text, status=status, content_type=JSON_TYPE, charset="utf-8", headers=headers)


# -- where a request points --------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Target:
    """An entity (`node`), a collection (`plural` of `node`), a Resource's `meta`, or a fixed document."""

    kind: str                      # entity | collection | meta | capabilities | model
    node: Node
    level: Level                   # the entity's level; for a collection its members'
    plural: str = ""
    document: bool = False         # a schema or schema Version without `$details`: answer with the document


def _split_details(segment: str) -> tuple[str, bool]:
    return (segment[:-len(DETAILS)], True) if segment.endswith(DETAILS) else (segment, False)


def locate(root: Node, segments: list[str], path: str) -> Target:
    """The target of `/registry/<segments>`; raises ApiError (api_not_found, not_found, bad_details)."""
    if not segments:
        return Target("entity", root, ROOT)
    if len(segments) == 1 and segments[0] in ("capabilities", "model"):
        return Target(segments[0], root, ROOT)
    plural = segments[0]
    gtype = GROUPS.get(plural)
    if gtype is None:
        raise api_not_found(path)
    if len(segments) == 1:
        return Target("collection", root, level_of(plural), plural)
    gid, details = _split_details(segments[1])
    group = root.collections[plural].get(gid)
    if details:
        raise ApiError(400, "bad_details", f'Use of "$details" in this context is not allowed: {path}.', path)
    if group is None:
        raise not_found(f"/{plural}/{gid}")
    if len(segments) == 2:
        return Target("entity", group, level_of(plural))
    rplural = segments[2]
    if rplural not in group.collections:
        raise api_not_found(path)
    if len(segments) == 3:
        return Target("collection", group, level_of(plural, rplural), rplural)
    return _locate_resource(group, plural, rplural, segments[3:], path)


def _locate_resource(group: Node, plural: str, rplural: str, rest: list[str], path: str) -> Target:
    rid, details = _split_details(rest[0])
    resource = group.collections[rplural].get(rid)
    if resource is None:
        raise not_found(f"{group.xid}/{rplural}/{rid}")
    hasdocument = bool(resource.resource and resource.resource.hasdocument)
    if len(rest) == 1:
        return Target("entity", resource, level_of(plural, rplural), document=hasdocument and not details)
    if details:
        raise ApiError(400, "bad_details", f'Use of "$details" in this context is not allowed: {path}.', path)
    if rest[1:] == ["meta"]:
        return Target("meta", resource, Level("meta"))
    if rest[1] != "versions" or len(rest) > 3:
        raise api_not_found(path)
    if len(rest) == 2:
        return Target("collection", resource, level_of(plural, rplural, version=True), "versions")
    vid, details = _split_details(rest[2])
    version = resource.collections["versions"].get(vid)
    if version is None:
        raise not_found(f"{resource.xid}/versions/{vid}")
    return Target("entity", version, level_of(plural, rplural, version=True),
                  document=hasdocument and not details)


# -- answering -------------------------------------------------------------------------------------------------------

def _header_value(value: Any) -> str:
    """HTTP binding "HTTP Header Values": percent-encode space, `"`, `%` and anything outside printable ASCII."""
    text = json.dumps(value) if isinstance(value, bool) else str(value)
    return "".join(c if 0x21 <= ord(c) <= 0x7E and c not in '"%' else
                   "".join(f"%{b:02X}" for b in c.encode("utf-8")) for c in text)


def _document(renderer: Renderer, target: Target) -> web.Response:
    """A schema (Resource: its default Version) as its own document, metadata in `xRegistry-` headers."""
    node = target.node
    version = node.default_version() if node.kind == "resource" else node
    if version is None:
        raise not_found(f"{node.xid}/versions")
    meta = renderer.entity(node, ())
    headers = {f"xRegistry-{k}": _header_value(v) for k, v in meta.items()
               if v is not None and not isinstance(v, (dict, list))}
    headers["Content-Disposition"] = _header_value(version.owner or node.id)
    if node.kind == "resource":
        headers["Content-Location"] = renderer.url(version.xid)
    attrs = version.attrs
    if "schema" in attrs:
        content = attrs["schema"]
        if isinstance(content, str):
            return web.Response(text=content, content_type="text/plain", charset="utf-8", headers=headers)
        body = json.dumps(content, ensure_ascii=False, default=str, indent=2) + "\n"
        return web.Response(text=body, content_type=JSON_TYPE, charset="utf-8", headers=headers)
    if "schemabase64" in attrs:
        try:
            data = base64.b64decode(str(attrs["schemabase64"]))
        except ValueError:
            data = b""
        return web.Response(body=data, content_type="application/octet-stream", headers=headers)
    if "schemaurl" in attrs:
        headers["Location"] = urljoin(renderer.self_url(version), str(attrs["schemaurl"]))
        return web.Response(status=303, headers=headers)
    return web.Response(status=204, headers=headers)


def answer(state: ApiState, base: str, path: str, query: Any) -> web.Response:
    """The response to GET `path` (below /registry) with `query` (a MultiDict of the request's flags)."""
    segments = [unquote(s) for s in path.strip("/").split("/")] if path.strip("/") else []
    full = PREFIX + (path or "")
    try:
        target = locate(state.root, segments, full)
        if target.kind == "capabilities":
            return _json(CAPABILITIES)
        if target.kind == "model":
            return _json(MODEL)
        collection = target.kind == "collection"
        prefix = (target.plural,) if collection else ()
        inline = parse_inline(query.getall("inline"), target.level) if "inline" in query else NO_INLINE
        filters, exclude_all = parse_filters(query.getall("filter", []), target.level, prefix)
    except QueryError as exc:
        return ApiError(400, f"bad_{exc.flag}", f'For "{full}", an error was found in "{exc.flag}" value '
                        f"({exc.value}): {exc.detail}.", full, {"value": exc.value, "error_detail": exc.detail}
                        ).response()
    except ApiError as exc:
        return exc.response()
    renderer = Renderer(base, state.stamps, inline, filters)
    node = target.node
    if collection:
        if exclude_all:
            return _json({})
        owner = Chain((node,))
        members = renderer.members(owner, target.plural)
        return _json({mid: renderer.entity(member, (), owner.down(target.plural, member))
                      for mid, member in members.items()})
    if target.kind == "meta":
        meta = renderer.meta(node)
        if exclude_all or filters and not any(all(e.holds(meta) for e in f.expressions) for f in filters):
            return not_found(node.meta_xid).response()
        return _json(meta)
    if exclude_all or not renderer.target_admitted(node):
        return not_found(node.xid).response()
    if target.document:
        try:
            return _document(renderer, target)
        except ApiError as exc:
            return exc.response()
    return _json(renderer.entity(node, ()))


def add_registry_routes(app: web.Application, view: RegistryView) -> None:
    """Serve `view` under /registry on `app` (the metrics server: its TLS and basic auth apply)."""

    async def handle(request: web.Request) -> web.StreamResponse:
        path = request.rel_url.raw_path[len(PREFIX):]
        if request.method == "OPTIONS":
            return web.Response(headers={"Allow": ALLOW, "Access-Control-Allow-Methods": ALLOW})
        if request.method not in ("GET", "HEAD"):
            return ApiError(405, "action_not_supported", f"The specified action ({request.method}) is not "
                            f"supported for: {PREFIX + path}.", PREFIX + path, {"action": request.method},
                            headers={"Allow": ALLOW}).response()
        base = f"{request.scheme}://{request.host}{PREFIX}"
        # rendering a large registry is CPU work: keep it off the loop the pipelines run on
        return await asyncio.to_thread(answer, view.state, base, path, request.query)

    app.router.add_route("*", PREFIX, handle)
    app.router.add_route("*", PREFIX + "/{tail:.*}", handle)
