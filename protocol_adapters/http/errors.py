"""Which HTTP failures retrying can fix: the sink's translation into AdapterError(retriable=...)."""

from __future__ import annotations

import asyncio

import aiohttp

from gateway.errors import AdapterError

# 408 Request Timeout, 425 Too Early and 429 Too Many Requests say "later", like a 5xx
RETRIABLE_STATUSES = frozenset({408, 425, 429})


def status_error(endpoint: str, url: str, status: int, reason: str | None, detail: bytes) -> AdapterError:
    """A non-2xx answer: 5xx and 408/425/429 are retriable, other statuses (4xx, 3xx) are not."""
    retriable = status >= 500 or status in RETRIABLE_STATUSES
    snippet = detail[:200].decode("utf-8", "replace").strip()
    message = f"HTTP sink {endpoint!r}: {url} answered {status} {reason or ''}".rstrip()
    if snippet:
        message += f": {snippet}"
    return AdapterError(message, retriable=retriable)


def client_error(endpoint: str, url: str, exc: BaseException) -> AdapterError:
    """A request that got no answer: connection and timeout problems are retriable; a bad URL or a
    certificate the destination presents and we refuse are not (retrying cannot change them)."""
    retriable = not isinstance(exc, (aiohttp.InvalidURL, aiohttp.ClientConnectorCertificateError,
                                     aiohttp.NonHttpUrlClientError))
    if isinstance(exc, asyncio.TimeoutError):
        what = "timed out"
    else:
        what = f"failed: {type(exc).__name__}: {exc}"
    return AdapterError(f"HTTP sink {endpoint!r}: request to {url} {what}", retriable=retriable)
