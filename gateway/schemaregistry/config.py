"""The `schemaregistries` section of gateway.yaml: Confluent-compatible schema registries by name.

```yaml
schemaregistries:
  main:                                   # the name `confluent://main/...` references use
    url: https://registry.example.com:8081   # base URL of the REST API (Confluent, Karapace, Redpanda,
                                              # Apicurio's ccompat: https://host/apis/ccompat/v7)
    username: xgate                       # basic auth, both or neither: `${VAR}` or `username_file`,
    password: ${REGISTRY_PASSWORD}        # `password_file` as for endpoints
    subjects: [orders-value, telemetry-value]   # optional: the only subjects documents may name here
```

The registry's host must also be on `remote.allow`: every request goes through the
remote-fetch policy (gateway/loader/fetch.py). Credentials never come from documents.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gateway.config_values import expand_env, read_secret, settings_diagnostics, unknown_settings
from gateway.errors import Diagnostic
from gateway.loader.decode import decode_file

# a registry name is the host part of `confluent://<name>/...`
_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")
_KNOWN = ("url", "username", "username_file", "password", "password_file", "subjects")
Secret = Callable[[dict[str, Any], str, str, list[str]], "str | None"]


@dataclass(frozen=True, slots=True)
class SchemaRegistrySettings:
    name: str
    url: str                                  # base URL without a trailing slash
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    subjects: tuple[str, ...] = ()            # empty: any subject

    def headers(self) -> dict[str, str]:
        """The request headers that carry the credentials (basic auth), if any."""
        if self.username is None or self.password is None:
            return {}
        token = base64.b64encode(f"{self.username}:{self.password}".encode()).decode("ascii")
        return {"Authorization": f"Basic {token}"}


def base_url(url: str) -> str:
    """`HTTP://Host:80/api/` -> `http://host/api`: the form registry URLs are compared in."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    default = {"http": 80, "https": 443}.get(scheme)
    netloc = host if port in (None, default) else f"{host}:{port}"
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}"


def _url_problem(url: Any) -> str | None:
    if not isinstance(url, str) or not url.strip():
        return "`url` is required: the registry's base URL (http or https)"
    parts = urlsplit(url.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return f"`url` {url!r} is not an http(s) URL with a host"
    if parts.username or parts.password:
        return "`url` must not carry credentials: give username and password (or their _file)"
    if parts.query or parts.fragment:
        return f"`url` {url!r} must not have a query or fragment"
    try:
        parts.port
    except ValueError:
        return f"`url` {url!r} has a port that is not a number"
    return None


def _registry(name: str, raw: Any, where: str, problems: list[str], secret: Secret) -> SchemaRegistrySettings | None:
    if not _NAME.match(name):
        problems.append(f"{where}: the registry name {name!r} must be letters, digits, '.', '_' or '-' "
                        "(it is the host of `confluent://<name>/...` references)")
        return None
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a mapping ({', '.join(_KNOWN)})")
        return None
    found = unknown_settings(raw, _KNOWN, where)
    problem = _url_problem(raw.get("url"))
    if problem is not None:
        found.append(f"{where}/url: {problem}")
    username = secret(raw, "username", where, found)
    password = secret(raw, "password", where, found)
    if (username is None) != (password is None):
        found.append(f"{where}: basic auth needs both a username and a password (or their _file)")
    subjects = raw.get("subjects") or []
    subjects = [subjects] if isinstance(subjects, str) else subjects
    if not isinstance(subjects, list) or not all(isinstance(s, str) and s for s in subjects):
        found.append(f"{where}/subjects: expected a list of subject names")
        subjects = []
    problems.extend(found)
    if found:
        return None
    return SchemaRegistrySettings(name, base_url(str(raw["url"]).strip()), username, password, tuple(subjects))


def parse_schemaregistries(raw: Any, problems: list[str], secret: Secret) -> dict[str, SchemaRegistrySettings]:
    """The section (after `${VAR}` expansion); each problem is `"/pointer: text"`. A registry with a problem is
    left out, so references to it are errors rather than unauthenticated requests."""
    where = "/schemaregistries"
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a mapping of registry names to {{url, username, password, subjects}}")
        return {}
    out: dict[str, SchemaRegistrySettings] = {}
    for name, value in raw.items():
        registry = _registry(str(name), value, f"{where}/{name}", problems, secret)
        if registry is None:
            continue
        if registry.name.lower() in {n.lower() for n in out}:
            problems.append(f"{where}/{name}: registry names are case-insensitive and {name!r} is given twice")
            continue
        out[registry.name] = registry
    return out


def schema_registries_section(raw: Any, problems: list[str]) -> dict[str, SchemaRegistrySettings]:
    """The `schemaregistries` section of a decoded gateway.yaml (`${VAR}` expanded), alone."""
    section = expand_env(raw.get("schemaregistries"), "/schemaregistries", problems) if isinstance(raw, dict) \
        else None
    return parse_schemaregistries(section, problems, read_secret)


def load_schema_registries(path: str | Path) -> tuple[dict[str, SchemaRegistrySettings], list[Diagnostic]]:
    """Only the `schemaregistries` section of a gateway.yaml (the offline commands read it with the others that
    judging needs: gateway.settings.load_judging_settings)."""
    raw, problem = decode_file(Path(path))
    if problem is not None:
        return {}, []  # load_judging_settings reports the unreadable file
    problems: list[str] = []
    registries = schema_registries_section(raw, problems)
    return registries, settings_diagnostics(path, problems)
