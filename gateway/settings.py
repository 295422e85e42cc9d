"""Gateway settings: `gateway.yaml` beside the documents (routes, connection secrets, runtime knobs).

Registry documents describe endpoints; they never carry credentials (the
endpoint spec keeps them out). Those come from here: values may be written
as `${ENV_VAR}` or read from a file with `<name>_file`, so that secrets stay
in the environment or a mounted secret.

```yaml
routes:
  - source: telemetry.in          # consumer/subscriber endpoint id
    conformant: telemetry.valid   # producer endpoint ids
    nonconformant: telemetry.dlq
    unmatched: telemetry.dlq      # default: same as nonconformant
    policy: forward               # forward | observe | reject | drop
    inflight: 4000                # messages on their way per route (backpressure window)
    exactly_once: false           # Kafka to Kafka only: outputs and consumed offsets in one transaction
endpoints:
  telemetry.in:
    uris: [tcp://kafka-1:9092]    # overrides protocoloptions.endpoints
    options: {consumergroup: xgate-prod}   # merged over the document's protocoloptions
    username: xgate
    password: ${KAFKA_PASSWORD}
    password_file: /run/secrets/kafka      # alternative to password (so are username_file, apikey_file, token_file)
    tls: {ca: /etc/xgate/ca.pem, cert: /etc/xgate/client.pem, key: /etc/xgate/client.key, verify: true}
    sasl_mechanism: SCRAM-SHA-512          # any other key lands in the adapter's `extra`
runtime:
  inflight: 4000                  # default per-route window
  drain_timeout: 30               # seconds SIGTERM waits for in-flight messages
  summary_interval: 0             # seconds between live summary lines on stderr (0: off)
  metrics_address: 127.0.0.1:9464 # /metrics /healthz /readyz ("" turns the server off)
  reload_debounce: 1.0            # seconds of quiet after a file change before reloading
  workers: 1                      # processes sharing every source (a core each); see docs/service.md "Using every core"
  exactly_once: false             # default of every route's exactly_once
  shadow_dir: ../candidate        # the shadow candidate's folder (default DIR/shadow); outside DIR, laid over it
  limits:                         # past one, a message gets a `limit` verdict (gateway/limits.py); these are the defaults
    max_body_bytes: 1048576
    max_headers: 100
    max_header_bytes: 8192
    max_batch_events: 1000
    reject_duplicate_keys: true   # a JSON body or event naming one member twice is `decode` (docs/validation.md, rule 5.7)
metrics:                          # who may read /metrics /healthz /readyz (default: anyone on 127.0.0.1)
  tls: {cert: /etc/xgate/metrics.pem, key: /etc/xgate/metrics.key, ca: /etc/xgate/scrapers-ca.pem}
  username: prometheus            # basic auth: username and password (or their _file) together
  password_file: /run/secrets/metrics-password
  probes_need_auth: true          # false: /healthz and /readyz answer without credentials
remote:                           # http(s) references in documents; off while `allow` is empty (the default)
  allow: [schemas.example.com, "*.registry.example.com", 10.20.0.0/16]   # hosts, *.domain, host:port, IPs, CIDRs
  timeout: 5                      # seconds for one fetch, connect to last byte
  max_bytes: 4194304              # a larger response is refused
  cache_ttl: 300                  # seconds a fetched document is reused (a failed refetch keeps the old copy)
schemaregistries:                 # Confluent-compatible registries `confluent://<name>/...` references name
  main:
    url: https://registry.example.com:8081   # its host must be on `remote.allow` too
    username: xgate               # basic auth, both or neither (or username_file / password_file)
    password: ${REGISTRY_PASSWORD}
    subjects: [orders-value]      # optional: the only subjects documents may name (fetched at load)
registry:                         # the read-only xRegistry API, /registry on the metrics address
  base_url: https://xgate.example.com/registry   # self URLs behind a proxy (default: from the request's Host)
  address: 127.0.0.1:9465         # also at the root of an address of its own (default: none; same TLS and auth)
  state_dir: /var/lib/xgate       # epochs and createdat kept across restarts (default: beside the config directory)
  write: {apikey_file: /run/secrets/registry-apikey}   # writes allowed with these credentials (sections/registry.py)
  events: {endpoint: registry.changes}                 # change events to this producer endpoint (sections/registry.py)
sources:                          # xRegistry servers followed beside the local files (none: nothing fetched)
  - url: https://registry.example.com/registry   # the registry root, fetched as `<url>?inline`; host on `remote.allow`
    interval: 30                  # seconds between polls (at least 1); ETag, else the body digest, says "unchanged"
    bearer_token_file: /run/secrets/registry-token   # or bearer_token: ${TOKEN}, or username + password (or _file)
proxy:                            # `xgate proxy`: a Kafka wire proxy in front of this cluster (sections/proxy.py)
  upstream: kafka-1:9092
  listen: 0.0.0.0:19092
console:                          # the web console under /ui on the metrics address (sections/console.py)
  show_bodies: true
```
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gateway import config_values
from gateway.config_values import expand_env as _expand
from gateway.config_values import read_secret as _secret
from gateway.config_values import settings_diagnostics, unknown_settings
from gateway.errors import Diagnostic, Severity
from gateway.limits import DEFAULT_LIMITS, Limits
from gateway.loader.decode import decode_file
from gateway.loader.discover import SHADOW_DIR
from gateway.loader.fetch import RemoteFetcher, RemotePolicy, parse_allow
from gateway.loader.sources import DEFAULT_INTERVAL, MIN_INTERVAL, RegistrySource
from gateway.schemaregistry.config import (
    SchemaRegistrySettings,
    base_url,
    parse_schemaregistries,
    schema_registries_section,
)
from gateway.sections.access import server_context
from gateway.sections.console import ConsoleSettings, read_console
from gateway.sections.proxy import ProxySettings, read_proxy
from gateway.sections.registry import EventSettings, WriteSettings, read_events, read_write

POLICIES = ("forward", "observe", "reject", "drop")
SETTINGS_FILES = ("gateway.yaml", "gateway.yml")
# secrets an endpoint hands to its adapter in `extra`, which may also be read from `<name>_file`
_EXTRA_SECRETS = ("apikey", "token")
_TLS_KEYS = ("ca", "cert", "key", "verify")
_SOURCE_KEYS = ("url", "interval", "bearer_token", "bearer_token_file", "username", "username_file", "password",
                "password_file")


@dataclass(frozen=True, slots=True)
class RouteSettings:
    source: str
    conformant: str | None = None
    nonconformant: str | None = None
    unmatched: str | None = None
    policy: str = "forward"
    inflight: int | None = None
    origin: str = ""
    exactly_once: bool | None = None  # None: runtime.exactly_once


@dataclass(frozen=True, slots=True)
class EndpointSettings:
    uris: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    tls: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)  # may hold apikey, token


@dataclass(frozen=True, slots=True)
class RuntimeSettings:
    inflight: int = 4000
    drain_timeout: float = 30.0
    summary_interval: float = 0.0
    metrics_address: str = "127.0.0.1:9464"
    reload_debounce: float = 1.0
    limits: Limits = DEFAULT_LIMITS
    workers: int = 1  # processes, each a full gateway sharing the sources (gateway/runtime/workers.py)
    exactly_once: bool = False
    # the shadow candidate's folder (runtime/shadow.py), as written: relative to the config directory, or
    # absolute; None: DIR/shadow
    shadow_dir: str | None = None


@dataclass(frozen=True, slots=True)
class MetricsSettings:
    """Access to /metrics /healthz /readyz (served on `runtime.metrics_address`): https, basic auth."""

    tls_cert: str | None = None
    tls_key: str | None = None
    tls_ca: str | None = None  # set: clients must present a certificate it signed
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    probes_need_auth: bool = True  # false: /healthz and /readyz stay open (kubelet probes carry no secret)


@dataclass(frozen=True, slots=True)
class RegistrySettings:
    """The registry API (gateway/registry_api): self URLs behind a proxy, an address of its own, its state."""

    base_url: str | None = None
    address: str | None = None
    state_dir: str | None = None
    write: WriteSettings | None = None     # registry write API (issue 24): None = read-only
    events: EventSettings | None = None    # change events (issue 24): None = none published


@dataclass(frozen=True, slots=True)
class Settings:
    routes: tuple[RouteSettings, ...] = ()
    endpoints: dict[str, EndpointSettings] = field(default_factory=dict)
    runtime: RuntimeSettings = field(default_factory=RuntimeSettings)
    file: str | None = None
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    remote: RemotePolicy = field(default_factory=RemotePolicy)
    schemaregistries: dict[str, SchemaRegistrySettings] = field(default_factory=dict)
    sources: tuple[RegistrySource, ...] = ()
    registry: RegistrySettings = field(default_factory=RegistrySettings)
    proxy: ProxySettings | None = None     # `xgate proxy` (issue 32): None when the section is absent
    console: ConsoleSettings | None = None  # the web console under /ui (issue 37): None when off


def _registry(raw: Any, problems: list[str]) -> RegistrySettings:
    where = "/registry"
    if raw is None:
        return RegistrySettings()
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a mapping (base_url, address, state_dir, write, events)")
        return RegistrySettings()
    problems.extend(unknown_settings(raw, ("base_url", "address", "state_dir", "write", "events"), where))
    values: dict[str, str | None] = {}
    for key in ("base_url", "address", "state_dir"):
        value = raw.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            problems.append(f"{where}/{key}: expected a non-empty string, found {value!r}")
            value = None
        values[key] = value
    url = urlsplit(values["base_url"] or "")
    if values["base_url"] and (url.scheme not in ("http", "https") or not url.netloc or url.query or url.fragment):
        problems.append(f"{where}/base_url: expected an absolute http(s) URL without query, "
                        f"found {values['base_url']!r}")
        values["base_url"] = None
    port = (values["address"] or "").rpartition(":")[2]
    if values["address"] and not (port.isdigit() and 0 <= int(port) <= 65535):
        problems.append(f"{where}/address: expected host:port, found {values['address']!r}")
        values["address"] = None
    # issue 24: the write API and change events, read in gateway/sections/registry.py
    return RegistrySettings(**values, write=read_write(raw.get("write"), f"{where}/write", problems),
                            events=read_events(raw.get("events"), f"{where}/events", problems))


def _endpoints(raw: Any, problems: list[str]) -> dict[str, EndpointSettings]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append("/endpoints: expected a mapping of endpoint id -> settings (uris, options, username, ...)")
        return {}
    return {str(k): _endpoint(v, f"/endpoints/{k}", problems) for k, v in raw.items()}


def _endpoint(raw: Any, where: str, problems: list[str]) -> EndpointSettings:
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a mapping")
        return EndpointSettings()
    uris = raw.get("uris", [])
    uris = [uris] if isinstance(uris, str) else uris
    if not isinstance(uris, list) or not all(isinstance(u, str) and u.strip() for u in uris):
        problems.append(f"{where}/uris: expected a list of addresses, found {uris!r}")
        uris = []
    known = {"uris", "options", "username", "username_file", "password", "password_file", "tls",
             *(f"{name}_file" for name in _EXTRA_SECRETS)}
    options = raw.get("options") or {}
    if not isinstance(options, dict):
        problems.append(f"{where}/options: expected a mapping")
        options = {}
    extra = {k: v for k, v in raw.items() if k not in known}
    for name in _EXTRA_SECRETS:
        if (secret := _secret(raw, name, where, problems)) is not None:
            extra[name] = secret
    return EndpointSettings(tuple(str(u) for u in uris), dict(options), _secret(raw, "username", where, problems),
                            _secret(raw, "password", where, problems), _tls(raw.get("tls"), where, problems), extra)


def _tls(raw: Any, where: str, problems: list[str]) -> dict[str, Any] | None:
    """An endpoint's `tls` mapping; a misspelt key is an error, not a silently unverified connection."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        problems.append(f"{where}/tls: expected a mapping with ca, cert, key, verify")
        return None
    problems.extend(unknown_settings(raw, _TLS_KEYS, f"{where}/tls"))
    return {**raw, "verify": _flag(raw, "verify", True, f"{where}/tls", problems)}  # ${TLS_VERIFY:-true} too


def _number(raw: dict[str, Any], key: str, default: float, where: str, problems: list[str], *,
            integer: bool = False, least: float = 0) -> Any:
    """`raw[key]` read by the one value reader (`gateway.config_values`, as adapter options are): a finite number
    (an integer where `integer`) of at least `least`, or its text (`${XGATE_INFLIGHT:-1000}` expands to text);
    else the default, and the problem said."""
    value = raw.get(key, default)
    try:
        return (config_values.integer if integer else config_values.number)(value, least=least)
    except config_values.ValueProblem as problem:
        problems.append(f"{where}/{key}: {problem}")
        return default


def _flag(raw: dict[str, Any], key: str, default: bool, where: str, problems: list[str]) -> bool:
    """`raw[key]` as true or false (or their text), by the one value reader; else the default, and said."""
    try:
        return config_values.flag(raw.get(key, default))
    except config_values.ValueProblem as problem:
        problems.append(f"{where}/{key}: {problem}")
        return default


def _runtime(raw: Any, problems: list[str]) -> RuntimeSettings:
    where, defaults = "/runtime", RuntimeSettings()
    if raw is None:
        return defaults
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a mapping (inflight, drain_timeout, summary_interval, metrics_address, "
                        "reload_debounce, limits, workers)")
        return defaults
    known = ("inflight", "drain_timeout", "summary_interval", "metrics_address", "reload_debounce", "limits",
             "workers", "exactly_once", "shadow_dir")
    problems.extend(unknown_settings(raw, known, where))
    address = raw.get("metrics_address", defaults.metrics_address)
    if not isinstance(address, str):
        problems.append(f"{where}/metrics_address: expected host:port (or \"\" for no server), found {address!r}")
        address = defaults.metrics_address
    return RuntimeSettings(
        _number(raw, "inflight", defaults.inflight, where, problems, integer=True, least=1),
        float(_number(raw, "drain_timeout", defaults.drain_timeout, where, problems)),
        float(_number(raw, "summary_interval", defaults.summary_interval, where, problems)),
        address,
        float(_number(raw, "reload_debounce", defaults.reload_debounce, where, problems)),
        _limits(raw.get("limits"), f"{where}/limits", problems),
        _number(raw, "workers", defaults.workers, where, problems, integer=True, least=1),
        _flag(raw, "exactly_once", False, where, problems),
        _shadow_dir(raw.get("shadow_dir"), where, problems))


def shadow_folder(config_dir: str | Path, named: str | None) -> Path:
    """Where the shadow candidate's documents are: `runtime.shadow_dir`, else DIR/shadow."""
    if named is None:
        return Path(config_dir) / SHADOW_DIR
    folder = Path(named)
    return folder if folder.is_absolute() else Path(config_dir) / folder


def shadow_dir_problems(config_dir: Path, named: str | None) -> list[str]:
    """A named shadow folder inside the config directory (but DIR/shadow) would be loaded as active documents
    too: refused."""
    if named is None:
        return []
    folder, root = shadow_folder(config_dir, named).resolve(), config_dir.resolve()
    if folder.is_relative_to(root) and folder != root / SHADOW_DIR:
        return [(f"/runtime/shadow_dir: {named!r} is inside the config directory, whose documents are all active; "
                 f"name a folder outside it, or use {SHADOW_DIR}/ (the default)")]
    return []


def _shadow_dir(raw: Any, where: str, problems: list[str]) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw.strip():
        problems.append(f"{where}/shadow_dir: expected a folder (relative to the config directory, or absolute), "
                        f"found {raw!r}")
        return None
    return raw.strip()


def _limits(raw: Any, where: str, problems: list[str]) -> Limits:
    if raw is None:
        return DEFAULT_LIMITS
    names = [f.name for f in fields(Limits)]
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a mapping ({', '.join(names)})")
        return DEFAULT_LIMITS
    problems.extend(unknown_settings(raw, names, where))
    values = {name: _number(raw, name, getattr(DEFAULT_LIMITS, name), where, problems, integer=True, least=1)
              for name in names if not isinstance(getattr(DEFAULT_LIMITS, name), bool)}
    for name in names:
        if isinstance(getattr(DEFAULT_LIMITS, name), bool):
            values[name] = _flag(raw, name, getattr(DEFAULT_LIMITS, name), where, problems)
    return Limits(**values)


def _metrics(raw: Any, problems: list[str]) -> MetricsSettings:
    where = "/metrics"
    if raw is None:
        return MetricsSettings()
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a mapping (tls, username, password, probes_need_auth)")
        return MetricsSettings()
    known = ("tls", "username", "username_file", "password", "password_file", "probes_need_auth")
    problems.extend(unknown_settings(raw, known, where))
    username = _secret(raw, "username", where, problems)
    password = _secret(raw, "password", where, problems)
    if (username is None) != (password is None):
        problems.append(f"{where}: basic auth needs both a username and a password (or their _file)")
    elif username is not None and (not username or ":" in username or not password):
        problems.append(f"{where}: the basic auth username must be non-empty without ':', the password non-empty")
    probes = _flag(raw, "probes_need_auth", True, where, problems)
    cert, key, ca = _metrics_tls(raw.get("tls"), f"{where}/tls", problems)
    return MetricsSettings(cert, key, ca, username, password, probes)


def _metrics_tls(raw: Any, where: str, problems: list[str]) -> tuple[str | None, str | None, str | None]:
    """cert, key and ca, loaded once here so that a bad file is a settings error naming the field."""
    if raw is None:
        return None, None, None
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a mapping with cert, key and optionally ca")
        return None, None, None
    problems.extend(unknown_settings(raw, ("cert", "key", "ca"), where))
    cert, key, ca = (str(raw[k]) if raw.get(k) is not None else None for k in ("cert", "key", "ca"))
    if cert is None or key is None:
        problems.append(f"{where}: https needs both cert and key")
        return None, None, None
    try:
        server_context(cert, key, ca)
    except (OSError, ssl.SSLError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        problems.append(f"{where}: cannot load cert {cert!r}, key {key!r}" + (f", ca {ca!r}" if ca else "")
                        + f": {reason}")
        return None, None, None
    return cert, key, ca


def _remote(raw: Any, problems: list[str]) -> RemotePolicy:
    """The `remote` section; any problem in it leaves remote fetching off (fail closed)."""
    where, defaults = "/remote", RemotePolicy()
    if raw is None:
        return defaults
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a mapping (allow, timeout, max_bytes, cache_ttl)")
        return defaults
    found = unknown_settings(raw, ("allow", "timeout", "max_bytes", "cache_ttl"), where)
    allow = raw.get("allow") or []
    allow = [allow] if isinstance(allow, str) else allow
    if not isinstance(allow, list) or not all(isinstance(a, str) for a in allow):
        found.append(f"{where}/allow: expected a list of hosts, `*.domain`s, IP addresses or networks")
        allow = []
    found.extend(f"{where}/allow: {problem}" for problem in parse_allow(tuple(allow))[1])

    timeout = float(_number(raw, "timeout", defaults.timeout, where, found, least=0.001))
    max_bytes = float(_number(raw, "max_bytes", defaults.max_bytes, where, found, least=1))
    cache_ttl = float(_number(raw, "cache_ttl", defaults.cache_ttl, where, found, least=0))
    problems.extend(found)
    return defaults if found else RemotePolicy(tuple(allow), timeout, int(max_bytes), cache_ttl)


def _source(raw: Any, where: str, fetcher: RemoteFetcher, problems: list[str]) -> RegistrySource | None:
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a mapping ({', '.join(_SOURCE_KEYS)})")
        return None
    found = unknown_settings(raw, _SOURCE_KEYS, where)
    url, parts = raw.get("url"), urlsplit(str(raw.get("url") or ""))
    if not isinstance(url, str) or parts.scheme.lower() not in ("http", "https") or not parts.hostname \
            or parts.query or parts.fragment or parts.username:
        found.append(f"{where}/url: expected the registry root as an http(s) URL with a host, without query, "
                     f"fragment or credentials, found {url!r}")
    elif (refusal := fetcher.refusal(url)) is not None:
        found.append(f"{where}/url: {url} cannot be followed: {refusal}")
    interval = _number(raw, "interval", DEFAULT_INTERVAL, where, found, least=MIN_INTERVAL)  # ${POLL:-30} too
    token = _secret(raw, "bearer_token", where, found)
    username, password = _secret(raw, "username", where, found), _secret(raw, "password", where, found)
    if (username is None) != (password is None):
        found.append(f"{where}: basic auth needs both a username and a password (or their _file)")
    if token is not None and username is not None:
        found.append(f"{where}: give bearer_token or username and password, not both")
    problems.extend(found)
    return None if found else RegistrySource(base_url(str(url)), float(interval), token, username, password)


def _sources(raw: Any, remote: RemotePolicy, problems: list[str]) -> tuple[RegistrySource, ...]:
    """The `sources` section: registries followed beside the files; each host must be on `remote.allow`."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.append("/sources: expected a list of {url, interval, bearer_token | username and password}")
        return ()
    fetcher, out = RemoteFetcher(remote), list[RegistrySource]()
    for i, item in enumerate(raw):
        source = _source(item, f"/sources/{i}", fetcher, problems)
        if source is not None and any(s.url == source.url for s in out):
            problems.append(f"/sources/{i}/url: {source.url} is already listed")
        elif source is not None:
            out.append(source)
    return tuple(out)


def _remote_section(raw: Any, problems: list[str]) -> RemotePolicy:
    section = _expand(raw.get("remote"), "/remote", problems) if isinstance(raw, dict) else None
    return _remote(section, problems)


def _limits_section(raw: Any, problems: list[str]) -> Limits:
    if not isinstance(raw, dict) or not isinstance(raw.get("runtime"), dict):
        return DEFAULT_LIMITS  # a runtime section that is no mapping is `run`'s to report
    return _limits(_expand(raw["runtime"].get("limits"), "/runtime/limits", problems), "/runtime/limits", problems)


def _sources_section(raw: Any, remote: RemotePolicy, problems: list[str]) -> tuple[RegistrySource, ...]:
    if not isinstance(raw, dict):
        return ()
    return _sources(_expand(raw.get("sources"), "/sources", problems), remote, problems)


def load_judging_settings(path: str | Path) -> tuple[Settings, list[Diagnostic]]:
    """The sections judging needs, from one read of a gateway.yaml: `remote`, `schemaregistries`, `sources` and
    `runtime.limits` (the rest keep their defaults). The offline commands (`check`, `explain`, `diff`) judge as
    `run` does, yet must work where its routes and secrets are not: the other sections are not read at all."""
    raw, problem = decode_file(Path(path))
    if problem is not None:
        return Settings(file=str(path)), [problem]
    problems: list[str] = []
    remote = _remote_section(raw, problems)
    registries = schema_registries_section(raw, problems)
    sources = _sources_section(raw, remote, problems)
    limits = _limits_section(raw, problems)
    return Settings(file=str(path), runtime=RuntimeSettings(limits=limits), remote=remote,
                    schemaregistries=registries, sources=sources), settings_diagnostics(path, problems)


def load_limits(path: str | Path) -> tuple[Limits, list[Diagnostic]]:
    """Only `runtime.limits` of a gateway.yaml."""
    raw, problem = decode_file(Path(path))
    if problem is not None:
        return DEFAULT_LIMITS, []  # load_judging_settings reports an unreadable file
    problems: list[str] = []
    limits = _limits_section(raw, problems)
    return limits, settings_diagnostics(path, problems)


def load_sources(path: str | Path) -> tuple[tuple[RegistrySource, ...], list[Diagnostic]]:
    """Only the `sources` section of a gateway.yaml (checked against `remote`, whose problems are not its own)."""
    raw, problem = decode_file(Path(path))
    if problem is not None:
        return (), []  # load_judging_settings reports the unreadable file
    problems: list[str] = []
    sources = _sources_section(raw, _remote_section(raw, []), problems)
    return sources, settings_diagnostics(path, problems)


ROUTE_ROLES = ("conformant", "nonconformant", "unmatched")
_ROUTE_KEYS = ("source", *ROUTE_ROLES, "policy", "inflight", "exactly_once")


def _optional_flag(raw: dict[str, Any], name: str, where: str, problems: list[str]) -> bool | None:
    """A route's true/false setting by the one value reader; None when absent (the runtime's default applies)."""
    return None if raw.get(name) is None else _flag(raw, name, False, where, problems)


def _route(raw: Any, where: str, problems: list[str]) -> RouteSettings | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("source"), str) or not raw["source"]:
        problems.append(f"{where}: a route needs `source` (an endpoint id)")
        return None
    found = unknown_settings(raw, _ROUTE_KEYS, where)
    for role in ROUTE_ROLES:  # one destination each: a list would fan out, which routes do not do
        target = raw.get(role)
        if target is not None and (not isinstance(target, str) or not target):
            found.append(f"{where}/{role}: expected one endpoint id, found {target!r}")
    policy = str(raw.get("policy", "forward")).lower()
    if policy not in POLICIES:
        found.append(f"{where}/policy: expected one of {', '.join(POLICIES)}, found {raw.get('policy')!r}")
    inflight = config_values.optional_integer(raw, "inflight", where, found, least=1)
    problems.extend(found)
    if found:
        return None
    return RouteSettings(raw["source"], raw.get("conformant"), raw.get("nonconformant"), raw.get("unmatched"),
                         policy, inflight, where, _optional_flag(raw, "exactly_once", where, problems))


def _routes(raw: Any, problems: list[str]) -> list[RouteSettings]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.append("/routes: expected a list of routes ({source, conformant, nonconformant, unmatched, "
                        "policy, inflight})")
        return []
    routes = [r for i, item in enumerate(raw) if (r := _route(item, f"/routes/{i}", problems))]
    seen: set[str] = set()
    for route in routes:
        if route.source in seen:
            problems.append(f"{route.origin}/source: a second route from {route.source!r}")
        seen.add(route.source)
    return routes


def load_settings(config_dir: str | Path) -> tuple[Settings, list[Diagnostic]]:
    """Read gateway.yaml from the config directory (absent: defaults). Problems are collected, not raised."""
    directory = Path(config_dir)
    path = next((directory / n for n in SETTINGS_FILES if (directory / n).is_file()), None)
    if path is None:
        return Settings(), []
    return load_settings_file(path)


def load_settings_file(path: Path) -> tuple[Settings, list[Diagnostic]]:
    """Every section of one gateway.yaml, as `run` and a reload read it (`xgate lint --settings FILE` too)."""
    raw, problem = decode_file(path)
    if problem is not None:
        return Settings(file=str(path)), [problem]
    problems: list[str] = []
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        return Settings(file=str(path)), [Diagnostic(Severity.ERROR, str(path), "expected a mapping", code="settings")]
    raw = _expand(raw, "", problems)
    routes = _routes(raw.get("routes"), problems)
    endpoints = _endpoints(raw.get("endpoints"), problems)
    runtime = _runtime(raw.get("runtime"), problems)
    metrics = _metrics(raw.get("metrics"), problems)
    remote = _remote(raw.get("remote"), problems)
    schemaregistries = parse_schemaregistries(raw.get("schemaregistries"), problems, _secret)
    sources = _sources(raw.get("sources"), remote, problems)
    registry = _registry(raw.get("registry"), problems)
    proxy = read_proxy(raw.get("proxy"), problems)
    console = read_console("console" in raw, raw.get("console"), problems)
    problems.extend(shadow_dir_problems(path.parent, runtime.shadow_dir))
    problems.extend(unknown_settings(raw, ("routes", "endpoints", "runtime", "metrics", "remote", "schemaregistries",
                                           "sources", "registry", "proxy", "console"), ""))
    diagnostics = settings_diagnostics(path, problems)
    return Settings(tuple(routes), endpoints, runtime, str(path), metrics, remote,
                    schemaregistries=schemaregistries, sources=sources, registry=registry, proxy=proxy,
                    console=console), diagnostics
