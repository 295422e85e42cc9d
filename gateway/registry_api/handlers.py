"""`/registry`: the read-only xRegistry HTTP API (core/http.md) over the registry `xgate run` loaded.

    /registry                                           the Registry entity (`?inline`, `?filter`)
    /registry/capabilities, /registry/model             what this server supports, its model
    /registry/<GROUPS>[/<GID>]                          endpoints, messagegroups, schemagroups
    /registry/<GROUPS>/<GID>/<RESOURCES>[/<RID>]        messages (both group types), schemas
    /registry/<GROUPS>/<GID>/<RESOURCES>/<RID>/meta
    /registry/<GROUPS>/<GID>/<RESOURCES>/<RID>/versions[/<VID>]

Schemas have a domain document (`hasdocument`): `.../schemas/<RID>` and `.../versions/<VID>` answer with
the schema itself (or `303 See Other` to where it lives) and `xRegistry-` headers; `$details` appended to
the id asks for the metadata. GET, HEAD and OPTIONS are served here; PUT, POST, PATCH and DELETE by write.py
when gateway.yaml `registry.write` allows them. Errors are the spec's problem details. `RegistryView.update` takes each loaded snapshot (startup and every reload) and keeps epochs.

The same routes serve at the root of an address of its own (`prefix=""`, gateway.yaml `registry.address`),
and build self URLs from `registry.base_url` when set (behind a proxy) rather than from the request's Host.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urljoin

from aiohttp import web

from gateway.registry_api.errors import JSON_TYPE, ApiError, api_not_found, not_found
from gateway.registry_api.errors import json_response as _json
from gateway.registry_api.query import (
    NO_INLINE,
    ROOT,
    Level,
    QueryError,
    level_of,
    parse_filters,
    parse_inline,
)
from gateway.registry_api.registry_model import MODEL
from gateway.registry_api.render import DETAILS, Chain, Renderer, capabilities
from gateway.registry_api.served import ApiState, RegistryView
from gateway.registry_api.tree import GROUPS, Node
from gateway.registry_api.write import ALLOW as WRITE_ALLOW
from gateway.registry_api.write import WRITES, RegistryWriter

PREFIX = "/registry"
ALLOW = "GET, HEAD, OPTIONS"
MEDIA_TYPE = re.compile(r"[!-~][ -~]*")  # printable ASCII: what a header value can carry as is
HEADER_KEY = re.compile(r"[A-Za-z0-9._~-]+")  # attribute names and map keys that can be part of a header name


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


def bad_details(path: str) -> ApiError:
    return ApiError(400, "bad_details", f'Use of "$details" in this context is not allowed: {path}.', path)


def api_known(segments: list[str]) -> bool:
    """Is the path one of the APIs this server offers (HTTP binding "HTTP API Patterns"), whatever the ids?
    The optional `/capabilitiesoffered`, `/modelsource` and `/export` are not (`api_not_found`)."""
    names = [_split_details(s)[0] for s in segments]
    if not names:
        return True
    gtype = GROUPS.get(names[0])
    if len(names) == 1:
        return names[0] in ("capabilities", "model") or gtype is not None
    if gtype is None:
        return False
    if len(names) <= 2:
        return True
    if names[2] not in {r.plural for r in gtype.resources}:
        return False
    rest = names[4:]
    return len(names) <= 4 or rest in (["meta"], ["versions"]) or (len(rest) == 2 and rest[0] == "versions")


def locate(root: Node, segments: list[str], path: str) -> Target:
    """The target of a known API path (`api_known`); raises ApiError (not_found, bad_details)."""
    if not segments:
        return Target("entity", root, ROOT)
    plural, details = _split_details(segments[0])
    if details:
        raise bad_details(path)  # `$details` only follows a Resource's or Version's id
    if len(segments) == 1 and plural in ("capabilities", "model"):
        return Target(plural, root, ROOT)
    if len(segments) == 1:
        return Target("collection", root, level_of(plural), plural)
    gid, details = _split_details(segments[1])
    if details:
        raise bad_details(path)
    group = root.collections[plural].get(gid)
    if group is None:
        raise not_found(f"/{plural}/{gid}")
    if len(segments) == 2:
        return Target("entity", group, level_of(plural))
    rplural, details = _split_details(segments[2])
    if details:
        raise bad_details(path)
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
    if details or _split_details(rest[1])[1]:
        raise bad_details(path)  # on the Resource id before `/meta` or `/versions`, or on `meta`/`versions`
    if rest[1] == "meta":
        return Target("meta", resource, Level("meta"))
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


def _headers(meta: dict[str, Any]) -> dict[str, str]:
    """`xRegistry-` headers of the top-level scalars, and of each key of a map of scalars (`labels`)."""
    headers = {f"xRegistry-{k}": _header_value(v) for k, v in meta.items()  # a name no header can carry: body only
               if v is not None and not isinstance(v, (dict, list)) and k != "contenttype" and HEADER_KEY.fullmatch(k)}
    for name, value in meta.items():
        if isinstance(value, dict) and all(isinstance(v, (str, int, float, bool)) for v in value.values()):
            headers.update({f"xRegistry-{name}.{key}": _header_value(v) for key, v in value.items()
                            if HEADER_KEY.fullmatch(str(key))})
    return headers


def _document(renderer: Renderer, target: Target) -> web.Response:
    """A schema (Resource: its default Version) as its own document, metadata in `xRegistry-` headers."""
    node = target.node
    version = node.default_version() if node.kind == "resource" else node
    if version is None:
        raise not_found(f"{node.xid}/versions")
    meta = renderer.entity(node, ())
    headers = _headers(meta)
    headers["Content-Disposition"] = _header_value(version.owner or node.id)
    if node.kind == "resource":  # http.md: "same as meta.defaultversionurl" (which names the `$details` form)
        headers["Content-Location"] = renderer.self_url(version)
    attrs = version.attrs
    if "schemaurl" in attrs and "schema" not in attrs and "schemabase64" not in attrs:
        headers["Location"] = urljoin(renderer.self_url(version), str(attrs["schemaurl"]))
        return web.Response(status=303, headers=headers)
    if "schema" in attrs:
        content = attrs["schema"]
        text = content if isinstance(content, str) else \
            json.dumps(content, ensure_ascii=False, default=str, indent=2) + "\n"
        data, kind = text.encode("utf-8"), "text/plain; charset=utf-8" if isinstance(content, str) else \
            f"{JSON_TYPE}; charset=utf-8"
    elif "schemabase64" in attrs:
        try:
            data = base64.b64decode(str(attrs["schemabase64"]))
        except ValueError:
            data = b""
        kind = "application/octet-stream"
    else:
        return web.Response(status=204, headers=headers)
    # the Version's `contenttype`, when the document gave one, is the body's Content-Type (HTTP binding)
    declared = str(meta.get("contenttype") or "")
    headers["Content-Type"] = declared if MEDIA_TYPE.fullmatch(declared) else kind
    return web.Response(body=data, headers=headers)


def _query_error(exc: QueryError, full: str) -> web.Response:
    if exc.flag == "available":  # `inline=modelsource`: metadata this server does not offer
        return ApiError(400, "not_available", f"The requested data ({exc.value}) is not available.",
                        exc.value).response()
    return ApiError(400, f"bad_{exc.flag}", f'For "{full}", an error was found in "{exc.flag}" value '
                    f"({exc.value}): {exc.detail}.", full, {"value": exc.value, "error_detail": exc.detail}
                    ).response()


def answer(state: ApiState, base: str, path: str, query: Any, prefix: str = PREFIX) -> web.Response:
    """The response to GET `path` (below `prefix`) with `query` (a MultiDict of the request's flags)."""
    segments = [unquote(s) for s in path.strip("/").split("/")] if path.strip("/") else []
    full = prefix + (path or "") or "/"
    if not api_known(segments):
        return api_not_found(full).response()
    try:
        target = locate(state.root, segments, full)
        if target.kind == "capabilities":
            return _json(capabilities(state.editable is not None))
        if target.kind == "model":
            return _json(MODEL)
        collection = target.kind == "collection"
        prefix_colls = (target.plural,) if collection else ()
        inline = parse_inline(query.getall("inline"), target.level) if "inline" in query else NO_INLINE
        filters, exclude_all = parse_filters(query.getall("filter", []), target.level, prefix_colls)
        renderer = Renderer(base, state.stamps, inline, filters, editable=state.editable)
        return _render(renderer, target, exclude_all)
    except QueryError as exc:  # also from filter evaluation (a number compared with text)
        return _query_error(exc, full)
    except ApiError as exc:
        return exc.response()


def _render(renderer: Renderer, target: Target, exclude_all: bool) -> web.Response:
    node = target.node
    filters = renderer.filters
    if target.kind == "collection":
        if exclude_all:
            return _json({})
        owner = Chain((node,))
        members = renderer.members(owner, target.plural)
        return _json({mid: renderer.entity(member, (), owner.down(target.plural, member))
                      for mid, member in members.items()})
    if target.kind == "meta":
        meta = renderer.meta(node)
        if exclude_all or filters and not any(all(e.holds(meta) for e in f.expressions) for f in filters):
            raise not_found(node.meta_xid)
        return _json(meta)
    if exclude_all or not renderer.target_admitted(node):
        raise not_found(node.xid)
    if target.document:
        return _document(renderer, target)
    return _json(renderer.entity(node, ()))


def add_registry_routes(app: web.Application, view: RegistryView, *, prefix: str = PREFIX,
                        base_url: str | None = None, writer: RegistryWriter | None = None) -> None:
    """Serve `view` under `prefix` on `app` ("" : at the root of an address of its own). Self URLs start with
    `base_url` when set (behind a proxy), else with the request's scheme, Host and `prefix`. Every answer,
    errors and the server's own 401 included, carries `Link: <root>;rel=xregistry-root` (HTTP binding
    "xRegistry Root HTTP Header"). With a `writer` (gateway.yaml `registry.write`), PUT, POST, PATCH and DELETE
    go to it (write.py)."""
    allow = WRITE_ALLOW if writer is not None else ALLOW

    def base_of(request: web.Request) -> str:
        return base_url.rstrip("/") if base_url else f"{request.scheme}://{request.host}{prefix}"

    def mine(request: web.Request) -> bool:
        return not prefix or request.path == prefix or request.path.startswith(prefix + "/")

    async def handle(request: web.Request) -> web.StreamResponse:
        path = request.rel_url.raw_path[len(prefix):]
        segments = [unquote(s) for s in path.strip("/").split("/")] if path.strip("/") else []
        full = prefix + path or "/"
        if not api_known(segments):
            return api_not_found(full).response()  # whatever the method (HTTP binding "HTTP API Patterns")
        if request.method == "OPTIONS":
            editable = view.state.editable
            # below a group the operator owns (a dropped file, a registry source), writes answer 405: not offered
            offered = allow if editable is None or len(segments) < 2 or editable(segments[0], segments[1]) \
                else ALLOW
            return web.Response(headers={"Allow": offered, "Access-Control-Allow-Methods": offered})
        if writer is not None and request.method in WRITES:
            return await writer.handle(request, path, base_of(request), full, answer)
        if request.method not in ("GET", "HEAD"):
            return ApiError(405, "action_not_supported", f"The specified action ({request.method}) is not "
                            f"supported for: {full}.", full, {"action": request.method},
                            headers={"Allow": ALLOW}, detail="writes are off: gateway.yaml registry.write turns "
                            "them on" if request.method in WRITES else None).response()
        # rendering a large registry is CPU work: keep it off the loop the pipelines run on
        return await asyncio.to_thread(answer, view.state, base_of(request), path, request.query, prefix)

    async def add_link(request: web.Request, response: web.StreamResponse) -> None:
        if mine(request):
            response.headers["Link"] = f"<{base_of(request)}>;rel=xregistry-root"

    app.on_response_prepare.append(add_link)
    if prefix:
        app.router.add_route("*", prefix, handle)
        app.router.add_route("*", prefix + "/{tail:.*}", handle)
    else:
        app.router.add_route("*", "/{tail:.*}", handle)
