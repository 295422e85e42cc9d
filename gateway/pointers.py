"""RFC 6901 JSON pointers: one escape and one unescape for every place xgate names a place in a document
(diagnostics, violations, references, the registry API's `?inline` paths)."""

from __future__ import annotations

from collections.abc import Iterable


def escape(segment: object) -> str:
    """One reference token: `~` as `~0`, `/` as `~1` (in that order, so that `~1` written stays itself)."""
    return str(segment).replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    """A reference token back to its key: `~1` first, then `~0` (the reverse order of `escape`)."""
    return token.replace("~1", "/").replace("~0", "~")


def pointer(segments: Iterable[object]) -> str:
    """The pointer to `segments` from the root ("" for the root itself)."""
    return "".join("/" + escape(segment) for segment in segments)
