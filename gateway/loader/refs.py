"""Reference syntax: JSON pointers, relative files, xids, remote URIs and `:TypeName` selectors."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from urllib.parse import unquote, urljoin, urlsplit

from gateway import pointers
from gateway.model import Origin, Ref

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")

# collection and member names of every generation, mapped to the 1.0 names
GROUP_COLLECTIONS = {"messagegroups": "messagegroups", "definitiongroups": "messagegroups",
                     "groups": "messagegroups", "schemagroups": "schemagroups", "endpoints": "endpoints"}
MEMBER_COLLECTIONS = {"messagegroups": ("messages", "definitions"), "schemagroups": ("schemas",),
                      "endpoints": ("messages", "definitions")}


_SELECTOR = re.compile(r"^(?P<head>.*/schemas/[^/:#]+(?:/versions/[^/:#]+)?):(?P<selector>[A-Za-z_][\w./]*)$")


def split_selector(text: str) -> tuple[str, str | None]:
    """`.../schemas/s[/versions/v]:TypeName` -> (`.../schemas/s[/versions/v]`, `TypeName`).

    A selector may hold slashes (`:messages/STATEDeath` in the wild): a path inside the schema.
    """
    match = _SELECTOR.match(text)
    if match:
        return match.group("head"), match.group("selector")
    return text, None


def parse_ref(text: str, file: str, where: Origin | None = None) -> Ref | None:
    """Make a reference absolute relative to the document `file`; None when it is not a reference."""
    ref = _parse(text, file)
    return replace(ref, where=where) if ref is not None and where is not None else ref


def is_url(text: str) -> bool:
    return bool(_SCHEME.match(text)) and not text.lower().startswith("file:")


def _parse(text: str, file: str) -> Ref | None:
    if not isinstance(text, str) or not text.strip():
        return None
    text = text.strip()
    body, selector = split_selector(text)
    if text.lower().startswith("file://") and not is_url(file):
        return _file_uri(text, body, selector)  # (a fetched document names no local file: it stays a URL)
    if _SCHEME.match(text):
        return _remote(text, body, selector)
    if body.startswith("/"):
        return Ref("xid", text, pointer=body, selector=selector)
    if is_url(file):
        # inside a fetched document, relative references stay on its server
        return _remote(text, urljoin(file, body), selector)
    if body.startswith("#"):
        return Ref("local", text, file=file, pointer=body[1:], selector=selector)
    path, _, fragment = body.partition("#")
    target = os.path.normpath(os.path.join(os.path.dirname(file), path))
    return Ref("local", text, file=target, pointer=fragment, selector=selector)


def _remote(text: str, body: str, selector: str | None) -> Ref:
    url, _, fragment = body.partition("#")
    return Ref("remote", text, file=url, pointer=fragment, selector=selector)


def _file_uri(text: str, body: str, selector: str | None) -> Ref | None:
    """`file:///abs/path#/pointer`: a local file like any other (and confined like any other)."""
    parts = urlsplit(body)
    if parts.netloc not in ("", "localhost") or not parts.path:
        return None
    return Ref("local", text, file=os.path.normpath(unquote(parts.path)), pointer=parts.fragment, selector=selector)


def pointer_segments(pointer: str) -> list[str]:
    if not pointer:
        return []
    return [pointers.unescape(s) for s in pointer.lstrip("/").split("/")]


@dataclass(frozen=True, slots=True)
class EntityPath:
    """Where a pointer or xid lands: a collection, a group id, member id, version id and what remains."""

    collection: str
    group: str
    member: str | None = None
    version: str | None = None
    rest: str = ""


def entity_path(pointer: str) -> EntityPath | None:
    """Interpret `/messagegroups/g/messages/m[/versions/v][/more]` in any generation's spelling."""
    # a second '#' (seen in the wild: `#/schemagroups/g/schemas/s#/definitions/X`) starts a pointer into the schema
    pointer, _, inner = pointer.partition("#")
    segments = pointer_segments(pointer)
    if len(segments) < 2:
        return None
    collection = GROUP_COLLECTIONS.get(segments[0].lower())
    if collection is None:
        return None
    if collection == "endpoints":
        if len(segments) == 2:
            return EntityPath(collection, segments[1])
        if len(segments) >= 4 and segments[2].lower() in MEMBER_COLLECTIONS["endpoints"]:
            return EntityPath(collection, segments[1], segments[3])
        return None
    group = segments[1]
    if len(segments) == 2:
        return EntityPath(collection, group)
    if len(segments) < 4 or segments[2].lower() not in MEMBER_COLLECTIONS[collection]:
        return None
    member = segments[3]
    version = None
    rest_segments = segments[4:]
    if len(rest_segments) >= 2 and rest_segments[0] == "versions":
        version = rest_segments[1]
        rest_segments = rest_segments[2:]
    rest = pointers.pointer(rest_segments)
    if inner:
        rest = rest + inner if inner.startswith("/") else rest + "/" + inner
    return EntityPath(collection, group, member, version, rest)
