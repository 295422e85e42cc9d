"""RFC 6901 JSON pointers: one escape and one unescape for every place xgate names a place in a document
(diagnostics, violations, references, the registry API's `?inline` paths)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def escape(segment: object) -> str:
    """One reference token: `~` as `~0`, `/` as `~1` (in that order, so that `~1` written stays itself)."""
    return str(segment).replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    """A reference token back to its key: `~1` first, then `~0` (the reverse order of `escape`)."""
    return token.replace("~1", "/").replace("~0", "~")


def pointer(segments: Iterable[object]) -> str:
    """The pointer to `segments` from the root ("" for the root itself)."""
    return "".join("/" + escape(segment) for segment in segments)


def follow(document: Any, path: str) -> tuple[bool, Any]:
    """(found, the value at `path` in `document`); `path` is a pointer ("" or "/a/0"), as a `#` fragment holds it."""
    node = document
    for token in path.split("/")[1:] if path else ():
        key = unescape(token)
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return False, None
    return True, node
