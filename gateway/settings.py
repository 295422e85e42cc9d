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
    inflight: 1000                # messages on their way per route (backpressure window)
endpoints:
  telemetry.in:
    uris: [tcp://kafka-1:9092]    # overrides protocoloptions.endpoints
    options: {consumergroup: xgate-prod}   # merged over the document's protocoloptions
    username: xgate
    password: ${KAFKA_PASSWORD}
    password_file: /run/secrets/kafka      # alternative to password
    tls: {ca: /etc/xgate/ca.pem, cert: /etc/xgate/client.pem, key: /etc/xgate/client.key, verify: true}
    sasl_mechanism: SCRAM-SHA-512          # any other key lands in the adapter's `extra`
runtime:
  inflight: 1000                  # default per-route window
  drain_timeout: 30               # seconds SIGTERM waits for in-flight messages
  summary_interval: 0             # seconds between live summary lines on stderr (0: off)
  metrics_address: 127.0.0.1:9464 # /metrics /healthz /readyz ("" turns the server off)
  reload_debounce: 1.0            # seconds of quiet after a file change before reloading
```
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway.errors import Diagnostic, Severity
from gateway.loader.decode import decode_file

POLICIES = ("forward", "observe", "reject", "drop")
SETTINGS_FILES = ("gateway.yaml", "gateway.yml")
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True, slots=True)
class RouteSettings:
    source: str
    conformant: str | None = None
    nonconformant: str | None = None
    unmatched: str | None = None
    policy: str = "forward"
    inflight: int | None = None
    origin: str = ""


@dataclass(frozen=True, slots=True)
class EndpointSettings:
    uris: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)
    username: str | None = None
    password: str | None = None
    tls: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RuntimeSettings:
    inflight: int = 1000
    drain_timeout: float = 30.0
    summary_interval: float = 0.0
    metrics_address: str = "127.0.0.1:9464"
    reload_debounce: float = 1.0


@dataclass(frozen=True, slots=True)
class Settings:
    routes: tuple[RouteSettings, ...] = ()
    endpoints: dict[str, EndpointSettings] = field(default_factory=dict)
    runtime: RuntimeSettings = field(default_factory=RuntimeSettings)
    file: str | None = None


def _expand(value: Any, where: str, problems: list[str]) -> Any:
    """`${VAR}` and `${VAR:-default}` from the environment, recursively."""
    if isinstance(value, str):
        def replace(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in os.environ:
                return os.environ[name]
            if default is not None:
                return default
            problems.append(f"{where}: environment variable {name} is not set")
            return ""
        return _ENV.sub(replace, value)
    if isinstance(value, dict):
        return {k: _expand(v, f"{where}/{k}", problems) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, f"{where}/{i}", problems) for i, v in enumerate(value)]
    return value


def _secret(raw: dict[str, Any], name: str, where: str, problems: list[str]) -> str | None:
    if raw.get(name) is not None:
        return str(raw[name])
    path = raw.get(f"{name}_file")
    if path is None:
        return None
    try:
        return Path(str(path)).read_text("utf-8").strip()
    except OSError as exc:
        problems.append(f"{where}/{name}_file: cannot read {path}: {exc.strerror}")
        return None


def _endpoint(raw: Any, where: str, problems: list[str]) -> EndpointSettings:
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a mapping")
        return EndpointSettings()
    uris = raw.get("uris", [])
    uris = [uris] if isinstance(uris, str) else uris
    known = {"uris", "options", "username", "username_file", "password", "password_file", "tls"}
    options = raw.get("options") or {}
    if not isinstance(options, dict):
        problems.append(f"{where}/options: expected a mapping")
        options = {}
    tls = raw.get("tls")
    if tls is not None and not isinstance(tls, dict):
        problems.append(f"{where}/tls: expected a mapping with ca, cert, key, verify")
        tls = None
    return EndpointSettings(tuple(str(u) for u in uris), dict(options), _secret(raw, "username", where, problems),
                            _secret(raw, "password", where, problems), tls,
                            {k: v for k, v in raw.items() if k not in known})


def _route(raw: Any, where: str, problems: list[str]) -> RouteSettings | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("source"), str):
        problems.append(f"{where}: a route needs `source` (an endpoint id)")
        return None
    policy = str(raw.get("policy", "forward")).lower()
    if policy not in POLICIES:
        problems.append(f"{where}/policy: {policy!r} is not one of {', '.join(POLICIES)}")
        policy = "forward"
    inflight = raw.get("inflight")
    if inflight is not None and (not isinstance(inflight, int) or inflight < 1):
        problems.append(f"{where}/inflight: expected a positive integer")
        inflight = None
    return RouteSettings(raw["source"], raw.get("conformant"), raw.get("nonconformant"), raw.get("unmatched"),
                         policy, inflight, where)


def load_settings(config_dir: str | Path) -> tuple[Settings, list[Diagnostic]]:
    """Read gateway.yaml from the config directory (absent: defaults). Problems are collected, not raised."""
    directory = Path(config_dir)
    path = next((directory / n for n in SETTINGS_FILES if (directory / n).is_file()), None)
    if path is None:
        return Settings(), []
    raw, problem = decode_file(path)
    if problem is not None:
        return Settings(file=str(path)), [problem]
    problems: list[str] = []
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        return Settings(file=str(path)), [Diagnostic(Severity.ERROR, str(path), "expected a mapping", code="settings")]
    raw = _expand(raw, "", problems)
    routes = [r for i, item in enumerate(raw.get("routes") or []) if (r := _route(item, f"/routes/{i}", problems))]
    endpoints = {str(k): _endpoint(v, f"/endpoints/{k}", problems) for k, v in (raw.get("endpoints") or {}).items()}
    runtime_raw = raw.get("runtime") or {}
    runtime = RuntimeSettings(int(runtime_raw.get("inflight", 1000)), float(runtime_raw.get("drain_timeout", 30)),
                              float(runtime_raw.get("summary_interval", 0)),
                              str(runtime_raw.get("metrics_address", "127.0.0.1:9464")),
                              float(runtime_raw.get("reload_debounce", 1.0)))
    unknown = set(raw) - {"routes", "endpoints", "runtime"}
    problems.extend(f"/{key}: unknown setting" for key in sorted(unknown))
    diagnostics = [Diagnostic(Severity.ERROR, str(path), text.split(": ", 1)[1], pointer=text.split(": ", 1)[0],
                              code="settings") for text in problems]
    return Settings(tuple(routes), endpoints, runtime, str(path)), diagnostics
