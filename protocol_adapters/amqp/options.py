"""Frozen options for the AMQP 1.0 source (a receiver link) and sink (a sender link), built from an EndpointConfig.

Read from `config.uris`: `amqp://HOST[:PORT][/NODE]` or `amqps://...` (port 5672 / 5671). Several uris are
tried in turn on each reconnect. A uri with user info is refused: credentials come only from the settings.

Read from `config.options` (the endpoint's `protocoloptions`, xRegistry 1.0 names, plus gateway.yaml overrides):

| name | role | default | meaning |
|---|---|---|---|
| `node` (alias `address`) | both | the uri path | the AMQP address, e.g. `/queue/orders` on RabbitMQ |
| `durable` | sink | `true` | header `durable` of each message unless the envelope carries one (the spec's default is `false`; xgate defaults to `true` so a broker restart loses nothing) |
| `linkproperties` | both | none | `{name: value}` link properties (names sent as symbols) |
| `connectionproperties` (or `connection-properties`) | both | none | `{name: value}` connection properties |
| `distributionmode` | source | broker's (move) | `move` or `copy` on the source terminus |
| `prefetch` | source | 256 | link credit: messages delivered and not yet acked/released; credit is replenished only by ack/nack |
| `terminusdurable` | both | `true` | ask for a durable terminus; RabbitMQ 3.10 then declares a missing `/queue/NAME` as a durable queue (with `false` it declares a transient one, lost on restart) |
| `connecttimeout` | both | 10.0 | seconds for connect + open + attach before the attempt counts as failed |
| `sendtimeout` | sink | 30.0 | seconds `send` waits for the broker's disposition (then a retriable error; the message may still arrive: at-least-once) |
| `heartbeat` | both | 30.0 | AMQP idle timeout in seconds (0 disables) so a dead peer is noticed |
| `reconnectdelay` | both | 0.2 | first reconnect delay in seconds; doubles per failed attempt, with jitter |
| `reconnectmaxdelay` | both | 10.0 | ceiling of the reconnect delay |

Read from `config.extra` (gateway settings or the environment, never documents): `virtual_host` (the open
frame's hostname; RabbitMQ reads `vhost:NAME`), `sasl_mechanisms` (space-separated, e.g. `PLAIN`),
`container_id`. Credentials: `config.username` / `config.password` (SASL PLAIN only, unless `sasl_mechanisms`
says otherwise: a refused password never falls back to ANONYMOUS); without a username the
client offers SASL ANONYMOUS, which RabbitMQ's AMQP 1.0 plugin maps to its `default_user` (guest). TLS:
`config.tls` (or an `amqps` uri) uses `ca_file`, `cert_file`/`key_file`, and `verify` (peer name check).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from protocol_adapters.base import EndpointConfig, TlsSettings
from protocol_adapters.option_values import ADDRESS, OptionError, OptionReader, user_info_refusal
from protocol_adapters.tls import unreadable_file

DEFAULT_PORTS = {"amqp": 5672, "amqps": 5671}


@dataclass(frozen=True, slots=True)
class AmqpOptions:
    endpoint_id: str
    urls: tuple[str, ...]  # scheme://host:port, no user info, no path
    node: str
    prefetch: int = 256
    durable: bool = True
    terminus_durable: bool = True
    distribution_mode: str | None = None  # "move" | "copy" | None (broker default)
    link_properties: tuple[tuple[str, str], ...] = ()
    connection_properties: tuple[tuple[str, str], ...] = ()
    connect_timeout: float = 10.0
    send_timeout: float = 30.0
    heartbeat: float = 30.0
    reconnect_delay: float = 0.2
    reconnect_max_delay: float = 10.0
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    tls: TlsSettings | None = None
    virtual_host: str | None = None
    sasl_mechanisms: str | None = None
    container_id: str | None = None


def _reader(config: EndpointConfig) -> OptionReader:
    return OptionReader(config, "AMQP", extra=False)  # `extra` holds settings of its own (virtual_host, ...)


def _fail(config: EndpointConfig, message: str, option: str = "") -> OptionError:
    return _reader(config).fail(message, option)


def _string_map(config: EndpointConfig, *names: str) -> tuple[tuple[str, str], ...]:
    for name in names:
        value = config.options.get(name)
        if value is None:
            continue
        if not isinstance(value, Mapping) or not all(isinstance(k, str) and k and isinstance(v, str)
                                                      for k, v in value.items()):
            raise _fail(config, f"option {name!r}: expected a map of non-empty names to strings, found {value!r}",
                        name)
        return tuple((str(k), str(v)) for k, v in value.items())
    return ()


def _urls(config: EndpointConfig) -> tuple[tuple[str, ...], str | None]:
    """Connection urls without user info or path, and the first uri's path (a node name) if any."""
    if not config.uris:
        raise _fail(config, "no uri (protocoloptions.endpoints)", ADDRESS)
    urls: list[str] = []
    path: str | None = None
    for uri in config.uris:
        if (refusal := user_info_refusal(uri)) is not None:
            raise _fail(config, refusal, ADDRESS)
        parts = urlsplit(uri)
        scheme = parts.scheme.lower()
        if scheme not in DEFAULT_PORTS:
            raise _fail(config, f"uri {uri!r} is not amqp:// or amqps://", ADDRESS)
        try:
            port = parts.port or DEFAULT_PORTS[scheme]
        except ValueError:
            raise _fail(config, f"uri {uri!r} has an invalid port", ADDRESS) from None
        if not parts.hostname:
            raise _fail(config, f"uri {uri!r} has no host", ADDRESS)
        if config.tls is not None:
            scheme = "amqps"
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        urls.append(f"{scheme}://{host}:{port}")
        if path is None and parts.path not in ("", "/"):
            path = unquote(parts.path)
    return tuple(urls), path


def _node(config: EndpointConfig, uri_path: str | None) -> str:
    node = config.options.get("node", config.options.get("address"))
    if node is None:
        node = uri_path
    if not isinstance(node, str) or not node:
        raise _fail(config, "no AMQP node: set protocoloptions.node (e.g. '/queue/orders') or a path in the uri",
                    "node")
    return node


def _distribution_mode(config: EndpointConfig) -> str | None:
    value = config.options.get("distributionmode")
    if value is None:
        return None
    if not isinstance(value, str) or value.lower() not in ("move", "copy"):
        raise _fail(config, f"option 'distributionmode': expected move or copy, found {value!r}", "distributionmode")
    return value.lower()


def _extra_text(config: EndpointConfig, name: str) -> str | None:
    value = config.extra.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise _fail(config, f"setting {name!r}: expected non-empty text, found {value!r}", name)
    return value


def build_options(config: EndpointConfig) -> AmqpOptions:
    urls, uri_path = _urls(config)
    if (problem := unreadable_file(config.tls)) is not None:
        raise _fail(config, problem, "tls")
    read = _reader(config)
    delay = read.number("reconnectdelay", default=0.2, above=0)
    max_delay = read.number("reconnectmaxdelay", default=10.0, above=0)
    return AmqpOptions(
        endpoint_id=config.endpoint_id,
        urls=urls,
        node=_node(config, uri_path),
        prefetch=read.integer("prefetch", default=256, least=1),
        durable=read.flag("durable", default=True),
        terminus_durable=read.flag("terminusdurable", default=True),
        distribution_mode=_distribution_mode(config),
        link_properties=_string_map(config, "linkproperties"),
        connection_properties=_string_map(config, "connectionproperties", "connection-properties"),
        connect_timeout=read.number("connecttimeout", default=10.0, above=0),
        send_timeout=read.number("sendtimeout", default=30.0, above=0),
        heartbeat=read.number("heartbeat", default=30.0, least=0),
        reconnect_delay=float(delay),
        reconnect_max_delay=float(max(delay, max_delay)),
        username=config.username,
        password=config.password,
        tls=config.tls,
        virtual_host=_extra_text(config, "virtual_host"),
        sasl_mechanisms=_extra_text(config, "sasl_mechanisms"),
        container_id=_extra_text(config, "container_id"),
    )


# the same options serve both link roles
source_options = sink_options = build_options


def share_source(config: EndpointConfig, worker: int) -> EndpointConfig:
    """`xgate run --workers N`: receivers attached to one queue compete for its messages (each message goes to
    one of them), so every worker attaches as it is."""
    return config
