"""Which HTTP failures retrying can fix: the sink's translation into AdapterError or TransientAdapterError."""

from __future__ import annotations

import aiohttp

from gateway.errors import AdapterError, MessageRefused, MessageTooLarge, adapter_failure

# 408 Request Timeout, 425 Too Early and 429 Too Many Requests say "later", like a 5xx
RETRIABLE_STATUSES = frozenset({408, 425, 429})
# answers about this one message (its size, its media type, its content): other messages still pass
REFUSED_STATUSES = frozenset({415, 422})


def status_error(endpoint: str, url: str, status: int, reason: str | None, detail: bytes) -> AdapterError:
    """A non-2xx answer: 5xx and 408/425/429 are retriable, other statuses (4xx, 3xx) are not."""
    retriable = status >= 500 or status in RETRIABLE_STATUSES
    snippet = detail[:200].decode("utf-8", "replace").strip()
    message = f"HTTP sink {endpoint!r}: {url} answered {status} {reason or ''}".rstrip()
    if snippet:
        message += f": {snippet}"
    if status == 413:
        return MessageTooLarge(message)
    if status in REFUSED_STATUSES:
        return MessageRefused(message)
    return adapter_failure(message, retriable=retriable)


def client_error(endpoint: str, url: str, exc: BaseException) -> AdapterError:
    """A request that got no answer is retriable: the fault is the destination's, not the message's (a refused
    certificate too: it gets fixed or renewed there, and the message is still good). Only a URL that can
    never work is not."""
    retriable = not isinstance(exc, (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError))
    if isinstance(exc, TimeoutError):
        what = "timed out"
    else:
        what = f"failed: {type(exc).__name__}: {exc}"
    return adapter_failure(f"HTTP sink {endpoint!r}: request to {url} {what}", retriable=retriable)
