"""Who may read /metrics, /healthz and /readyz: TLS for the server, HTTP basic auth for each request.

Both are optional (gateway.yaml `metrics:`); the server binds 127.0.0.1 unless told otherwise, so the
defaults expose nothing beyond the host. Credentials come from the environment or a secret file like every
other secret of the settings, and are compared in constant time.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import ssl
from dataclasses import dataclass, field

REALM = "xgate"


@dataclass(frozen=True, slots=True)
class BasicAuth:
    username: str
    password: str = field(repr=False)

    def accepts(self, authorization: str | None) -> bool:
        """True when an `Authorization: Basic ...` header carries exactly these credentials."""
        if authorization is None:
            return False
        scheme, _, encoded = authorization.strip().partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            decoded = base64.b64decode(encoded.strip(), validate=True)
        except (binascii.Error, ValueError):
            return False
        username, sep, password = decoded.partition(b":")
        # both compared every time: how far a guess got must not show in the answer's timing
        user_ok = hmac.compare_digest(username, self.username.encode("utf-8"))
        password_ok = hmac.compare_digest(password, self.password.encode("utf-8"))
        return bool(sep) and user_ok and password_ok


def challenge() -> dict[str, str]:
    """The header a 401 answer carries (RFC 7617)."""
    return {"WWW-Authenticate": f'Basic realm="{REALM}", charset="UTF-8"'}


def server_context(cert: str, key: str, client_ca: str | None) -> ssl.SSLContext:
    """An https server context; with `client_ca`, clients must present a certificate it signed (mutual TLS).
    Raises OSError or ssl.SSLError when a file cannot be loaded."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    if client_ca:
        context.load_verify_locations(client_ca)
        context.verify_mode = ssl.CERT_REQUIRED
    return context
