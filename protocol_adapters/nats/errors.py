"""Which NATS failures retrying can fix: nats-py exceptions as AdapterError or TransientAdapterError."""

from __future__ import annotations

import nats.errors
import nats.js.errors

from gateway.errors import AdapterError, MessageRefused, MessageTooLarge, adapter_failure

# a request the server refused for good: retrying the same message cannot help
_PERMANENT = (
    nats.errors.BadSubjectError,
    nats.errors.BadHeaderError,
    nats.errors.MaxPayloadError,
    nats.errors.AuthorizationError,
    nats.errors.InvalidUserCredentialsError,
    nats.errors.SecureConnRequiredError,
    nats.errors.SecureConnWantedError,
    nats.errors.SecureConnFailedError,
    nats.errors.BadTimeoutError,
    nats.js.errors.BadRequestError,
)

# the connection is down, reconnecting or slow; JetStream not (yet) answering after a server restart
_TRANSIENT = (
    nats.errors.NoServersError,
    nats.errors.ConnectionClosedError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.ConnectionDrainingError,
    nats.errors.OutboundBufferLimitError,
    nats.errors.StaleConnectionError,
    nats.errors.NoRespondersError,
    nats.js.errors.NoStreamResponseError,
    nats.js.errors.ServiceUnavailableError,
    nats.js.errors.ServerError,
    nats.js.errors.TooManyStalledMsgsError,
    TimeoutError,  # nats.errors.TimeoutError and FlushTimeoutError derive from it
    ConnectionError,
    OSError,
)


def is_retriable(exc: BaseException) -> bool:
    if isinstance(exc, AdapterError):
        return exc.retriable
    if isinstance(exc, _PERMANENT):
        return False
    if isinstance(exc, _TRANSIENT):
        return True
    if isinstance(exc, nats.js.errors.APIError):
        # 5xx (and no status at all) mean the server could not answer now; 4xx are about the request
        return exc.code is None or exc.code >= 500
    return False


def adapter_error(endpoint: str, action: str, exc: BaseException) -> AdapterError:
    """`action` says what failed, e.g. "publish to orders.created"."""
    if isinstance(exc, AdapterError):
        return exc
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, TimeoutError):
        detail = f"timed out ({type(exc).__name__})"
    # about this one message: the connection and the other messages are fine
    if isinstance(exc, nats.errors.MaxPayloadError):
        return MessageTooLarge(f"NATS endpoint {endpoint!r}: {action} failed: message exceeds max_payload")
    if isinstance(exc, nats.errors.BadHeaderError):
        return MessageRefused(f"NATS endpoint {endpoint!r}: {action} failed: header name {detail!r} not allowed")
    return adapter_failure(f"NATS endpoint {endpoint!r}: {action} failed: {detail}", retriable=is_retriable(exc))
