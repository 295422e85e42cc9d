"""Frozen options for the NATS source and sink, built from an EndpointConfig.

Servers come from `config.uris` (`nats://HOST:PORT`, `tls://`, `ws://`, `wss://`; `tcp://` is read as
`nats://`); every uri is one server of the pool.

Read from `config.options` (the endpoint's `protocoloptions`, xRegistry 1.0 names), falling back to
`config.extra` for the xgate extensions:

| name | role | default | meaning |
|---|---|---|---|
| `subject` | both | none | sink: the subject every message is published to (required); source: the subject subscribed to when `subjectfilter` is absent |
| `subjectfilter` | source | `subject` | subject (wildcards allowed) the source subscribes to, or the JetStream consumer's filter subject |
| `queuegroup` | source | none | core mode: queue group of the subscription (load sharing between gateway replicas) |
| `stream` | both | none | JetStream stream name. Set: JetStream mode (durable pull consumer, explicit ack; the sink awaits the PubAck). Absent: core NATS (the source is at-most-once) |
| `subjects` | both | `[subjectfilter or subject]` | subjects of the stream when xgate creates it (list or comma-separated string) |
| `createstream` | both | `true` | create the stream when it does not exist (file storage, limits retention) |
| `durable` | source | `xgate-<endpoint id>` | JetStream durable consumer name (characters other than letters, digits, `-` and `_` become `_`) |
| `ackwait` | source | `30` | seconds JetStream waits for an ack before redelivering (applied when the consumer is created) |
| `maxackpending` | source | server default (1000) | unacknowledged messages the consumer allows outstanding (applied when the consumer is created) |
| `acksync` | source | `false` | `true`: an ack waits for the server's confirmation (double ack); `false`: fire-and-forget (a lost ack is a redelivery, never a loss) |
| `batch` | source | `256` | JetStream: most messages per fetch; both modes: size of the source's buffer ahead of the runtime |
| `fetchtimeout` | source | `1.0` | seconds one JetStream fetch waits for messages (also bounds how long closing the source takes) |
| `pendinglimit` | source | `65536` | core mode: messages the client buffers for a slow runtime before it drops (slow consumer) |
| `publishtimeout` | sink | `5.0` | seconds to wait for the PubAck (JetStream) or the server's PONG after a flush (core) |
| `connecttimeout` | both | `2.0` | seconds for one connection attempt |
| `reconnectwaitmax` | both | `5.0` | ceiling of the exponential reconnect backoff (with jitter) after a connection was lost |

Credentials only from settings (`config.username`/`config.password`, and in `config.extra`: `token`,
`credsfile` (a `.creds` file), `nkeyseed` (an nkey seed file)); a uri with user info is refused. TLS from
`config.tls` (`ca_file` alone trusted when given, `cert_file`/`key_file`, `verify`), used for `tls://`
uris, whenever `config.tls` is set, and by a server that requires TLS; a refused handshake is a
non-retriable error at once (nats-py alone would hang).
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from gateway.errors import AdapterError
from protocol_adapters.base import EndpointConfig, TlsSettings
from protocol_adapters.option_values import ADDRESS, OptionError, OptionReader, user_info_refusal
from protocol_adapters.tls import client_context

SCHEMES = {"nats": "nats", "tcp": "nats", "tls": "tls", "ws": "ws", "wss": "wss"}
# JetStream names: no whitespace, no subject tokens separators or wildcards, no path separators
_BAD_NAME = re.compile(r"[\s.*>/\\]")
_DURABLE_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True, slots=True)
class NatsOptions:
    endpoint_id: str
    servers: tuple[str, ...]
    subject: str | None
    subject_filter: str | None
    queue_group: str
    stream: str | None
    stream_subjects: tuple[str, ...]
    create_stream: bool
    durable: str
    ack_wait: float
    max_ack_pending: int | None
    ack_sync: bool
    batch: int
    fetch_timeout: float
    pending_limit: int
    publish_timeout: float
    connect_timeout: float
    reconnect_wait_max: float
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    creds_file: str | None = None
    nkey_seed_file: str | None = None
    tls: TlsSettings | None = None
    ephemeral: bool = False  # an observer (xgate capture): an ephemeral consumer, never the gateway's durable

    @property
    def jetstream(self) -> bool:
        return self.stream is not None

    @property
    def listen_subject(self) -> str | None:
        return self.subject_filter or self.subject

    def ssl_context(self) -> ssl.SSLContext | None:
        """Reads certificate files: call it off the event loop (asyncio.to_thread)."""
        if self.tls is None and not any(s.startswith(("tls://", "wss://")) for s in self.servers):
            return None  # a server that requires TLS anyway gets nats-py's default (system CAs)

        def fail(message: str) -> AdapterError:
            return AdapterError(f"NATS endpoint {self.endpoint_id!r}: {message}")
        return client_context(self.tls, fail)


def _invalid(config: EndpointConfig, message: str, option: str = "") -> OptionError:
    return _reader(config).fail(message, option)


def _reader(config: EndpointConfig) -> OptionReader:
    return OptionReader(config, "NATS")


def _text(config: EndpointConfig, name: str) -> str | None:
    value = _reader(config).value(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise _invalid(config, f"option {name!r}: expected text, found {value!r}", name)
    return value


def _subjects(config: EndpointConfig, fallback: str | None) -> tuple[str, ...]:
    value = _reader(config).value("subjects")
    if value is None:
        return (fallback,) if fallback else ()
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(item, str) for item in items):
        raise _invalid(config, f"option 'subjects': expected a list of subjects or a comma-separated string, "
                               f"found {value!r}", "subjects")
    return tuple(item.strip() for item in items if item.strip())


def _servers(config: EndpointConfig) -> tuple[str, ...]:
    if not config.uris:
        raise _invalid(config, "no server uri (protocoloptions.endpoints)", ADDRESS)
    servers = []
    for uri in config.uris:
        if (refusal := user_info_refusal(uri)) is not None:
            raise _invalid(config, refusal, ADDRESS)
        parts = urlsplit(uri if "://" in uri else f"nats://{uri}")
        scheme = SCHEMES.get(parts.scheme.lower())
        if scheme is None or not parts.hostname:
            raise _invalid(config, f"unsupported server uri {uri!r} (nats://HOST:PORT, tls://, ws://, wss://)",
                           ADDRESS)
        servers.append(urlunsplit((scheme, parts.netloc, parts.path, "", "")))
    return tuple(servers)


def _name(config: EndpointConfig, option: str, value: str | None) -> str | None:
    if value is not None and _BAD_NAME.search(value):
        raise _invalid(config, f"option {option!r} {value!r}: JetStream names may not contain "
                               "whitespace, '.', '*', '>', '/' or '\\'", option)
    return value


def build_options(config: EndpointConfig) -> NatsOptions:
    subject = _text(config, "subject")
    subject_filter = _text(config, "subjectfilter")
    stream = _name(config, "stream", _text(config, "stream"))
    durable = _name(config, "durable", _text(config, "durable")) or \
        "xgate-" + _DURABLE_UNSAFE.sub("_", config.endpoint_id)
    read = _reader(config)
    extra: Mapping[str, Any] = config.extra
    return NatsOptions(
        endpoint_id=config.endpoint_id,
        servers=_servers(config),
        subject=subject,
        subject_filter=subject_filter,
        queue_group=_text(config, "queuegroup") or "",
        stream=stream,
        stream_subjects=_subjects(config, subject_filter or subject),
        create_stream=read.flag("createstream", default=True),
        durable=durable,
        ack_wait=read.number("ackwait", default=30.0, above=0),
        max_ack_pending=read.integer("maxackpending", default=None, least=1),
        ack_sync=read.flag("acksync", default=False),
        batch=read.integer("batch", default=256, least=1),
        fetch_timeout=read.number("fetchtimeout", default=1.0, above=0),
        pending_limit=read.integer("pendinglimit", default=65536, least=1),
        publish_timeout=read.number("publishtimeout", default=5.0, above=0),
        connect_timeout=read.number("connecttimeout", default=2.0, above=0),
        reconnect_wait_max=read.number("reconnectwaitmax", default=5.0, above=0),
        username=config.username,
        password=config.password,
        token=extra.get("token"),
        creds_file=extra.get("credsfile"),
        nkey_seed_file=extra.get("nkeyseed"),
        tls=config.tls,
    )


def source_options(config: EndpointConfig) -> NatsOptions:
    options = build_options(config)
    if options.listen_subject is None:
        raise _invalid(config, "a NATS source needs protocoloptions 'subject' or 'subjectfilter'", "subject")
    if options.jetstream and not options.stream_subjects:
        raise _invalid(config, "a JetStream source needs 'subjects', 'subjectfilter' or 'subject'", "subjects")
    return options


def sink_options(config: EndpointConfig) -> NatsOptions:
    options = build_options(config)
    if options.subject is None:
        raise _invalid(config, "a NATS sink needs protocoloptions 'subject' (where it publishes)", "subject")
    if any(token in ("*", ">") for token in options.subject.split(".")) or any(c.isspace() for c in options.subject):
        raise _invalid(config, f"sink subject {options.subject!r} may not contain wildcards or spaces", "subject")
    return options


def share_source(config: EndpointConfig, worker: int) -> EndpointConfig:
    """`xgate run --workers N`: in JetStream mode every worker pulls from the same durable consumer (`durable`),
    which hands each message to one puller; in core mode the workers subscribe in one queue group (the
    endpoint's `queuegroup` or `xgate-<endpoint id>`)."""
    if _reader(config).value("stream") is not None or _text(config, "queuegroup"):
        return config
    return replace(config, options={**config.options, "queuegroup": f"xgate-{config.endpoint_id}"})
