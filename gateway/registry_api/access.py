"""Who may write to the registry: the credentials of gateway.yaml `registry.write`, checked in constant time.

An API key travels as `X-API-Key: KEY` or `Authorization: Bearer KEY`; basic auth as `Authorization: Basic ...`
(the metrics server's reader, gateway/sections/access.py). `X-API-Key` exists so that a write can carry its key
beside the basic auth the metrics server may already ask for on the same address.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from gateway.sections.access import REALM, BasicAuth
from gateway.sections.registry import WriteSettings

APIKEY_HEADER = "X-API-Key"


class WriteAccess:
    def __init__(self, settings: WriteSettings) -> None:
        self.settings = settings
        self._apikey = settings.apikey.encode("utf-8") if settings.apikey is not None else None
        self._basic = BasicAuth(settings.username, settings.password) \
            if settings.username is not None and settings.password is not None else None

    def _key_matches(self, offered: str) -> bool:
        return self._apikey is not None and hmac.compare_digest(offered.strip().encode("utf-8"), self._apikey)

    def accepts(self, headers: Mapping[str, str]) -> bool:
        """True when the request carries one of the configured credentials."""
        key = headers.get(APIKEY_HEADER)
        if key is not None and self._key_matches(key):
            return True
        authorization = headers.get("Authorization")
        if authorization is None:
            return False
        scheme, _, value = authorization.strip().partition(" ")
        if scheme.lower() == "bearer":
            return self._key_matches(value)
        return self._basic is not None and self._basic.accepts(authorization)

    def challenge(self) -> dict[str, str]:
        """The `WWW-Authenticate` header of a 401: the schemes this server takes for writes."""
        schemes = ([f'Basic realm="{REALM}-registry-write", charset="UTF-8"'] if self._basic is not None else []) + \
            ([f'Bearer realm="{REALM}-registry-write"'] if self._apikey is not None else [])
        return {"WWW-Authenticate": ", ".join(schemes)}
