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
| `group_instance_id` | source | none | static membership (KIP-345): a gateway restarted with the same id within `session_timeout_ms` takes its partitions back at once, with no rebalance and no wait for the dead member's session to end; a stopped one keeps them that long (it does not leave the group). With `--workers N`, worker i uses `<id>-<i>` |
| `max_poll_interval_ms` | source | `300000` | longest pause between fetches before the consumer leaves its group |
| `commit_interval_ms` | source | `200` | how often acknowledged offsets are committed |
| `commit_every` | source | `1000` | also commit as soon as this many messages were acknowledged |
| `max_unacked` | source | `10000` | messages handed out and not yet acknowledged before fetching pauses (backpressure) |
| `fetch_max_records` | source | `2000` | most records taken from the client per fetch |
| `max_partition_fetch_bytes` | source | `1048576` | most bytes fetched per partition per request |
| `fetch_max_wait_ms` | source | `500` | longest the broker may hold a fetch waiting for data (lower: less latency at low rates, more requests) |
| `fetch_min_bytes` | source | `1` | bytes the broker waits for before answering a fetch |
| `fetch_pacing_ms` | source | `10` | at high rates, raise the fetch minimum to about this many milliseconds of the traffic read, so a busy route goes round fewer, larger times; off below 64 KiB a fetch, and while on the broker holds a fetch at most three such windows (`0`: never; fetch_pacing.py) |
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
from dataclasses import dataclass, field, replace
from typing import Any

from gateway.errors import AdapterError
from protocol_adapters.base import EndpointConfig, TlsSettings
from protocol_adapters.option_values import ADDRESS, OptionError, OptionReader, user_info_refusal
from protocol_adapters.tls import client_context

_SCHEMES = {"": "PLAINTEXT", "tcp": "PLAINTEXT", "kafka": "PLAINTEXT", "plaintext": "PLAINTEXT",
            "ssl": "SSL", "kafka+ssl": "SSL", "sasl_plaintext": "SASL_PLAINTEXT", "sasl_ssl": "SASL_SSL"}
_SASL = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_ISOLATION = ("read_uncommitted", "read_committed")
_RESETS = ("earliest", "latest", "none")
INSTANCE = "group_instance_id"  # the static member id (KIP-345)
_COMPRESSIONS = ("gzip", "snappy", "lz4", "zstd")


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
    fetch_pacing_ms: int = 10
    commit: bool = True  # False: an observer (xgate capture) that reads in a group of its own and never commits
    transactional_id: str | None = None  # set by an exactly-once route (gateway/routes/exactly_once.py)
    isolation_level: str = "read_uncommitted"
    group_instance_id: str | None = None  # static membership (KIP-345)


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
        return AdapterError(f"Kafka client {client_id!r}: {message}")
    return client_context(tls, fail)


def source_options(config: EndpointConfig) -> KafkaSourceOptions:
    read = _reader(config)
    topics = _topics(read)
    if not topics:
        raise read.fail("needs `topic` or `topics` in its protocoloptions", "topic")
    if any("{" in topic for topic in topics):
        raise read.fail(f"cannot subscribe to a templated topic {topics!r}", "topic")
    reset = read.text("autooffsetreset", default="earliest", choices=_RESETS, lower=True)
    session = read.integer("session_timeout_ms", default=10000, least=1)
    return KafkaSourceOptions(
        endpoint_id=config.endpoint_id,
        connection=_connection(config, read),
        topics=topics,
        group_id=str(read.value("consumergroup") or f"xgate-{config.endpoint_id}"),
        auto_offset_reset=reset,
        session_timeout_ms=session,
        heartbeat_interval_ms=read.integer("heartbeat_interval_ms", default=min(3000, max(session // 3, 1)),
                                           least=0),
        rebalance_timeout_ms=read.integer("rebalance_timeout_ms", default=session, least=0),
        max_poll_interval_ms=read.integer("max_poll_interval_ms", default=300000, least=0),
        commit_interval=read.integer("commit_interval_ms", default=200, least=1) / 1000,
        commit_every=read.integer("commit_every", default=1000, least=0),
        max_unacked=read.integer("max_unacked", default=10000, least=1),
        fetch_max_records=read.integer("fetch_max_records", default=2000, least=1),
        max_partition_fetch_bytes=read.integer("max_partition_fetch_bytes", default=1048576, least=0),
        fetch_max_wait_ms=read.integer("fetch_max_wait_ms", default=500, least=0),
        fetch_min_bytes=read.integer("fetch_min_bytes", default=1, least=1),
        fetch_pacing_ms=read.integer("fetch_pacing_ms", default=10, least=0),
        backoff_max=read.integer("reconnect_backoff_max_ms", default=5000, least=0) / 1000,
        transactional_id=_transactional_id(config),
        isolation_level=read.text("isolation_level", default="read_uncommitted", choices=_ISOLATION, lower=True),
        group_instance_id=read.text(INSTANCE, default=None),
    )


def sink_options(config: EndpointConfig) -> KafkaSinkOptions:
    read = _reader(config)
    opts = config.options
    topic = opts.get("topic")
    if not isinstance(topic, str) or not topic:
        raise read.fail(f"needs a `topic` in its protocoloptions to produce to, found {topic!r}", "topic")
    if "{" in topic:
        raise read.fail(f"cannot produce to a templated topic {topic!r}", "topic")
    key = opts.get("key")
    headers = opts.get("headers") or {}
    if not isinstance(headers, Mapping):
        raise read.fail(f"option 'headers': expected a map of strings, found {headers!r}", "headers")
    acks = _acks(read, opts.get("acks"))
    idempotent = read.flag("enable_idempotence", default=acks == "all")
    if idempotent and acks != "all":
        raise read.fail("option 'enable_idempotence': true needs acks -1 (all)", "enable_idempotence")
    return KafkaSinkOptions(
        endpoint_id=config.endpoint_id,
        connection=_connection(config, read),
        topic=topic,
        acks=acks,
        idempotent=idempotent,
        partition=read.integer("partition", default=None, least=0),
        default_key=key.encode() if isinstance(key, str) and key and "{" not in key else None,
        default_headers=tuple((str(name), str(value).encode()) for name, value in headers.items()),
        linger_ms=read.integer("linger_ms", default=5, least=0),
        max_batch_size=read.integer("max_batch_size", default=131072, least=0),
        max_request_size=read.integer("max_request_size", default=1048576, least=0),
        compression_type=read.text("compression_type", default=None, choices=_COMPRESSIONS, lower=True),
        transactional_id=_transactional_id(config),
    )


def _connection(config: EndpointConfig, read: OptionReader) -> Connection:
    if not config.uris:
        raise read.fail('has no bootstrap server: protocoloptions.endpoints needs {"bootstrap.servers": '
                        '["host:port", ...]} (or a `uri` entry), or gateway.yaml `uris`', ADDRESS)
    servers: list[str] = []
    schemes: set[str] = set()
    for uri in config.uris:
        if (refusal := user_info_refusal(uri)) is not None:
            raise read.fail(refusal, ADDRESS)
        scheme, _, rest = uri.rpartition("://")
        host_port = rest.split("/", 1)[0]
        if scheme.lower() not in _SCHEMES or not host_port:
            raise read.fail(f"cannot read Kafka bootstrap server {uri!r}", ADDRESS)
        schemes.add(_SCHEMES[scheme.lower()])
        servers.append(host_port if ":" in host_port else f"{host_port}:9092")
    sasl = config.extra.get("sasl_mechanism")
    if sasl is not None and str(sasl).upper() not in _SASL:
        raise read.fail(f"`sasl_mechanism` must be one of {', '.join(_SASL)}, not {sasl!r}", "sasl_mechanism")
    protocol = config.extra.get("security_protocol") or _derived_protocol(schemes, config, read, sasl is not None)
    return Connection(
        bootstrap_servers=tuple(servers),
        client_id=str(read.value("client_id") or f"xgate-{config.endpoint_id}"),
        security_protocol=str(protocol).upper(),
        sasl_mechanism=str(sasl).upper() if sasl else None,
        username=config.username,
        password=config.password,
        tls=config.tls,
        request_timeout_ms=read.integer("request_timeout_ms", default=15000, least=0),
        connect_timeout=read.integer("connect_timeout_ms", default=10000, least=0) / 1000,
    )


def _derived_protocol(schemes: set[str], config: EndpointConfig, read: OptionReader, sasl: bool) -> str:
    if len(schemes) > 1:
        raise read.fail(f"mixes security protocols in its uris: {sorted(schemes)}", ADDRESS)
    protocol = schemes.pop()
    tls = protocol in ("SSL", "SASL_SSL") or config.tls is not None
    if sasl or protocol.startswith("SASL"):
        return "SASL_SSL" if tls else "SASL_PLAINTEXT"
    return "SSL" if tls else "PLAINTEXT"


def _transactional_id(config: EndpointConfig) -> str | None:
    value = config.extra.get("transactional_id")  # set by an exactly-once route, never by documents
    return str(value) if value else None


def _topics(read: OptionReader) -> tuple[str, ...]:
    opts = read.config.options
    name = "topics" if opts.get("topics") else "topic"
    raw = opts.get(name) or ()
    if not isinstance(raw, (str, list, tuple)) or not all(isinstance(item, str) for item in raw):
        raise read.fail(f"option {name!r}: expected a topic name or a list of them, found {raw!r}", name)
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    return tuple(dict.fromkeys(item.strip() for item in items if item.strip()))


def _acks(read: OptionReader, value: Any) -> int | str:
    if value is None or str(value).lower() in ("all", "-1", "0"):
        return "all"
    if str(value) == "1":
        return 1
    raise read.fail(f"option 'acks': expected -1, 0, 1 or all, found {value!r}", "acks")


def _reader(config: EndpointConfig) -> OptionReader:
    return OptionReader(config, "Kafka")


__all__ = [
    "Connection",
    "KafkaSinkOptions",
    "KafkaSourceOptions",
    "OptionError",
    "share_source",
    "sink_options",
    "source_options",
    "ssl_context",
]


def share_source(config: EndpointConfig, worker: int) -> EndpointConfig:
    """`xgate run --workers N`: every worker joins the endpoint's consumer group (`consumergroup`, default
    `xgate-<endpoint id>`), so Kafka already hands each partition to one worker. A static member id
    (`group_instance_id`) must differ between members: worker i gets `<id>-<i>`."""
    if config.options.get(INSTANCE):
        return replace(config, options={**config.options, INSTANCE: f"{config.options[INSTANCE]}-{worker}"})
    if config.extra.get(INSTANCE):
        return replace(config, extra={**config.extra, INSTANCE: f"{config.extra[INSTANCE]}-{worker}"})
    return config
