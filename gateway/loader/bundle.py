"""Embed what a JSON Schema's remote `$ref`s name, so that the compiler, which does no I/O, finds it.

Only while remote fetching is allowed, and only through the same fetcher as
every other reference (allow-list, timeout, size cap, cache). Each fetched
schema goes under the root's `definitions` (scanned for embedded resources
in every draft by jsonschema-rs) with `$id` (and draft-04's `id`) set to the
URL it came from, so a `$ref` to that URL, and the relative `$ref`s inside
the fetched schema, resolve to it. A root schema fetched from a URL without
an `$id` gets that URL as its `$id` for the same reason. `$id`s change the
base URI where they are written (not beside a `$ref` in drafts 4-7), and a
URL a schema identifies itself, or a standard meta-schema the validator carries, is
never fetched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urldefrag, urljoin

from gateway.errors import GatewayError
from gateway.loader.refs import is_url

# documents one schema may pull in, transitively
MAX_BUNDLED = 32
BUNDLE_PREFIX = "xgate-remote-"

Fetch = Callable[[str], Any]  # url -> the parsed JSON value; raises RefUnavailable when it cannot


class RefUnavailable(GatewayError):
    """A `$ref` target that cannot be embedded; the message says which and why."""


# the standard meta-schemas jsonschema-rs carries itself: a `$ref` to one resolves without any fetch
_DRAFTS_2019_2020 = {"2019-09": ("core", "applicator", "validation", "meta-data", "format", "content"),
                     "2020-12": ("core", "applicator", "unevaluated", "validation", "meta-data", "format-annotation",
                                 "format-assertion", "content")}
KNOWN_META_SCHEMAS = frozenset({
    *(f"http://json-schema.org/draft-0{n}/schema" for n in (4, 6, 7)),
    *(f"https://json-schema.org/draft/{draft}/schema" for draft in _DRAFTS_2019_2020),
    *(f"https://json-schema.org/draft/{draft}/meta/{part}" for draft, parts in _DRAFTS_2019_2020.items()
      for part in parts),
})

# keywords whose values are instance data, never subschemas: a `$ref` key in there is just data
_DATA_KEYWORDS = frozenset({"const", "enum", "examples", "default"})


@dataclass
class _Found:
    refs: dict[str, None] = field(default_factory=dict)  # http(s) documents the `$ref`s name
    ids: set[str] = field(default_factory=set)  # resources the schemas identify themselves (never fetched)


def _walk(schema: Any, base: str | None, legacy: bool, found: _Found) -> None:
    """Collect `$ref` targets and `$id`s, resolving each against the base URI in force where it is written."""
    stack: list[tuple[Any, str | None]] = [(schema, base)]
    while stack:
        node, here = stack.pop()
        if isinstance(node, list):
            stack.extend((item, here) for item in node)
            continue
        if not isinstance(node, dict):
            continue
        ref = node.get("$ref")
        if isinstance(ref, str) and legacy:
            # draft 4-7: `$ref` makes every sibling, `$id` included, ignored
            _add_ref(ref, here, found)
            continue
        ident = node.get("$id", node.get("id") if legacy else None)
        if isinstance(ident, str) and not ident.startswith("#"):
            here = urljoin(here, ident) if here else ident
            found.ids.add(urldefrag(here).url)
        if isinstance(ref, str):
            _add_ref(ref, here, found)
        stack.extend((value, here) for key, value in node.items() if key not in _DATA_KEYWORDS)


def _add_ref(ref: str, base: str | None, found: _Found) -> None:
    target = urljoin(base, ref) if base else ref
    if is_url(target) and target.lower().startswith(("http://", "https://")):
        found.refs[urldefrag(target).url] = None


def is_legacy(schema: Any, fmt: Any) -> bool:
    """Draft 4-7 `$ref`/`$id` rules: by `$schema`, else by the format's version (the compiler's default: draft-07)."""
    meta = schema.get("$schema") if isinstance(schema, dict) else None
    text = meta if isinstance(meta, str) else str(fmt or "")
    return not any(year in text for year in ("2019-09", "2020-12"))


def bundle(schema: Any, base: str | None, fetch: Fetch, *, legacy: bool = True) -> Any:
    """`schema` with every remote document its `$ref`s need embedded; raises RefUnavailable naming the one missing."""
    if not isinstance(schema, dict):
        return schema
    own_id = schema.get("$id", schema.get("id") if legacy else None)
    root = own_id if isinstance(own_id, str) and is_url(own_id) else base
    found = _Found(ids=set(KNOWN_META_SCHEMAS))
    _walk(schema, root, legacy, found)
    if root is not None:
        found.ids.add(urldefrag(root).url)
    embedded: dict[str, Any] = {}
    while True:
        pending = [url for url in found.refs if url not in found.ids and url not in embedded]
        if not pending:
            break
        url = pending[0]
        if len(embedded) >= MAX_BUNDLED:
            raise RefUnavailable(f"the schema's $refs pull in more than {MAX_BUNDLED} remote documents")
        value = fetch(url)
        if not isinstance(value, (dict, bool)):
            raise RefUnavailable(f"$ref {url} is not a JSON Schema (found {type(value).__name__})")
        # a boolean schema cannot carry an `$id`: wrapped, it means the same
        embedded[url] = {**(value if isinstance(value, dict) else {"allOf": [value]}), "$id": url, "id": url}
        _walk(embedded[url], url, legacy, found)
    if not embedded:
        return schema
    definitions = schema.get("definitions", {})
    if not isinstance(definitions, dict):
        raise RefUnavailable("`definitions` is not an object, so fetched $ref targets cannot be embedded")
    out = {**schema, "definitions": {**definitions, **{f"{BUNDLE_PREFIX}{i}": value
                                                       for i, value in enumerate(embedded.values())}}}
    if root is not None and own_id is None:
        if legacy and "$ref" in schema:
            # beside a draft 4-7 `$ref` an `$id` is ignored: the base goes on a wrapper instead
            return {"$id": root, "id": root, "allOf": [schema], "definitions": out["definitions"]}
        out["$id"] = out["id"] = root
    return out
