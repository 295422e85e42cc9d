"""Frozen options for the Kafka source and sink, built from an EndpointConfig.

Bootstrap servers come from `config.uris`: `HOST:PORT`, `tcp://`, `kafka://`, `PLAINTEXT://`,
`SSL://`, `SASL_PLAINTEXT://` or `SASL_SSL://HOST:PORT` (the scheme picks the security protocol
unless `config.extra["security_protocol"]` says otherwise). Every uri is one bootstrap server.

Read from `config.options` (the endpoint's `protocoloptions`, xRegistry 1.0 names):

| name | role | default | meaning |
|---|---|---|---|
| `topic` | both | none | sink: the topic every message is produced to (required); source: the topic subscribed to |
| `topics` | source | `[topic]` | several topics to subscribe to (list or comma-separated string) |
| `consumergroup` | source | `xgate-<endpoint id>` | consumer group the source joins; offsets are committed there |
| `autooffsetreset` | source | `earliest` | where a group without a committed offset starts: `earliest`, `latest` or `none` (fail) |
| `acks` | sink | `-1` (all) | `-1`/`all`: the whole ISR confirms; `1`: the leader confirms. `0` is read as `-1`: the gateway never publishes without a confirmation |
| `partition` | sink | none | fixed partition to produce to (otherwise the key picks it) |
| `key` | sink | none | key for records whose envelope has none (templates with `{...}` are ignored) |
| `headers` | sink | none | map of headers added to every record unless the envelope already carries that name |
| `enableautocommit`, `keyserializer`, `valueserializer` | - | - | ignored: offsets are committed only after delivery, bodies and keys pass through as bytes |

Client tuning, read from `config.options` and then `config.extra` (aiokafka names):

| name | role | default | meaning |
|---|---|---|---|
| `client_id` | both | `xgate-<endpoint id>` | client id sent to the broker |
| `session_timeout_ms` | source | `10000` | group session timeout |
| `heartbeat_interval_ms` | source | `3000`, at most a third of the session | group heartbeat interval |
| `rebalance_timeout_ms` | source | `session_timeout_ms` | how long the broker waits for members to rejoin during a rebalance |
| `max_poll_interval_ms` | source | `300000` | longest pause between fetches before the consumer leaves its group |
| `commit_interval_ms` | source | `200` | how often acknowledged offsets are committed |
| `commit_every` | source | `1000` | also commit as soon as this many messages were acknowledged |
| `max_unacked` | source | `10000` | messages handed out and not yet acknowledged before fetching pauses (backpressure) |
| `fetch_max_records` | source | `500` | most records taken from the client per fetch |
| `max_partition_fetch_bytes` | source | `1048576` | most bytes fetched per partition per request |
| `fetch_max_wait_ms` | source | `500` | longest the broker may hold a fetch waiting for data (lower: less latency at low rates, more requests) |
| `fetch_min_bytes` | source | `1` | bytes the broker waits for before answering a fetch |
| `isolation_level` | source | `read_uncommitted` | `read_committed`: skip records of aborted transactions (always so in an exactly-once route) |
| `enable_idempotence` | sink | `true` with acks all | idempotent producer: a retried send is written once per partition, in order; needs acks all |
| `linger_ms` | sink | `5` | how long the producer waits to batch records |
| `max_batch_size` | sink | `131072` | bytes per partition batch |
| `max_request_size` | sink | `1048576` | largest request (a record above it is a non-retriable error) |
| `compression_type` | sink | none | `gzip`, `snappy`, `lz4` or `zstd` |
| `request_timeout_ms` | both | `15000` | broker request timeout; bounds how long a `send` waits while the broker is down |
| `connect_timeout_ms` | both | `10000` | bound on connecting (bootstrap) and on closing |
| `reconnect_backoff_max_ms` | source | `5000` | ceiling of the exponential backoff (with jitter) after fetch errors |

Credentials and TLS only from settings: `config.username` / `config.password` with
`config.extra["sasl_mechanism"]` (`PLAIN`, `SCRAM-SHA-256`, `SCRAM-SHA-512`; setting it selects
`SASL_PLAINTEXT`, or `SASL_SSL` with TLS); TLS from `config.tls` (`ca_file` alone trusted when given,
`cert_file`/`key_file`, `verify`; setting it selects `SSL`); `config.extra["security_protocol"]` overrides
the protocol derived from the uri scheme. A uri with user info is refused. The integration tests run
TLS and SASL against a private Apache Kafka with such listeners (tests/contract/test_kafka_security.py).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.errors import AdapterError
from protocol_adapters.base import EndpointConfig, TlsSettings
from protocol_adapters.option_values import read_flag, user_info_refusal
from protocol_adapters.tls import client_context

_SCHEMES = {"": "PLAINTEXT", "tcp": "PLAINTEXT", "kafka": "PLAINTEXT", "plaintext": "PLAINTEXT",
            "ssl": "SSL", "kafka+ssl": "SSL", "sasl_plaintext": "SASL_PLAINTEXT", "sasl_ssl": "SASL_SSL"}
_SASL = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_RESETS = ("earliest", "latest", "none")


@dataclass(frozen=True, slots=True)
class Connection:
    """What both roles need to reach the cluster."""

    bootstrap_servers: tuple[str, ...]
    client_id: str
    security_protocol: str
    sasl_mechanism: str | None
    username: str | None
    password: str | None = field(repr=False)  # never in a log line or a traceback's locals
    tls: TlsSettings | None
    request_timeout_ms: int
    connect_timeout: float

    def client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments shared by AIOKafkaConsumer and AIOKafkaProducer."""
        kwargs: dict[str, Any] = {
            "bootstrap_servers": list(self.bootstrap_servers),
            "client_id": self.client_id,
            "security_protocol": self.security_protocol,
            "request_timeout_ms": self.request_timeout_ms,
        }
        if self.security_protocol in ("SSL", "SASL_SSL"):
            kwargs["ssl_context"] = ssl_context(self.tls, self.client_id)
        if self.security_protocol.startswith("SASL"):
            kwargs["sasl_mechanism"] = self.sasl_mechanism or "PLAIN"
            kwargs["sasl_plain_username"] = self.username
            kwargs["sasl_plain_password"] = self.password
        return kwargs


@dataclass(frozen=True, slots=True)
class KafkaSourceOptions:
    endpoint_id: str
    connection: Connection
    topics: tuple[str, ...]
    group_id: str
    auto_offset_reset: str
    session_timeout_ms: int
    heartbeat_interval_ms: int
    rebalance_timeout_ms: int
    max_poll_interval_ms: int
    commit_interval: float
    commit_every: int
    max_unacked: int
    fetch_max_records: int
    max_partition_fetch_bytes: int
    fetch_max_wait_ms: int
    fetch_min_bytes: int
    backoff_max: float
    transactional_id: str | None = None  # set by an exactly-once route (gateway/runtime/exactly_once.py)
    isolation_level: str = "read_uncommitted"


@dataclass(frozen=True, slots=True)
class KafkaSinkOptions:
    endpoint_id: str
    connection: Connection
    topic: str
    acks: int | str
    idempotent: bool
    partition: int | None
    default_key: bytes | None
    default_headers: tuple[tuple[str, bytes], ...]
    linger_ms: int
    max_batch_size: int
    max_request_size: int
    compression_type: str | None
    transactional_id: str | None = None  # set by an exactly-once route: produce into its transaction


def ssl_context(tls: TlsSettings | None, client_id: str) -> ssl.SSLContext:
    """Reads the certificate files; a file that cannot be loaded is a non-retriable AdapterError naming it."""
    def fail(message: str) -> AdapterError:
        return AdapterError(f"Kafka client {client_id!r}: {message}", retriable=False)
    return client_context(tls, fail)


def source_options(config: EndpointConfig) -> KafkaSourceOptions:
    opts = config.options
    topics = _topics(opts)
    if not topics:
        raise _bad(config, "needs `topic` or `topics` in its protocoloptions")
    if any("{" in topic for topic in topics):
        raise _bad(config, f"cannot subscribe to a templated topic {topics!r}")
    reset = str(opts.get("autooffsetreset") or "earliest").lower()
    if reset not in _RESETS:
        raise _bad(config, f"`autooffsetreset` must be one of {', '.join(_RESETS)}, not {reset!r}")
    session = _int(config, "session_timeout_ms", 10000, 1)
    return KafkaSourceOptions(
        endpoint_id=config.endpoint_id,
        connection=_connection(config),
        topics=topics,
        group_id=str(opts.get("consumergroup") or f"xgate-{config.endpoint_id}"),
        auto_offset_reset=reset,
        session_timeout_ms=session,
        heartbeat_interval_ms=_int(config, "heartbeat_interval_ms", min(3000, max(session // 3, 1))),
        rebalance_timeout_ms=_int(config, "rebalance_timeout_ms", session),
        max_poll_interval_ms=_int(config, "max_poll_interval_ms", 300000),
        commit_interval=_int(config, "commit_interval_ms", 200, 1) / 1000,
        commit_every=_int(config, "commit_every", 1000),
        max_unacked=_int(config, "max_unacked", 10000, 1),
        fetch_max_records=_int(config, "fetch_max_records", 500, 1),
        max_partition_fetch_bytes=_int(config, "max_partition_fetch_bytes", 1048576),
        fetch_max_wait_ms=_int(config, "fetch_max_wait_ms", 500),
        fetch_min_bytes=_int(config, "fetch_min_bytes", 1, 1),
        backoff_max=_int(config, "reconnect_backoff_max_ms", 5000) / 1000,
        transactional_id=_transactional_id(config),
        isolation_level=_isolation(config),
    )


def sink_options(config: EndpointConfig) -> KafkaSinkOptions:
    opts = config.options
    topic = opts.get("topic")
    if not isinstance(topic, str) or not topic:
        raise _bad(config, "needs a `topic` in its protocoloptions to produce to")
    if "{" in topic:
        raise _bad(config, f"cannot produce to a templated topic {topic!r}")
    key = opts.get("key")
    headers = opts.get("headers") or {}
    if not isinstance(headers, Mapping):
        raise _bad(config, "`headers` must be a map of strings")
    partition = opts.get("partition")
    acks = _acks(config, opts.get("acks"))
    idempotent = read_flag(_setting(config, "enable_idempotence", acks == "all"))
    if idempotent is None or (idempotent and acks != "all"):
        raise _bad(config, "`enable_idempotence` must be true or false, and true only with acks -1 (all)")
    return KafkaSinkOptions(
        endpoint_id=config.endpoint_id,
        connection=_connection(config),
        topic=topic,
        acks=acks,
        idempotent=idempotent,
        partition=int(partition) if partition is not None else None,
        default_key=key.encode() if isinstance(key, str) and key and "{" not in key else None,
        default_headers=tuple((str(name), str(value).encode()) for name, value in headers.items()),
        linger_ms=_int(config, "linger_ms", 5),
        max_batch_size=_int(config, "max_batch_size", 131072),
        max_request_size=_int(config, "max_request_size", 1048576),
        compression_type=_setting(config, "compression_type", None),
        transactional_id=_transactional_id(config),
    )


def _connection(config: EndpointConfig) -> Connection:
    if not config.uris:
        raise _bad(config, "has no bootstrap server uri")
    servers: list[str] = []
    schemes: set[str] = set()
    for uri in config.uris:
        if (refusal := user_info_refusal(uri)) is not None:
            raise _bad(config, refusal)
        scheme, _, rest = uri.rpartition("://")
        host_port = rest.split("/", 1)[0]
        if scheme.lower() not in _SCHEMES or not host_port:
            raise _bad(config, f"cannot read Kafka bootstrap server {uri!r}")
        schemes.add(_SCHEMES[scheme.lower()])
        servers.append(host_port if ":" in host_port else f"{host_port}:9092")
    sasl = config.extra.get("sasl_mechanism")
    if sasl is not None and str(sasl).upper() not in _SASL:
        raise _bad(config, f"`sasl_mechanism` must be one of {', '.join(_SASL)}, not {sasl!r}")
    protocol = config.extra.get("security_protocol") or _derived_protocol(schemes, config, sasl is not None)
    return Connection(
        bootstrap_servers=tuple(servers),
        client_id=str(_setting(config, "client_id", f"xgate-{config.endpoint_id}")),
        security_protocol=str(protocol).upper(),
        sasl_mechanism=str(sasl).upper() if sasl else None,
        username=config.username,
        password=config.password,
        tls=config.tls,
        request_timeout_ms=_int(config, "request_timeout_ms", 15000),
        connect_timeout=_int(config, "connect_timeout_ms", 10000) / 1000,
    )


def _derived_protocol(schemes: set[str], config: EndpointConfig, sasl: bool) -> str:
    if len(schemes) > 1:
        raise _bad(config, f"mixes security protocols in its uris: {sorted(schemes)}")
    protocol = schemes.pop()
    tls = protocol in ("SSL", "SASL_SSL") or config.tls is not None
    if sasl or protocol.startswith("SASL"):
        return "SASL_SSL" if tls else "SASL_PLAINTEXT"
    return "SSL" if tls else "PLAINTEXT"


def _isolation(config: EndpointConfig) -> str:
    value = str(_setting(config, "isolation_level", "read_uncommitted")).lower()
    if value not in ("read_uncommitted", "read_committed"):
        raise _bad(config, f"`isolation_level` must be read_uncommitted or read_committed, not {value!r}")
    return value


def _transactional_id(config: EndpointConfig) -> str | None:
    value = config.extra.get("transactional_id")
    return str(value) if value else None


def _topics(opts: Mapping[str, Any]) -> tuple[str, ...]:
    raw = opts.get("topics") or opts.get("topic") or ()
    items = raw.split(",") if isinstance(raw, str) else [str(item) for item in raw]
    return tuple(dict.fromkeys(item.strip() for item in items if item.strip()))


def _acks(config: EndpointConfig, value: Any) -> int | str:
    if value is None or str(value).lower() in ("all", "-1", "0"):
        return "all"
    if str(value) == "1":
        return 1
    raise _bad(config, f"`acks` must be -1, 0 or 1, not {value!r}")


def _setting(config: EndpointConfig, name: str, default: Any) -> Any:
    value = config.options.get(name)
    if value is None:
        value = config.extra.get(name, default)
    return value


def _int(config: EndpointConfig, name: str, default: int, minimum: int = 0) -> int:
    value = _setting(config, name, default)
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise _bad(config, f"`{name}` must be an integer, not {value!r}") from None
    if number < minimum:
        raise _bad(config, f"`{name}` must be at least {minimum}, not {number}")
    return number


def _bad(config: EndpointConfig, message: str) -> AdapterError:
    return AdapterError(f"Kafka endpoint {config.endpoint_id!r} {message}", retriable=False)
