"""gateway.yaml `registry.write` and `registry.events`: who may write to the registry API, and where its change
events go. Read here, with the settings' one-value readers, so that settings.py only calls two functions.

```yaml
registry:
  write:                            # the write API (PUT/POST/PATCH/DELETE under /registry); off without it
    apikey_file: /run/secrets/registry-apikey   # `X-API-Key: KEY` or `Authorization: Bearer KEY`
    username: ci                    # and/or basic auth, both or neither (or username_file / password_file)
    password_file: /run/secrets/registry-password
    endpoints: false                # true: writes may add, change and remove endpoints too
    addresses: [127.0.0.1]          # loopback, link-local or 0.0.0.0 addresses an endpoint written may name
  events:                           # a CloudEvent for every change of the registry served (events.py)
    endpoint: registry.changes      # a producer endpoint of the documents: any adapter (Kafka, MQTT, NATS, AMQP, HTTP)
    max_entity_bytes: 65536         # an entity larger than this travels as its self URL only
```

A `write` section without any credential is an error: the registry is never writable without them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway import config_values
from gateway.config_values import read_secret

WRITE_KEYS = ("apikey", "apikey_file", "username", "username_file", "password", "password_file", "endpoints",
              "addresses")
EVENT_KEYS = ("endpoint", "max_entity_bytes")
DEFAULT_MAX_ENTITY_BYTES = 65536


@dataclass(frozen=True, slots=True)
class WriteSettings:
    """The credentials a write must carry: an API key, basic auth, or either of both when both are given."""

    apikey: str | None = field(default=None, repr=False)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    # what the writes may say about endpoints (registry_api/endpoint_policy.py): off, and no loopback,
    # link-local or unspecified address unless listed
    endpoints: bool = False
    addresses: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EventSettings:
    endpoint: str
    max_entity_bytes: int = DEFAULT_MAX_ENTITY_BYTES


def read_write(raw: Any, where: str, problems: list[str]) -> WriteSettings | None:
    """`registry.write`, or None when absent (writes off)."""
    raw = config_values.section(raw, where, WRITE_KEYS, problems)
    if raw is None:
        return None
    apikey = read_secret(raw, "apikey", where, problems)
    username = read_secret(raw, "username", where, problems)
    password = read_secret(raw, "password", where, problems)
    if (username is None) != (password is None):
        problems.append(f"{where}: basic auth needs both a username and a password (or their _file)")
        return None
    if username is not None and (not username or ":" in username or not password):
        problems.append(f"{where}: the basic auth username must be non-empty without ':', the password non-empty")
        return None
    if apikey is not None and not apikey.strip():
        problems.append(f"{where}/apikey: the API key is empty")
        return None
    if apikey is None and username is None:
        problems.append(f"{where}: the registry is never writable without credentials: give apikey (or "
                        "apikey_file), or username and password (or their _file)")
        return None
    endpoints = False
    if raw.get("endpoints") is not None:
        try:
            endpoints = config_values.flag(raw["endpoints"])
        except config_values.ValueProblem as exc:
            problems.append(f"{where}/endpoints: {exc}")
            return None
    addresses = raw.get("addresses") or []
    if not isinstance(addresses, list) or not all(isinstance(a, str) and a.strip() for a in addresses):
        problems.append(f"{where}/addresses: expected a list of host names, addresses or CIDR ranges, found "
                        f"{addresses!r}")
        return None
    return WriteSettings(apikey, username, password, endpoints, tuple(a.strip() for a in addresses))


def read_events(raw: Any, where: str, problems: list[str]) -> EventSettings | None:
    """`registry.events`, or None when absent (no change events)."""
    raw = config_values.section(raw, where, EVENT_KEYS, problems)
    if raw is None:
        return None
    try:
        endpoint = config_values.text(raw.get("endpoint"))
    except config_values.ValueProblem as exc:
        problems.append(f"{where}/endpoint: {exc} (the id of a producer endpoint in the documents)")
        return None
    limit = config_values.optional_integer(raw, "max_entity_bytes", where, problems, least=0)
    return EventSettings(endpoint, DEFAULT_MAX_ENTITY_BYTES if limit is None else limit)
