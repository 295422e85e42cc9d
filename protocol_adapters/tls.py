"""TLS for the adapters' client connections: one way to build the context, one way to explain a refusal.

Every adapter that opens a TLS connection (MQTT, NATS, Kafka, the HTTP sink) builds its context here from
the endpoint's `TlsSettings` (gateway.yaml `endpoints.<id>.tls`: `ca`, `cert`, `key`, `verify`), so that a
missing or unreadable file is reported the same way everywhere, naming the setting and the path, before
any connection is tried. Reading the files blocks: call `client_context` off the event loop.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable

from gateway.errors import AdapterError
from protocol_adapters.base import TlsSettings

# failures of the connection rather than of the certificates: the next attempt may well succeed
_TRANSIENT_SSL = (ssl.SSLEOFError, ssl.SSLZeroReturnError, ssl.SSLWantReadError, ssl.SSLWantWriteError,
                  ssl.SSLSyscallError)


def client_context(tls: TlsSettings | None, fail: Callable[[str], AdapterError]) -> ssl.SSLContext:
    """A verifying client context: it trusts `tls.ca` alone when given (a private CA is not mixed with the
    system's), else the system CAs; it presents the client certificate when given; it skips verification
    only when `verify` is false. `fail(message)` makes the error to raise."""
    tls = tls or TlsSettings()
    try:
        context = ssl.create_default_context(cafile=tls.ca_file)
    except (OSError, ssl.SSLError) as exc:
        raise fail(f"tls.ca {tls.ca_file!r} cannot be loaded: {_reason(exc)}") from exc
    if tls.key_file and not tls.cert_file:
        raise fail("tls.key is set without tls.cert (the client certificate it belongs to)")
    if tls.cert_file:
        try:
            context.load_cert_chain(tls.cert_file, tls.key_file)
        except (OSError, ssl.SSLError) as exc:
            files = f"{tls.cert_file!r}" + (f" / tls.key {tls.key_file!r}" if tls.key_file else "")
            raise fail(f"tls.cert {files} cannot be loaded: {_reason(exc)}") from exc
    if not tls.verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def unreadable_file(tls: TlsSettings | None) -> str | None:
    """Which TLS file cannot be read, for clients that load them in their own way (proton): checked up
    front so that the error names the setting rather than a C library's message."""
    if tls is None:
        return None
    for setting, path in (("tls.ca", tls.ca_file), ("tls.cert", tls.cert_file), ("tls.key", tls.key_file)):
        if path:
            try:
                with open(path, "rb"):
                    pass
            except OSError as exc:
                return f"{setting} {path!r} cannot be read: {_reason(exc)}"
    return None


def tls_refusal(exc: BaseException | None) -> str | None:
    """Why a TLS handshake failed for good (an untrusted or misnamed certificate, a client certificate the
    server refused), found anywhere in the exception's chain; None when it was no such failure."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ssl.SSLCertVerificationError):
            return f"the server's certificate was not accepted: {exc.verify_message or exc.reason} " \
                   "(check tls.ca, and that the certificate names the host in the uri)"
        if isinstance(exc, ssl.SSLError) and not isinstance(exc, _TRANSIENT_SSL):
            return f"{exc.reason or exc} (check tls.cert and tls.key: the server may require a client " \
                   "certificate it trusts)"
        exc = exc.__cause__ or exc.__context__
    return None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason or str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)
