"""gateway.yaml `proxy`: where `xgate proxy` listens and which Kafka cluster it stands in front of.

```yaml
proxy:
  upstream: [kafka-1:9092, kafka-2:9092]   # the cluster's bootstrap servers (a string or a list)
  listen: 0.0.0.0:19092                    # the bootstrap listener; the broker with node id N gets port + 1 + N
  advertised_host: gateway.internal        # the host clients are told to connect to (default: listen's host)
  policy: reject                           # for a judged topic whose endpoint has no xgate.route.policy label
  max_frame_bytes: 104857600               # a larger request frame closes its connection (Kafka's own default)
  frame_timeout: 30                        # seconds a begun request frame may take to arrive whole
  tls: {cert: /tls/proxy.crt, key: /tls/proxy.key, client_ca: /tls/clients.crt}   # clients connect over TLS
  upstream_tls: {ca: /tls/cluster-ca.crt, cert: ..., key: ..., verify: true}       # the proxy to the cluster
```

SASL needs nothing here: its requests (SaslHandshake, SaslAuthenticate) pass through to the broker as bytes,
so each client authenticates to the cluster itself.

Which topics are judged comes from the documents: every topic a KAFKA endpoint names (gateway/proxy/topics.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway import config_values

KEYS = ("upstream", "listen", "advertised_host", "policy", "max_frame_bytes", "frame_timeout", "tls", "upstream_tls")
TLS_KEYS = ("cert", "key", "client_ca")
UPSTREAM_TLS_KEYS = ("ca", "cert", "key", "verify")
POLICIES = ("reject", "observe")
DEFAULT_LISTEN = "127.0.0.1:19092"
DEFAULT_MAX_FRAME_BYTES = 104857600
DEFAULT_FRAME_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class ProxySettings:
    upstream: tuple[tuple[str, int], ...]
    listen_host: str
    listen_port: int
    advertised_host: str
    policy: str = "reject"
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    frame_timeout: float = DEFAULT_FRAME_TIMEOUT
    tls: dict[str, str] | None = None           # the listeners' certificate (cert, key, client_ca)
    upstream_tls: dict[str, Any] | None = None  # how the proxy connects to the cluster (ca, cert, key, verify)

    def broker_port(self, node_id: int) -> int:
        """The listener of one upstream broker: Kroxylicious' port-per-broker scheme, from the bootstrap port."""
        return self.listen_port + 1 + node_id


def host_port(text: Any, where: str) -> tuple[str, int]:
    """"host:port" (a bracketed IPv6 host too) as a pair; a config_values.ValueProblem says what is wrong."""
    if not isinstance(text, str) or ":" not in text:
        raise config_values.ValueProblem(f"{where}: expected host:port, found {text!r}")
    host, _, port = text.rpartition(":")
    host = host.strip("[]")
    try:
        number = config_values.integer(port, least=1, most=65535)
    except config_values.ValueProblem as exc:
        raise config_values.ValueProblem(f"{where}: the port {port!r}: {exc}") from None
    if not host:
        raise config_values.ValueProblem(f"{where}: no host in {text!r}")
    return host, number


def read_proxy(raw: Any, problems: list[str]) -> ProxySettings | None:
    """The `proxy` section, or None when it is absent or wrong (each problem said)."""
    where = "/proxy"
    found = len(problems)  # any problem of the section (an unknown key too) leaves it unread
    raw = config_values.section(raw, where, KEYS, problems)
    if raw is None:
        return None
    upstream_raw = raw.get("upstream")
    servers = upstream_raw.split(",") if isinstance(upstream_raw, str) else upstream_raw
    upstream: list[tuple[str, int]] = []
    if not isinstance(servers, list) or not servers:
        problems.append(f"{where}/upstream: expected the cluster's bootstrap servers (host:port, or a list), "
                        f"found {upstream_raw!r}")
    else:
        for index, server in enumerate(servers):
            try:
                upstream.append(host_port(server.strip() if isinstance(server, str) else server,
                                          f"{where}/upstream/{index}"))
            except config_values.ValueProblem as exc:
                problems.append(str(exc))
    listen = (DEFAULT_LISTEN.rpartition(":")[0], int(DEFAULT_LISTEN.rpartition(":")[2]))
    try:
        listen = host_port(raw.get("listen", DEFAULT_LISTEN), f"{where}/listen")
    except config_values.ValueProblem as exc:
        problems.append(str(exc))
    advertised = raw.get("advertised_host", listen[0])
    if not isinstance(advertised, str) or not advertised or advertised in ("0.0.0.0", "::"):
        problems.append(f"{where}/advertised_host: a host clients can connect to is needed "
                        f"(listen is on {listen[0]!r}), found {advertised!r}")
    policy = "reject"
    try:
        policy = config_values.text(raw.get("policy", "reject"), choices=POLICIES, lower=True)
    except config_values.ValueProblem as exc:
        problems.append(f"{where}/policy: {exc}")
    limit = config_values.optional_integer(raw, "max_frame_bytes", where, problems, least=1024)
    frame_timeout = DEFAULT_FRAME_TIMEOUT
    try:
        frame_timeout = config_values.number(raw.get("frame_timeout", DEFAULT_FRAME_TIMEOUT), above=0)
    except config_values.ValueProblem as exc:
        problems.append(f"{where}/frame_timeout: {exc}")
    tls = _tls(raw.get("tls"), f"{where}/tls", TLS_KEYS, ("cert", "key"), problems)
    upstream_tls = _tls(raw.get("upstream_tls"), f"{where}/upstream_tls", UPSTREAM_TLS_KEYS, (), problems)
    if len(problems) > found:
        return None
    return ProxySettings(tuple(upstream), listen[0], listen[1], str(advertised), policy,
                         DEFAULT_MAX_FRAME_BYTES if limit is None else limit, frame_timeout, tls, upstream_tls)


def _tls(raw: Any, where: str, keys: tuple[str, ...], required: tuple[str, ...],
         problems: list[str]) -> dict[str, Any] | None:
    raw = config_values.section(raw, where, keys, problems)
    if raw is None:
        return None
    for key in required:
        if not isinstance(raw.get(key), str) or not raw[key]:
            problems.append(f"{where}/{key}: a file path is needed")
    for key in ("cert", "key", "ca", "client_ca"):
        if key in raw and not isinstance(raw[key], str):
            problems.append(f"{where}/{key}: expected a file path, found {raw[key]!r}")
    if "verify" in raw:
        try:
            config_values.flag(raw["verify"])
        except config_values.ValueProblem as exc:
            problems.append(f"{where}/verify: {exc}")
    return dict(raw)
