"""Frozen options for the MQTT 3.1.1 / 5.0 source and sink, built from an EndpointConfig.

`config.protocol` picks the protocol version (`MQTT/3.1.1`, or `MQTT/5.0`; the bare `MQTT` is 5.0).
Brokers come from `config.uris` (`mqtt://HOST:PORT`, `tcp://`, `mqtts://` / `ssl://` / `tls://` for TLS,
`ws://` / `wss://` for WebSockets with the uri's path, default `/mqtt`); several uris are tried in turn.

Read from `config.options` (the endpoint's `protocoloptions`, xRegistry 1.0 names), falling back to
`config.extra` for the xgate extensions:

| name | role | default | meaning |
|---|---|---|---|
| `topicfilter` | source | `topic_name` / `topic` | topic filter(s) to subscribe to (wildcards allowed; a list or a comma-separated string) |
| `topic_name`, `topic` | both | none | sink: the topic every message is published to (required, no wildcards); source: subscribed when `topicfilter` is absent |
| `sharedsubscriptiongroup` | source | none | subscribe as `$share/<group>/<filter>` (load sharing between gateway replicas; each replica needs its own `clientid`) |
| `qos` | both | `1` | source: the subscription's maximum QoS (1 or 2 for at-least-once; 0 is at-most-once); sink: QoS of every publish |
| `retain` | sink | `false` | publish with the retain flag |
| `clientid` | both | `xgate-<endpoint id>` | source: the client id of the persistent session; sink: prefix of its client id (`<clientid>-pub-<random>`) |
| `cleansession` (3.1.1), `cleanstart` (5.0) | source | `false` | `true` discards the broker session at connect: messages queued while the gateway was away are lost |
| `sessionexpiryinterval` | source | `4294967295` (never) | 5.0: seconds the broker keeps the session (and queues messages) after the source disconnects |
| `nolocal`, `retainaspublished`, `retainhandling` | source | `false`, `false`, `0` | 5.0 subscription options |
| `receivemaximum` | source | `1000` | 5.0: Receive Maximum sent in CONNECT (unacknowledged messages the broker may send); both versions: the source stops reading the socket while this many messages wait in its buffer |
| `maxinflight` | sink | `1000` | publishes awaiting their PUBACK/PUBCOMP at once (5.0: capped by the broker's Receive Maximum) |
| `rejectreasoncode` | source | `0x83` | 5.0: PUBACK reason code sent when the runtime acknowledges a message it rejected (`Delivery.rejected`) |
| `keepalive` | both | `30` | seconds between keepalive pings; a dead connection is noticed within about 1.5x this |
| `connecttimeout` | both | `5.0` | seconds for one connection attempt (TCP connect plus CONNACK) |
| `publishtimeout` | sink | `30.0` | seconds `send` waits for the broker's confirmation before raising a retriable error |
| `reconnectwaitmax` | source | `10.0` | ceiling of the exponential reconnect backoff (with jitter) after the connection was lost |

Credentials only from settings (`config.username` / `config.password`; a uri with user info is refused);
TLS from `config.tls`: `ca_file` (the only CA trusted; the system CAs without it), `cert_file` /
`key_file` (client certificate), `verify` (false: no verification at all). Any `config.tls` switches TLS
on for every broker, and so does a TLS uri scheme. An untrusted broker certificate, or a broker that
refuses the client certificate (a TLS alert), is a non-retriable error.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

import aiomqtt
import paho.mqtt.client as mqtt
from paho.mqtt.client import MQTT_CLEAN_START_FIRST_ONLY
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from gateway.errors import AdapterError
from protocol_adapters.base import EndpointConfig, TlsSettings
from protocol_adapters.option_values import ADDRESS, OptionError, OptionReader, user_info_refusal
from protocol_adapters.tls import client_context

V5 = "MQTT/5.0"
V311 = "MQTT/3.1.1"
# scheme -> (transport, tls, default port)
SCHEMES: dict[str, tuple[str, bool, int]] = {
    "mqtt": ("tcp", False, 1883), "tcp": ("tcp", False, 1883),
    "mqtts": ("tcp", True, 8883), "ssl": ("tcp", True, 8883), "tls": ("tcp", True, 8883),
    "ws": ("websockets", False, 80), "wss": ("websockets", True, 443),
}
SESSION_NEVER_EXPIRES = 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class Broker:
    host: str
    port: int
    transport: str
    tls: bool
    path: str

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class MqttOptions:
    endpoint_id: str
    protocol: str
    v5: bool
    brokers: tuple[Broker, ...]
    topic_filters: tuple[str, ...]
    topic: str | None
    qos: int
    retain: bool
    client_id: str
    clean: bool
    session_expiry: int
    no_local: bool
    retain_as_published: bool
    retain_handling: int
    receive_maximum: int
    max_inflight: int
    reject_reason_code: int
    keepalive: int
    connect_timeout: float
    publish_timeout: float
    reconnect_wait_max: float
    username: str | None
    password: str | None = field(default=None, repr=False)
    tls: TlsSettings | None = None


def _invalid(config: EndpointConfig, message: str, option: str = "") -> OptionError:
    return OptionReader(config, "MQTT").fail(message, option)


def _lookup(config: EndpointConfig, *names: str) -> Any:
    return OptionReader(config, "MQTT").value(*names)


def _topics(config: EndpointConfig, *names: str) -> list[str]:
    value = _lookup(config, *names)
    if value is None:
        return []
    if not isinstance(value, (str, list, tuple)) or not all(isinstance(item, str) for item in value):
        name = next(n for n in names if _lookup(config, n) is not None)
        raise _invalid(config, f"option {name!r}: expected a topic or a list of topics, found {value!r}", name)
    items = value.split(",") if isinstance(value, str) else list(value)
    return [item.strip() for item in items if item.strip()]


def _brokers(config: EndpointConfig) -> tuple[Broker, ...]:
    brokers = []
    for uri in config.uris:
        if (refusal := user_info_refusal(uri)) is not None:
            raise _invalid(config, refusal, ADDRESS)
        parts = urlsplit(uri if "://" in uri else f"mqtt://{uri}")
        scheme = parts.scheme.lower()
        if scheme not in SCHEMES or not parts.hostname:
            raise _invalid(config, f"unsupported broker uri {uri!r} (use mqtt://HOST:PORT, mqtts://, ws://, wss://)",
                           ADDRESS)
        transport, tls, default_port = SCHEMES[scheme]
        try:
            port = parts.port or default_port
        except ValueError:
            raise _invalid(config, f"bad port in broker uri {uri!r}", ADDRESS) from None
        path = parts.path or "/mqtt"
        brokers.append(Broker(parts.hostname, port, transport, tls or config.tls is not None, path))
    if not brokers:
        raise _invalid(config, "no broker uri (protocoloptions.endpoints)", ADDRESS)
    return tuple(brokers)


def build_options(config: EndpointConfig) -> MqttOptions:
    """Validate everything up front: a bad option is a non-retriable AdapterError naming it."""
    protocol = V311 if config.protocol.upper().startswith("MQTT/3") else V5
    v5 = protocol == V5
    read = OptionReader(config, "MQTT")
    topic_value = _lookup(config, "topic_name", "topic")
    topic = str(topic_value).strip() if topic_value is not None and not isinstance(topic_value, list) else None
    filters = _topics(config, "topicfilter", "topic_name", "topic")
    group = _lookup(config, "sharedsubscriptiongroup")
    if group is not None:
        if not str(group) or any(c in str(group) for c in "/+#"):
            raise _invalid(config, f"sharedsubscriptiongroup {group!r} must not be empty or contain / + #",
                           "sharedsubscriptiongroup")
        filters = [f if f.startswith("$share/") else f"$share/{group}/{f}" for f in filters]
    clean_name = "cleanstart" if v5 else "cleansession"
    return MqttOptions(
        endpoint_id=config.endpoint_id,
        protocol=protocol,
        v5=v5,
        brokers=_brokers(config),
        topic_filters=tuple(filters),
        topic=topic or None,
        qos=read.integer("qos", default=1, least=0, most=2),
        retain=read.flag("retain", default=False),
        client_id=str(_lookup(config, "clientid") or f"xgate-{config.endpoint_id}"),
        clean=read.flag(clean_name, default=False),
        session_expiry=read.integer("sessionexpiryinterval", default=SESSION_NEVER_EXPIRES, least=0,
                                    most=SESSION_NEVER_EXPIRES),
        no_local=read.flag("nolocal", default=False),
        retain_as_published=read.flag("retainaspublished", default=False),
        retain_handling=read.integer("retainhandling", default=0, least=0, most=2),
        receive_maximum=read.integer("receivemaximum", default=1000, least=1, most=65535),
        max_inflight=read.integer("maxinflight", default=1000, least=1, most=65535),
        reject_reason_code=read.integer("rejectreasoncode", default=0x83, least=0x80, most=0xFF),
        keepalive=read.integer("keepalive", default=30, least=5, most=65535),
        connect_timeout=read.number("connecttimeout", default=5.0, above=0),
        publish_timeout=read.number("publishtimeout", default=30.0, above=0),
        reconnect_wait_max=read.number("reconnectwaitmax", default=10.0, above=0),
        username=config.username,
        password=config.password,
        tls=config.tls,
    )


def require_subscription(options: MqttOptions) -> None:
    if not options.topic_filters:
        raise OptionError(f"MQTT endpoint {options.endpoint_id!r}: a source needs `topicfilter` "
                          f"(or `topic_name` / `topic`)", "topicfilter")


def require_topic(options: MqttOptions) -> None:
    if not options.topic:
        raise OptionError(f"MQTT endpoint {options.endpoint_id!r}: a sink needs `topic_name` or `topic` "
                          f"(the topic every message is published to)", "topic_name")
    if any(c in options.topic for c in "+#"):
        raise OptionError(f"MQTT endpoint {options.endpoint_id!r}: the sink topic {options.topic!r} "
                          f"must not contain wildcards", "topic_name")


def source_options(config: EndpointConfig) -> MqttOptions:
    """A source's options, checked as the source checks them (without connecting)."""
    options = build_options(config)
    require_subscription(options)
    return options


def sink_options(config: EndpointConfig) -> MqttOptions:
    options = build_options(config)
    require_topic(options)
    return options


def ssl_context(options: MqttOptions) -> ssl.SSLContext | None:
    """Reads certificate files: call it off the event loop (asyncio.to_thread)."""
    if not any(broker.tls for broker in options.brokers):
        return None

    def fail(message: str) -> AdapterError:
        return AdapterError(f"MQTT endpoint {options.endpoint_id!r}: {message}")
    return client_context(options.tls, fail)


def client_for(options: MqttOptions, broker: Broker, client_id: str, *, persistent: bool,
               tls_context: ssl.SSLContext | None) -> aiomqtt.Client:
    """An unconnected aiomqtt client; `persistent` keeps the broker session (and its queue) across connections."""
    properties = None
    if options.v5:
        properties = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]  # paho is unannotated here
        properties.SessionExpiryInterval = options.session_expiry if persistent else 0
        properties.ReceiveMaximum = options.receive_maximum
    client = aiomqtt.Client(
        broker.host, broker.port,
        username=options.username, password=options.password,
        identifier=client_id,
        protocol=aiomqtt.ProtocolVersion.V5 if options.v5 else aiomqtt.ProtocolVersion.V311,
        clean_session=None if options.v5 else not persistent,
        clean_start=(not persistent) if options.v5 else MQTT_CLEAN_START_FIRST_ONLY,
        transport="websockets" if broker.transport == "websockets" else "tcp",
        timeout=options.connect_timeout,
        keepalive=options.keepalive,
        properties=properties,
        # 0: no limit inside paho, whose limit costs a scan of every unconfirmed message per PUBACK; the
        # sink keeps its own window (`maxinflight`, capped by the broker's Receive Maximum)
        max_inflight_messages=0,
        tls_context=tls_context if broker.tls else None,
        websocket_path=broker.path if broker.transport == "websockets" else None,
    )
    paho = paho_of(client)
    paho.connect_timeout = options.connect_timeout
    return client


# aiomqtt keeps the paho client and the "connection ended" future private; the adapter needs both
# (manual acknowledgement, PUBACK reason codes, its own message and publish callbacks, pausing reads).
def paho_of(client: aiomqtt.Client) -> mqtt.Client:
    return client._client


def disconnected_of(client: aiomqtt.Client) -> asyncio.Future[None]:
    return client._disconnected


class TlsAlerts:
    """The last TLS alert a client's broker sent. paho logs a failed socket read and swallows the error, and
    a TLS 1.3 broker refuses a client certificate only after the handshake, with an alert: without this,
    that refusal would look like a CONNACK that never came (a timeout, retried forever)."""

    def __init__(self, client: aiomqtt.Client) -> None:
        self.alert: str | None = None
        paho_of(client).on_log = self._on_log

    def _on_log(self, client: mqtt.Client, userdata: Any, level: int, text: str) -> None:
        if level == mqtt.MQTT_LOG_ERR and "[SSL: " in text and "ALERT" in text:
            self.alert = text.split("[SSL: ", 1)[1].split("]", 1)[0]


def share_source(config: EndpointConfig, worker: int) -> EndpointConfig:
    """`xgate run --workers N`: the workers subscribe as one shared subscription (`$share/<group>/<filter>`, the
    endpoint's `sharedsubscriptiongroup` or `xgate-<endpoint id>`), each with a session of its own (`clientid`
    suffixed `-w<worker>`), so the broker hands each message to one worker."""
    group = _lookup(config, "sharedsubscriptiongroup") or f"xgate-{config.endpoint_id}"
    client_id = str(_lookup(config, "clientid") or f"xgate-{config.endpoint_id}")
    options = {**config.options, "sharedsubscriptiongroup": group, "clientid": f"{client_id}-w{worker}"}
    return replace(config, options=options)
