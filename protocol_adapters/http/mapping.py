"""HTTP request <-> Envelope, and the answers a webhook source gives; pure functions, no aiohttp objects.

Envelope fields (gateway/envelope.py): `method` str, `path` str (percent-decoded, without the query),
`query` list of (name, str) in request order with repeats, `headers` list of (name, str) in request order with
repeats and the names as sent (the core compares them case-insensitively). Header bytes that are not UTF-8 are
read as Latin-1 (HTTP's historical charset), so no byte is lost.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl

from gateway.envelope import Envelope
from protocol_adapters.base import Delivery
from protocol_adapters.http.options import ApiKey

PROTOCOL = "HTTP"

# RFC 9110 7.6.1 hop-by-hop fields: they describe one connection, never the message
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authenticate",
                        "proxy-authorization", "te", "trailer", "trailers", "transfer-encoding", "upgrade"})
# also not forwarded by the sink: framing the client recomputes, the ingress host, and credentials that were
# meant for the gateway (the sink authenticates with its own)
NOT_FORWARDED = HOP_BY_HOP | {"content-length", "host", "expect", "authorization", "cookie"}
# codings aiohttp's server decodes before the body reaches us (aiohttp/http_parser.py)
DECODED_CODINGS = frozenset({"gzip", "deflate", "br", "zstd"})


def text(value: bytes | str) -> str:
    if isinstance(value, str):
        return value
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.decode("latin-1")


def header_pairs(raw_headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    """Raw request headers as (name, value) text pairs, order and repeats kept."""
    return [(name.decode("latin-1"), text(value)) for name, value in raw_headers]


def query_pairs(raw_query: str) -> list[tuple[str, str]]:
    """A raw (still percent-encoded) query string as decoded (name, value) pairs, blanks and repeats kept."""
    if not raw_query:
        return []
    return parse_qsl(raw_query, keep_blank_values=True, errors="replace")


def body_was_decoded(headers: list[tuple[str, str]]) -> bool:
    """aiohttp decompresses the body when the first Content-Encoding is one it knows."""
    for name, value in headers:
        if name.lower() == "content-encoding":
            return value.isascii() and value.lower() in DECODED_CODINGS
    return False


def request_fields(method: str, path: str, raw_query: str, raw_headers: Iterable[tuple[bytes, bytes]], *,
                   credential: ApiKey | None = None) -> dict[str, Any]:
    """The `fields` of one request. The API key carrier is removed (it was checked and must not travel on),
    and so is a Content-Encoding the server already decoded (the envelope's body is the decoded one)."""
    headers = header_pairs(raw_headers)
    query = query_pairs(raw_query)
    if body_was_decoded(headers):
        headers = [(n, v) for n, v in headers if n.lower() != "content-encoding"]
    if credential is not None:
        if credential.where == "header":
            wanted = credential.name.lower()
            headers = [(n, v) for n, v in headers if n.lower() != wanted]
        else:
            query = [(n, v) for n, v in query if n != credential.name]
    return {"method": method, "path": path, "query": query, "headers": headers}


def envelope_from_request(method: str, path: str, raw_query: str, raw_headers: Iterable[tuple[bytes, bytes]],
                          body: bytes, *, endpoint: str | None, remote: str | None,
                          credential: ApiKey | None = None, handle: Any = None) -> Envelope:
    fields = request_fields(method, path, raw_query, raw_headers, credential=credential)
    return Envelope(PROTOCOL, fields, body, endpoint=endpoint,
                    position={"method": method, "path": path, "remote": remote}, ack=handle)


def outgoing_headers(envelope: Envelope) -> list[tuple[str, str]]:
    """The envelope's headers as the sink sends them: order and repeats kept, connection-level ones dropped.

    Also names listed in a Connection header are hop-by-hop (RFC 9110 7.6.1). Values that are bytes (an
    envelope from a protocol with binary headers) are read as text.
    """
    pairs = envelope.fields.get("headers") or []
    dropped = set(NOT_FORWARDED)
    for name, value in pairs:
        if name.lower() == "connection" and value is not None:
            dropped.update(token.strip().lower() for token in text(value).split(","))
    return [(str(name), text(value)) for name, value in pairs
            if value is not None and name.lower() not in dropped]


def allowed_path(path: str, base_path: str) -> bool:
    """The endpoint's path and everything below it (`base_path` has no trailing slash)."""
    return not base_path or path == base_path or path.startswith(base_path + "/")


def verdict_body(delivery: Delivery | None) -> bytes:
    """The JSON a webhook answer carries: the verdict (`{}` when the runtime gave none)."""
    if delivery is None:
        return b"{}"
    return json.dumps(delivery.verdict.as_dict(), default=str, ensure_ascii=False).encode("utf-8")


def error_body(message: str) -> bytes:
    return json.dumps({"error": message}).encode("utf-8")
