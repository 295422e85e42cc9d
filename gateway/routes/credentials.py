"""Registry documents never carry credentials to connect with: what one carries anyway is left out, and said.

Documents describe endpoints and travel (a shared registry, a repository, a dropped file); secrets live in
gateway.yaml, read from the environment (`${VAR}`) or a secret file (`password_file`). A document with a
`password` (or token, API key, ...) in its protocoloptions, a credential header among its static headers,
or user info in an endpoint uri (`nats://user:secret@host`, which client libraries would use) is not
obeyed: `scrub_endpoint` returns the options and uris without them, and `credential_warnings` names each
one by file and JSON pointer, never by value.
"""

from __future__ import annotations

from typing import Any

from gateway.errors import Diagnostic, Severity
from gateway.model.resolved import EndpointDefinition, Registry
from gateway.pointers import escape

CODE = "credentials"
# option names (lower case, without '-' and '_') that hold a credential rather than describe the endpoint
SECRET_NAMES = frozenset({
    "user", "username", "password", "passwd", "pwd", "secret", "clientsecret", "credentials", "creds",
    "credsfile", "nkeyseed", "token", "accesstoken", "authtoken", "bearertoken", "apikey", "apitoken",
    "saslusername", "saslpassword", "saslplainusername", "saslplainpassword", "privatekey",
    "authorization", "proxyauthorization", "cookie",
})
# options whose value names the header or query parameter that carries a credential (HTTP)
_CARRIER_OPTIONS = ("apikeyname", "plainusernamefield", "plainpasswordfield")


def _name(text: object) -> str:
    return str(text).lower().replace("-", "").replace("_", "")


def _without_user_info(uri: str) -> str | None:
    """The uri with its `user:secret@` removed, or None when it has none."""
    scheme, sep, rest = uri.partition("://")
    authority, slash, path = rest.partition("/")
    if not sep or "@" not in authority:
        return None
    return f"{scheme}://{authority.rpartition('@')[2]}{slash}{path}"




class _Scrubber:
    def __init__(self, carriers: frozenset[str]) -> None:
        self.carriers = carriers  # header / query parameter names that carry this endpoint's credentials
        self.found: list[tuple[str, str]] = []  # (JSON pointer, what it is)

    def value(self, value: Any, pointer: str) -> Any:
        if isinstance(value, dict):
            kept = {}
            for key, item in value.items():
                if _name(key) in SECRET_NAMES or _name(key) in self.carriers:
                    self.found.append((f"{pointer}/{escape(str(key))}", f"option {key!r}"))
                else:
                    kept[key] = self.value(item, f"{pointer}/{escape(str(key))}")
            return kept
        if isinstance(value, list):
            items = []
            for index, item in enumerate(value):
                # a header written as {"name": "Authorization", "value": "Bearer ..."}
                if isinstance(item, dict) and "value" in item and \
                        (_name(item.get("name")) in SECRET_NAMES or _name(item.get("name")) in self.carriers):
                    self.found.append((f"{pointer}/{index}", f"the {item.get('name')!r} entry"))
                else:
                    items.append(self.value(item, f"{pointer}/{index}"))
            return items
        return value


def scrub_endpoint(endpoint: EndpointDefinition) -> tuple[dict[str, Any], tuple[str, ...], list[tuple[str, str]]]:
    """The endpoint's protocoloptions and uris without credentials, and what was left out: (JSON pointer
    relative to the endpoint, what it is)."""
    options = endpoint.attrs.get("protocoloptions") or {}
    carriers = frozenset(_name(options[key]) for key in _CARRIER_OPTIONS if isinstance(options.get(key), str))
    scrubber = _Scrubber(carriers)
    clean: dict[str, Any] = scrubber.value(dict(options), "/protocoloptions")
    uris: list[str] = []
    for index, uri in enumerate(u for u in endpoint.attrs.get("endpoints") or () if isinstance(u, str)):
        stripped = _without_user_info(uri)
        if stripped is not None:
            scrubber.found.append((f"/protocoloptions/endpoints/{index}", "the user info of the uri"))
        uris.append(stripped or uri)
    return clean, tuple(uris), scrubber.found


def credential_warnings(registry: Registry) -> list[Diagnostic]:
    """A warning per credential a document carries (the gateway does not use it)."""
    warnings = []
    for endpoint_id, endpoint in sorted(registry.endpoints.items()):
        for pointer, what in scrub_endpoint(endpoint)[2]:
            warnings.append(Diagnostic(
                Severity.WARNING, endpoint.origin.file,
                f"{what} of endpoint {endpoint_id!r} is a credential, and registry documents never supply "
                f"credentials: it is ignored. Give it in gateway.yaml endpoints.{endpoint_id} (username, "
                "password or password_file, apikey_file, token_file, tls), from the environment or a secret file",
                pointer=endpoint.origin.pointer + pointer, code=CODE))
    return warnings
