"""PUT, POST, PATCH and DELETE under `/registry` (core/http.md), on when gateway.yaml has `registry.write`.

A write becomes a document in the config directory (store.py: one file per written group) and goes through
the load -> compile -> swap path of a dropped file: the request is applied to the stored groups (edit.py),
the new files are staged and the whole directory loaded and compiled with them (candidate.py); a write that
would not load, compile or route is refused with the spec's problem details (each error by file, pointer and
reason in `errors`) and changes nothing. Otherwise the files are renamed into place and the reloader swaps the
new ruleset in before the answer goes out, so the answer carries the entity with its new epoch and the
pipeline judges with it from then on. Writers are serialized: by the reloader's lock in this process (held
from the check to the swap, so no other reload runs between them) and by a file lock across processes.

Groups that came from a file the operator dropped, or from a registry source or fetched reference, are
read-only here (`action_not_supported`, saying where the group comes from): the API only ever edits its own
files. Each answer carries `xRegistry-xregcorrelationid`, the id the change events of this write carry
(core/events.md).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote

from aiohttp import web

from gateway import durable
from gateway.compiler import Ruleset
from gateway.envelope import Envelope
from gateway.limits import Limits
from gateway.loader import Snapshot
from gateway.loader.fetch import RemoteFetcher
from gateway.loader.sources import RegistrySources
from gateway.registry_api import store
from gateway.registry_api.access import WriteAccess
from gateway.registry_api.candidate import Checked, Loading, new_problems
from gateway.registry_api.dryrun import dry_run_report
from gateway.registry_api.edit import REGISTRY_READ_ONLY, Editor, rewrite_local_refs
from gateway.registry_api.endpoint_policy import EndpointPolicy
from gateway.registry_api.errors import ApiError, json_response
from gateway.registry_api.query import NO_INLINE
from gateway.registry_api.render import DETAILS, Renderer
from gateway.registry_api.served import ApiState, RegistryView
from gateway.registry_api.tree import GROUPS, GroupType, Node, ResourceType, now_text
from gateway.routes.resolve import Route
from gateway.schemaregistry.config import SchemaRegistrySettings
from gateway.settings import Settings

WRITES = ("PUT", "POST", "PATCH", "DELETE")
ALLOW = "GET, HEAD, OPTIONS, PUT, POST, PATCH, DELETE"
READ_ALLOW = "GET, HEAD, OPTIONS"
CORRELATION_HEADER = "xRegistry-xregcorrelationid"
GetAnswer = Callable[[ApiState, str, str, Any], web.Response]


class Reloading(Protocol):
    """What a write needs of the reloader in force (gateway/runtime/reload.py `Reloader`)."""

    snapshot: Snapshot
    settings: Settings
    fetcher: RemoteFetcher | None
    schemaregistries: dict[str, SchemaRegistrySettings]
    sources: RegistrySources
    limits: Limits

    @property
    def lock(self) -> asyncio.Lock: ...

    async def reload_locked(self, reason: str) -> str: ...

    def active_ruleset(self) -> Ruleset: ...

    def recent_traffic(self) -> dict[str, list[Envelope]]: ...


@dataclass(frozen=True)
class Request:
    method: str
    segments: list[str]          # path segments below the registry root, `$details` kept on ids
    path: str                    # the request path, for error subjects
    body: bytes
    headers: dict[str, str]
    epoch: str | None            # the `?epoch=` flag of a delete
    dryrun: bool = False         # `?dryrun` or `?dryrun=true`: answer what the write would do, do nothing


def _split(segment: str) -> tuple[str, bool]:
    return (segment[:-len(DETAILS)], True) if segment.endswith(DETAILS) else (segment, False)


def not_supported(method: str, path: str, why: str) -> ApiError:
    return ApiError(405, "action_not_supported", f"The specified action ({method}) is not supported for: {path}.",
                    path, {"action": method}, headers={"Allow": READ_ALLOW}, detail=why)


def _json_body(request: Request, *, optional: bool = False) -> Any:
    if not request.body.strip():
        if optional:
            return None
        raise ApiError(400, "missing_body", f"The request is missing an HTTP body - try '{{}}': {request.path}.",
                       request.path, spec="http.md")
    try:
        return json.loads(request.body)
    except ValueError as exc:
        raise ApiError(400, "parsing_data", f"There was an error parsing the data: {exc}.", request.path,
                       {"error_detail": str(exc)}) from None
    except RecursionError:  # Python's json recurses per level: a body nested 100,000 deep must be a 400
        raise _too_deep(request.path) from None


def _too_deep(path: str) -> ApiError:
    return ApiError(400, "parsing_data", "There was an error parsing the data: it is nested too deeply.", path,
                    {"error_detail": "nested too deeply"})


def _origins(snapshot: Snapshot, plural: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for summary in snapshot.files:
        for gid in getattr(summary, plural):
            out.setdefault(gid, []).append(summary.file)
    return out


class RegistryWriter:
    def __init__(self, config_dir: str | Path, view: RegistryView, access: WriteAccess, reloader: Reloading,
                 adapter_problems: Callable[[list[Route]], dict[str, str]]) -> None:
        self.config_dir = Path(config_dir).resolve()
        self.view, self.access, self.reloader = view, access, reloader
        self.adapter_problems = adapter_problems
        self.endpoints = EndpointPolicy(access.settings.endpoints, access.settings.addresses)
        # (the reloader's digest after the last write, the directory's errors then): the next write's "before"
        # while nothing else was reloaded since, so a write loads and compiles the registry once, not twice
        self._known: tuple[str, list[Any]] | None = None
        # (snapshot digest, each group's files by plural): who owns a group, worked out once per snapshot
        self._origins: tuple[str, dict[str, dict[str, list[str]]]] | None = None
        self.last_dry_run: tuple[str, str, dict[str, Any]] | None = None  # (method, path, answer): the console's
        view.allow_writes(self.owns)  # the read side now says which entities are editable

    def owns(self, plural: str, gid: str) -> bool:
        """Whether a write reaches the group: it is the API's own file, or not there yet (a write makes it)."""
        return self._refusal(plural, gid) is None

    def _refusal(self, plural: str, gid: str) -> str | None:
        """Why a write may not touch the group, or None: one the operator dropped, or that a registry source or
        a fetched reference serves, is read-only through the API."""
        snapshot = self.reloader.snapshot
        known = self._origins
        if known is None or known[0] != snapshot.digest:
            known = self._origins = (snapshot.digest, {p: _origins(snapshot, p) for p in GROUPS})
        files = known[1].get(plural, {}).get(gid, [])
        foreign = [f for f in files if f != str(store.group_path(self.config_dir, plural, gid))]
        if foreign:
            remote = foreign[0].startswith(("http://", "https://"))
            return (f"/{plural}/{gid} comes from {'the registry source ' if remote else 'the file '}{foreign[0]}, "
                    "which the operator manages: it is read-only through the API")
        if not files and gid in self.view.state.root.collections.get(plural, {}):
            return f"/{plural}/{gid} is known only through a fetched reference: it is read-only through the API"
        return None

    def _relative(self, text: str) -> str:
        """`text` with the config directory's absolute path taken out of every file name in it."""
        return text.replace(f"{self.config_dir}{os.sep}", "")

    def _loading(self) -> Loading:
        r = self.reloader
        return Loading(self.config_dir, r.settings, r.fetcher, r.schemaregistries, r.sources.documents(), r.limits,
                       self.adapter_problems)

    # -- HTTP ----------------------------------------------------------------------------------------------------
    async def handle(self, request: web.Request, path: str, base: str, full: str, get: GetAnswer
                     ) -> web.StreamResponse:
        """Answer a write to `path` (below the registry root `base`); `get` is the read side's answer to a GET
        (routes.answer, handed in: routes imports this module), which a successful write answers with."""
        if not self.access.accepts(request.headers):
            return ApiError(401, "unauthorized", f"Writing to this registry needs credentials: {full}.", full,
                            spec="", headers=self.access.challenge(),
                            detail="give the API key as X-API-Key (or Authorization: Bearer), or basic auth, as "
                                   "gateway.yaml registry.write names them").response()
        segments = [unquote(s) for s in path.strip("/").split("/")] if path.strip("/") else []
        epoch = request.query.get("epoch")
        headers = {k: v for k, v in request.headers.items()}
        dryrun = request.query.get("dryrun", "false").lower() in ("", "true")
        req = Request(request.method, segments, full, await request.read(), headers, epoch, dryrun)
        correlation = uuid.uuid4().hex
        try:
            if req.dryrun:
                answer = await self._dry_run(req)
                self.last_dry_run = (req.method, req.path, answer)  # the console shows the latest
                return json_response(answer, 200, {CORRELATION_HEADER: correlation})
            shape, plan, status = await self._write(req, correlation)
        except ApiError as exc:
            exc.headers.setdefault(CORRELATION_HEADER, correlation)
            return exc.response()
        answer_path = path
        if req.method == "POST" and len(segments) == 4 and plan.new_version is not None:
            # POST to a Resource answers with the Version it wrote, in the request's form ($details or not)
            answer_path = plan.new_version + (DETAILS if segments[3].endswith(DETAILS) else "")
        return self._answer(base, answer_path, request, shape, plan, status, correlation, get)

    # -- the write -----------------------------------------------------------------------------------------------
    def _planned(self, req: Request) -> tuple[str, Any, list[Any] | None]:
        """The request applied to the stored groups and checked for endpoint policy (under the lock): its answer
        shape, its plan, and the directory's errors now when the last write left them (else None)."""
        state, snapshot = self.view.state, self.reloader.snapshot
        editor = Editor(state.root, state.stamps, self._stored_reader(req), now_text())
        shape = self._dispatch(editor, req)
        self._check_endpoints(editor.plan.groups, req)
        known = self._known
        return shape, editor.plan, known[1] if known is not None and known[0] == snapshot.digest else None

    async def _write(self, req: Request, correlation: str) -> tuple[str, Any, int]:
        async with self.reloader.lock:
            shape, plan, before = self._planned(req)
            if not plan.groups:
                return shape, plan, 200
            expected, after = await asyncio.to_thread(self._commit, self._loading(), plan.groups, req.path, before)
            self.view.correlation, self.view.moment = correlation, plan.now
            try:
                await self.reloader.reload_locked(f"registry write: {req.method} {req.path}")
            finally:
                self.view.correlation = self.view.moment = None
            self._known = (self.reloader.snapshot.digest, after)
            taken = self.reloader.snapshot.contents
            if any(taken.get(str(path)) != data for path, data in expected.items()):
                raise ApiError(500, "server_error", "An unexpected error occurred, please try again later.",
                               req.path, detail="the reload after the write did not take the written files; "
                                                "see the gateway's log")
            return shape, plan, 201 if plan.created else 200

    async def _dry_run(self, req: Request) -> dict[str, Any]:
        """What the write would do, done as far as the check and no further (dryrun.py says what is answered)."""
        async with self.reloader.lock:
            _, plan, before = self._planned(req)
            _, checked = await asyncio.to_thread(self._staged_check, self._loading(), plan.groups, req.path, before,
                                                 False)
            return await asyncio.to_thread(dry_run_report, self.reloader.snapshot.registry,
                                           self.reloader.active_ruleset(), checked, self.reloader.recent_traffic(),
                                           req.path)

    def _check_endpoints(self, groups: dict[tuple[str, str], dict[str, Any] | None], req: Request) -> None:
        """Endpoints are written only with their own permission, and name no address the policy refuses."""
        for (plural, eid), body in groups.items():
            if plural != "endpoints":
                continue
            if not self.endpoints.allowed:
                raise not_supported(req.method, req.path, f"/endpoints/{eid}: endpoints are written through the API "
                                    "only when gateway.yaml registry.write.endpoints is true")
            refusal = self.endpoints.refusal(body) if body is not None else None
            if refusal is not None:
                raise ApiError(400, "invalid_attribute", f'The attribute "endpoints" for "/endpoints/{eid}" is not '
                               f"valid: {refusal}.", f"/endpoints/{eid}",
                               {"name": "endpoints", "error_detail": refusal})

    def _commit(self, loading: Loading, groups: dict[tuple[str, str], dict[str, Any] | None], subject: str,
                before: list[Any] | None = None) -> tuple[dict[Path, bytes | None], list[Any]]:
        """Stage, check and put in place the new group files (blocking: runs in a thread, under the file lock)."""
        contents, checked = self._staged_check(loading, groups, subject, before, True)
        return contents, checked.every

    def _staged_check(self, loading: Loading, groups: dict[tuple[str, str], dict[str, Any] | None], subject: str,
                      before: list[Any] | None, commit: bool) -> tuple[dict[Path, bytes | None], Checked]:
        """Stage the new group files and check the directory with them; put them in place when `commit` (a dry
        run leaves them out). A write that adds errors is refused either way (blocking: runs in a thread, under
        the file lock)."""
        with store.exclusive(self.config_dir):
            staged: dict[Path, Path | None] = {}
            contents: dict[Path, bytes | None] = {}
            try:
                for (plural, gid), body in groups.items():
                    final = store.group_path(self.config_dir, plural, gid)
                    data = contents[final] = store.encode_group(plural, gid, body) if body is not None else None
                    staged[final] = store.stage(final, data) if data is not None else None
                checked = new_problems(loading, staged, before)
                # a client learns file names relative to the config directory, never the server's layout
                problems = [replace(p, file=self._relative(p.file), message=self._relative(p.message))
                            for p in checked.new]
                if problems:
                    first = problems[0]
                    raise ApiError(400, "bad_request", f"The request would leave the registry unable to load or "
                                   f"compile: {first.message}.", subject, {"error_detail": first.message},
                                   detail="; ".join(str(p) for p in problems[:20]),
                                   errors=[{"file": p.file, "pointer": p.pointer, "message": p.message,
                                            "severity": p.severity.value} for p in problems[:50]])
                for final, aside in staged.items() if commit else ():
                    if aside is not None:
                        durable.commit(aside, final)
                    else:
                        durable.remove(final)
            finally:
                for aside in staged.values():
                    if aside is not None and aside.exists():
                        aside.unlink()
        return contents, checked

    def _stored_reader(self, req: Request) -> Callable[[str, str], dict[str, Any] | None]:
        """Reads a group's stored body; refuses one the API does not own (its origin says why)."""
        def stored(plural: str, gid: str) -> dict[str, Any] | None:
            refusal = self._refusal(plural, gid)
            if refusal is not None:
                raise not_supported(req.method, req.path, refusal)
            return store.read_group(store.group_path(self.config_dir, plural, gid), plural, gid)
        return stored

    # -- which entity, which method ------------------------------------------------------------------------------
    def _dispatch(self, editor: Editor, req: Request) -> str:
        """Apply the request to `editor`; the shape of the answer: entity, map, nested, registry or none."""
        names = [_split(s)[0] for s in req.segments]
        depth = len(names)
        if depth == 0:
            return self._root(editor, req)
        gtype = GROUPS.get(names[0])
        if gtype is None:  # /capabilities, /model: fixed by this server
            raise not_supported(req.method, req.path, f"/{names[0]} is fixed by xgate")
        if depth == 1:
            return self._collection(editor, req, lambda key, body, patch: editor.put_group(gtype, key, body, patch, key),
                                    lambda key, epoch: editor.delete_group(gtype, key, epoch),
                                    list(editor.root.collections.get(gtype.plural, {})))
        gid = names[1]
        if depth == 2:
            return self._group(editor, req, gtype, gid)
        rtype = next(r for r in gtype.resources if r.plural == names[2])
        if depth == 3:
            group = editor.node(f"/{gtype.plural}/{gid}")
            return self._collection(
                editor, req, lambda key, body, patch: editor.put_resource(gtype, gid, rtype, key, body, patch, key),
                lambda key, epoch: editor.delete_resource(gtype, gid, rtype, key, epoch),
                list(group.collections.get(rtype.plural, {})) if group is not None else [], resource=True)
        rid, details = _split(req.segments[3])
        if depth == 4:
            return self._resource(editor, req, gtype, gid, rtype, rid, details)
        if names[4] == "meta":
            if req.method in ("PUT", "PATCH"):
                editor.put_meta(gtype, gid, rtype, rid, _json_body(req), req.method == "PATCH")
                return "entity"
            raise not_supported(req.method, req.path, "meta is written with PUT or PATCH; it goes with its Resource")
        if depth == 5:
            resource = editor.node(f"/{gtype.plural}/{gid}/{rtype.plural}/{rid}")
            return self._collection(
                editor, req,
                lambda key, body, patch: editor.put_version(gtype, gid, rtype, rid, key, body, patch, key),
                lambda key, epoch: editor.delete_version(gtype, gid, rtype, rid, key, epoch),
                list(resource.collections.get("versions", {})) if resource is not None else [])
        vid, details = _split(req.segments[5])
        return self._version(editor, req, gtype, gid, rtype, rid, vid, details)

    def _root(self, editor: Editor, req: Request) -> str:
        if req.method == "DELETE":
            raise not_supported(req.method, req.path, "the registry itself cannot be deleted; delete its groups")
        body = editor._object(_json_body(req), "/", "the registry")
        for key, value in body.items():
            if key in GROUPS or value is None:
                continue
            if req.method == "POST":
                raise ApiError(400, "groups_only", f'Attribute "{key}" is invalid. Only Group types are allowed to '
                               f"be specified on this request: {req.path}.", req.path, {"name": key})
            if key not in REGISTRY_READ_ONLY:
                raise ApiError(400, "invalid_attribute", f'The attribute "{key}" for "/" is not valid: the '
                               "registry's own attributes are xgate's; only its groups are written.", "/",
                               {"name": key, "error_detail": "only groups are written"})
        body = rewrite_local_refs(body)
        for plural, gtype in GROUPS.items():
            for gid, gbody in editor._object(body.get(plural) or {}, "/", plural).items():
                editor.put_group(gtype, gid, gbody, req.method == "PATCH", gid)
        return "nested" if req.method == "POST" else "registry"

    def _collection(self, editor: Editor, req: Request, put: Callable[[str, Any, bool], None],
                    delete: Callable[[str, Any], None], existing: list[str], resource: bool = False) -> str:
        if req.method == "PUT":
            raise not_supported(req.method, req.path, "a collection is written with POST or PATCH")
        if req.method == "DELETE":
            body = _json_body(req, optional=True)
            entries = editor._object(body, req.path, "the delete map") if body is not None else \
                {key: {} for key in existing}  # no map: the whole collection (spec.md "Deleting Entities")
            for key, entry in entries.items():
                entry = entry if isinstance(entry, dict) else {}
                epoch = entry.get("epoch")
                if resource:
                    meta = entry.get("meta")
                    if epoch is not None and not isinstance(meta, dict):
                        raise ApiError(400, "misplaced_epoch", f'The specified "epoch" value for "{req.path}/{key}" '
                                       'needs to be within a "meta" entity.', f"{req.path}/{key}")
                    epoch = meta.get("epoch") if isinstance(meta, dict) else None
                if key in existing:
                    delete(key, epoch)
            return "none"
        for key, body in editor._object(_json_body(req), req.path, "the map").items():
            put(key, body, req.method == "PATCH")
        return "map"

    def _group(self, editor: Editor, req: Request, gtype: GroupType, gid: str) -> str:
        xid = f"/{gtype.plural}/{gid}"
        if req.method == "DELETE":
            if editor.node(xid) is None:
                raise ApiError(404, "not_found", f"The targeted entity ({xid}) cannot be found.", xid)
            editor.group_body(gtype.plural, gid)  # the origin check
            editor.delete_group(gtype, gid, _epoch_flag(req))
            return "none"
        if req.method == "POST":
            body = editor._object(_json_body(req), xid, "the group")
            plurals = {r.plural: r for r in gtype.resources}
            for key in body:
                if key not in plurals:
                    raise ApiError(400, "resources_only", f'Attribute "{key}" is invalid. Only Resource types are '
                                   f"allowed to be specified on this request: {xid}.", xid, {"name": key})
            for plural, members in body.items():
                for rid, rbody in editor._object(members, xid, plural).items():
                    editor.put_resource(gtype, gid, plurals[plural], rid, rbody, False, rid)
            return "nested"
        editor.put_group(gtype, gid, _json_body(req), req.method == "PATCH")
        editor.plan.created = editor.node(xid) is None
        return "entity"

    def _resource(self, editor: Editor, req: Request, gtype: GroupType, gid: str, rtype: ResourceType, rid: str,
                  details: bool) -> str:
        xid = f"/{gtype.plural}/{gid}/{rtype.plural}/{rid}"
        if req.method == "DELETE":
            if editor.node(xid) is None:
                raise ApiError(404, "not_found", f"The targeted entity ({xid}) cannot be found.", xid)
            editor.group_body(gtype.plural, gid)
            editor.delete_resource(gtype, gid, rtype, rid, _epoch_flag(req), served=True)
            return "none"
        body = self._entity_body(req, rtype, details, xid)
        if req.method == "POST":
            editor.post_version(gtype, gid, rtype, rid, body)
        else:
            editor.put_resource(gtype, gid, rtype, rid, body, req.method == "PATCH")
        return "entity"

    def _version(self, editor: Editor, req: Request, gtype: GroupType, gid: str, rtype: ResourceType, rid: str,
                 vid: str, details: bool) -> str:
        xid = f"/{gtype.plural}/{gid}/{rtype.plural}/{rid}/versions/{vid}"
        if req.method == "DELETE":
            if editor.node(xid) is None:
                raise ApiError(404, "not_found", f"The targeted entity ({xid}) cannot be found.", xid)
            editor.group_body(gtype.plural, gid)
            editor.delete_version(gtype, gid, rtype, rid, vid, _epoch_flag(req))
            return "none"
        if req.method == "POST":
            raise not_supported(req.method, req.path, "a Version is written with PUT or PATCH")
        editor.put_version(gtype, gid, rtype, rid, vid, self._entity_body(req, rtype, details, xid),
                           req.method == "PATCH")
        return "entity"

    def _entity_body(self, req: Request, rtype: ResourceType, details: bool, xid: str) -> Any:
        """The metadata of a Resource or Version write: the JSON body, or for a schema addressed without
        `$details` its document in the body and its metadata in `xRegistry-` headers (http.md)."""
        if not rtype.hasdocument or details:
            # http.md "Creating or Updating Entities": metadata in the body, so no `xRegistry-` header may come too
            extra = next((name for name in req.headers if name.lower().startswith("xregistry-")), None)
            if extra is not None:
                raise ApiError(400, "extra_xregistry_header", f'For "{req.path}", xRegistry HTTP header "{extra}" '
                               "is not allowed on this request: the metadata is in the body.", req.path,
                               {"name": extra, "error_detail": "the metadata is in the body"}, spec="http.md")
            return _json_body(req)
        if req.method == "PATCH":
            raise ApiError(405, "details_required", f"$details suffix is needed when using PATCH for the entity: "
                           f"{req.path}.", req.path, spec="http.md")  # http.md details_required: 405
        return document_body(req, rtype.singular)

    # -- the answer ----------------------------------------------------------------------------------------------
    def _answer(self, base: str, answer_path: str, request: web.Request, shape: str, plan: Any,
                status: int, correlation: str, get: GetAnswer) -> web.StreamResponse:
        headers = {CORRELATION_HEADER: correlation}
        if shape == "none":
            return web.Response(status=204, headers=headers)
        state = self.view.state
        renderer = Renderer(base, state.stamps, NO_INLINE)
        if shape in ("map", "nested"):
            body: dict[str, Any] = {}
            for key, xid in plan.answer:
                node = _node(state.root, xid)
                if node is None:
                    continue
                rendered = renderer.meta(node) if xid.endswith("/meta") else renderer.entity(node, ())
                if shape == "nested":
                    body.setdefault(xid.strip("/").split("/")[-2], {})[key] = rendered
                else:
                    body[key] = rendered
            return json_response(body, 200, headers)
        response = get(state, base, answer_path, request.query)
        response.set_status(status if response.status == 200 else response.status)
        response.headers.update(headers)
        target = plan.answer[-1][1] if plan.answer and shape == "entity" else None
        node = _node(state.root, target) if target else None
        if status == 201 and node is not None:
            response.headers["Location"] = renderer.self_url(node)
        if plan.new_version is not None and (version := _node(state.root, plan.new_version)) is not None:
            response.headers["Content-Location"] = renderer.self_url(version)
        return response


def _node(root: Node, xid: str) -> Node | None:
    parts = xid.strip("/").split("/")
    if parts and parts[-1] == "meta":
        parts = parts[:-1]
    node: Node | None = root
    for plural, eid in zip(parts[::2], parts[1::2]):
        node = node.collections.get(plural, {}).get(eid) if node is not None else None
    return node


def _epoch_flag(req: Request) -> int | str | None:
    if req.epoch is None:
        return None
    return int(req.epoch) if req.epoch.isdigit() else req.epoch


def document_body(req: Request, singular: str) -> dict[str, Any]:
    """A Version written as its document: attributes from `xRegistry-` headers, the body as `<singular>`
    (parsed when JSON), `<singular>base64` when not UTF-8, nothing when `xRegistry-<singular>url` names it."""
    body: dict[str, Any] = {}
    for name, value in req.headers.items():
        if not name.lower().startswith("xregistry-"):
            continue
        attr = unquote(name[len("xregistry-"):]).lower()
        if attr in (singular, f"{singular}base64"):
            raise ApiError(400, "extra_xregistry_header", f'xRegistry HTTP header "{attr}" is not allowed on '
                           f"this request: {req.path}.", req.path, {"name": attr}, spec="http.md")
        if "." in attr:
            outer, _, key = attr.partition(".")
            body.setdefault(outer, {})[key] = unquote(value)
        else:
            text = unquote(value)
            body[attr] = int(text) if attr == "epoch" and text.isdigit() else text
    if body.get(f"{singular}url"):
        return body
    kind = req.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if kind == "application/json" or kind.endswith("+json"):
        try:
            body[singular] = json.loads(req.body)
            return body
        except ValueError:
            pass
        except RecursionError:
            raise _too_deep(req.path) from None
    try:
        body[singular] = req.body.decode("utf-8")
    except UnicodeDecodeError:
        body[f"{singular}base64"] = base64.b64encode(req.body).decode("ascii")
    if kind:
        body.setdefault("contenttype", req.headers.get("Content-Type", ""))
    return body
