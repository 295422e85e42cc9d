"""Frozen options for the HTTP source (webhook ingress) and sink (webhook delivery), built from an EndpointConfig.

Read from `config.uris[0]`: `http://HOST:PORT/PATH` or `https://...` (user info is refused: credentials come
from the settings, never the uri). The source listens on HOST:PORT (HOST
defaults to 127.0.0.1; it binds 0.0.0.0 only when the uri says so) and accepts requests on PATH and below it;
the sink sends every message to the uri as it stands.

Read from `config.options` (the endpoint's `protocoloptions`, xRegistry 1.0 names):

| name | role | default | meaning |
|---|---|---|---|
| `method` | sink | `POST` | request method of each delivery; on a source, the one method accepted when `methods` is absent |
| `methods` | source | `["POST", "PUT"]` | methods accepted (list or comma-separated string) |
| `headers` | sink | none | `[{"name", "value"}]` added to every request (after the message's own headers) |
| `query` | sink | none | `{name: value}` added to the uri's query |
| `apikeyname` | both | none | name of the header or query parameter carrying the API key (`authorization.type` APIKey) |
| `apikeyin` | both | `header` | `header` or `query` |
| `plainscheme` | sink | `basic` | with `config.username`: `basic` (RFC 7617) or `query` (needs the two fields below) |
| `plainusernamefield`, `plainpasswordfield` | sink | none | query parameter names for `plainscheme: query` |
| `maxbodysize` | source | 1048576 | largest request body in bytes (after decompression); larger -> 413; a request taking more than this + 1 MiB on the wire (head and chunk framing included) -> 413 and the connection closes |
| `maxinflight` | source | 1000 | requests accepted and not yet acknowledged by the runtime; more wait `queuetimeout` |
| `queuetimeout` | source | 10.0 | seconds a request waits for room before it is answered 503 |
| `responsetimeout` | source | 30.0 | seconds a request waits for the runtime's ack before it is answered 503 |
| `respond` | source | `delivery` | `delivery`: answer after the runtime's ack with the verdict (at-least-once, the client retries a 503); `receipt`: answer 202 once queued (at-most-once if the gateway dies) |
| `headertimeout` | source | 10.0 | seconds a connection has to send a complete request head, counted from its opening or from the previous answer; idle keep-alive connections close after it too |
| `bodytimeout` | source | 30.0 | seconds to receive a whole request body once its head arrived; slower -> 408 and the connection closes |
| `maxconnections` | source | 1024 | open client connections at once; one more takes the place of the connection idle longest (between requests, or sending its head), or, with none idle, is answered 503 and closed |
| `maxconnectionsperclient` | source | a quarter of `maxconnections` | open connections from one client address at once; one more is answered 503 and closed (raise it behind a load balancer, whose connections all come from its address) |
| `allowedorigins` | source | any | origins accepted by the CloudEvents webhook validation handshake (OPTIONS) |
| `requesttimeout` | sink | 30.0 | seconds for one delivery, connect included |
| `connections` | sink | 100 | pooled connections to the destination |

Read from `config.extra` (gateway settings or the environment, never documents): `apikey` (the API key value;
required when `apikeyname` is set), `listen` (`HOST:PORT` the source binds instead of the uri's, for a public
uri behind a proxy), `reuseport` (bind with SO_REUSEPORT; `xgate run --workers N` sets it).
TLS from `config.tls`: the source serves https with `cert_file`/`key_file` and requires
client certificates signed by `ca_file` when one is given; the sink verifies the server with `ca_file` (or the
system store) unless `verify` is false, and presents `cert_file`/`key_file` when given.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import unquote, urlsplit

from gateway.config_values import ValueProblem, flag
from protocol_adapters.base import EndpointConfig, TlsSettings
from protocol_adapters.option_values import ADDRESS, OptionError, OptionReader, user_info_refusal
from protocol_adapters.tls import client_context

RESPOND_DELIVERY = "delivery"
RESPOND_RECEIPT = "receipt"


@dataclass(frozen=True, slots=True)
class ApiKey:
    name: str
    where: str  # "header" | "query"
    value: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class HttpSourceOptions:
    endpoint_id: str
    host: str
    port: int
    base_path: str  # decoded, without a trailing slash ("" for the root)
    ssl: ssl.SSLContext | None
    methods: frozenset[str]
    max_body_size: int
    max_in_flight: int
    queue_timeout: float
    response_timeout: float
    respond: str
    api_key: ApiKey | None
    allowed_origins: frozenset[str] | None  # None: any origin
    reuse_port: bool = False  # SO_REUSEPORT: set by `xgate run --workers N` (share_source), never by documents
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections: int = 1024
    max_per_client: int = 256


@dataclass(frozen=True, slots=True)
class HttpSinkOptions:
    endpoint_id: str
    url: str
    method: str
    headers: tuple[tuple[str, str], ...]
    query: tuple[tuple[str, str], ...]
    ssl: ssl.SSLContext | None
    timeout: float
    connections: int
    api_key: ApiKey | None
    basic_auth: tuple[str, str] | None = field(repr=False)


def _reader(config: EndpointConfig) -> OptionReader:
    return OptionReader(config, "HTTP", extra=False)  # `extra` holds settings of its own (apikey, listen)


def _fail(config: EndpointConfig, message: str, option: str = "") -> OptionError:
    return _reader(config).fail(message, option)


def _methods(config: EndpointConfig) -> frozenset[str]:
    value = config.options.get("methods")
    if value is None:
        single = config.options.get("method")
        value = [single] if single else ["POST", "PUT"]
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise _fail(config, f"option 'methods': expected a list of HTTP methods, found {value!r}", "methods")
    return frozenset(v.strip().upper() for v in value)


def _uri(config: EndpointConfig) -> tuple[str, str | None, int | None, str]:
    if not config.uris:
        raise _fail(config, "no uri (protocoloptions.endpoints)", ADDRESS)
    if (refusal := user_info_refusal(config.uris[0])) is not None:
        raise _fail(config, refusal, ADDRESS)  # aiohttp would send them as basic auth
    parts = urlsplit(config.uris[0])
    if parts.scheme not in ("http", "https"):
        raise _fail(config, f"uri {config.uris[0]!r} is not http:// or https://", ADDRESS)
    try:
        port = parts.port
    except ValueError:
        raise _fail(config, f"uri {config.uris[0]!r} has an invalid port", ADDRESS) from None
    return parts.scheme, parts.hostname, port, parts.path


def _api_key(config: EndpointConfig) -> ApiKey | None:
    name = config.options.get("apikeyname")
    if not name:
        return None
    where = config.options.get("apikeyin", "header")
    if where not in ("header", "query"):
        raise _fail(config, f"option 'apikeyin': expected header or query, found {where!r}", "apikeyin")
    value = config.extra.get("apikey")
    if not isinstance(value, str) or not value:
        # fail closed: an endpoint that declares an API key never runs open (nor sends without one)
        raise _fail(config, f"declares apikeyname {name!r} but no API key was supplied (settings: extra.apikey)",
                    "apikey")
    return ApiKey(str(name), where, value)


def _listen(config: EndpointConfig, host: str | None, port: int | None, scheme: str) -> tuple[str, int]:
    listen = config.extra.get("listen")
    if listen:
        text = str(listen)
        bind_host, sep, bind_port = text.rpartition(":")
        if not sep or not bind_port.isdigit():
            raise _fail(config, f"setting 'listen': expected HOST:PORT, found {text!r}", "listen")
        return bind_host.strip("[]") or "127.0.0.1", int(bind_port)
    return host or "127.0.0.1", port if port is not None else (443 if scheme == "https" else 80)


def _origins(config: EndpointConfig) -> frozenset[str] | None:
    value = config.options.get("allowedorigins")
    if value is None or value == "*" or value == ["*"]:
        return None
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise _fail(config, f"option 'allowedorigins': expected a list of origins, found {value!r}", "allowedorigins")
    return frozenset(v.strip().lower() for v in value)


def server_ssl(config: EndpointConfig, tls: TlsSettings | None) -> ssl.SSLContext:
    if tls is None or not tls.cert_file or not tls.key_file:
        raise _fail(config, "an https source needs tls.cert and tls.key (cert_file, key_file) in the settings", "tls")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(tls.cert_file, tls.key_file)
    except (OSError, ssl.SSLError) as exc:
        raise _fail(config, f"tls.cert {tls.cert_file!r} / tls.key {tls.key_file!r} cannot be loaded: {exc}",
                    "tls") from exc
    if tls.ca_file:
        try:
            context.load_verify_locations(tls.ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise _fail(config, f"tls.ca {tls.ca_file!r} cannot be loaded: {exc}", "tls") from exc
        context.verify_mode = ssl.CERT_REQUIRED if tls.verify else ssl.CERT_OPTIONAL
    return context


def client_ssl(config: EndpointConfig, tls: TlsSettings | None) -> ssl.SSLContext | None:
    if tls is None:
        return None  # aiohttp's default verification against the system store
    return client_context(tls, lambda message: _fail(config, message))


def source_options(config: EndpointConfig) -> HttpSourceOptions:
    scheme, host, port, path = _uri(config)
    bind_host, bind_port = _listen(config, host, port, scheme)
    respond = config.options.get("respond", RESPOND_DELIVERY)
    if respond not in (RESPOND_DELIVERY, RESPOND_RECEIPT):
        raise _fail(config, f"option 'respond': expected delivery or receipt, found {respond!r}", "respond")
    context = server_ssl(config, config.tls) if scheme == "https" else None
    read = _reader(config)
    max_connections = read.integer("maxconnections", default=1024, least=1)
    return HttpSourceOptions(
        endpoint_id=config.endpoint_id,
        host=bind_host,
        port=bind_port,
        base_path=unquote(path).rstrip("/"),
        ssl=context,
        methods=_methods(config),
        max_body_size=read.integer("maxbodysize", default=1024 * 1024, least=1),
        max_in_flight=read.integer("maxinflight", default=1000, least=1),
        queue_timeout=read.number("queuetimeout", default=10.0, above=0),
        response_timeout=read.number("responsetimeout", default=30.0, above=0),
        respond=respond,
        api_key=_api_key(config),
        allowed_origins=_origins(config),
        reuse_port=_reuse_port(config),
        header_timeout=read.number("headertimeout", default=10.0, above=0),
        body_timeout=read.number("bodytimeout", default=30.0, above=0),
        max_connections=max_connections,
        max_per_client=read.integer("maxconnectionsperclient", default=max(1, max_connections // 4), least=1),
    )


def _reuse_port(config: EndpointConfig) -> bool:
    """`reuseport` from gateway.yaml or `--workers N` (never a document), by the one flag reader: `"true"`
    from `${VAR}` is true, and a value that is no flag is refused, not taken as false."""
    value = config.extra.get("reuseport")
    if value is None:
        return False
    try:
        return flag(value)
    except ValueProblem as problem:
        raise _reader(config).fail(f"setting 'reuseport': {problem}", "reuseport") from None


def _static_headers(config: EndpointConfig) -> tuple[tuple[str, str], ...]:
    value = config.options.get("headers") or []
    if not isinstance(value, list) or not all(isinstance(v, dict) and "name" in v for v in value):
        raise _fail(config, f"option 'headers': expected a list of {{\"name\", \"value\"}} objects, found {value!r}",
                    "headers")
    return tuple((str(v["name"]), str(v.get("value", ""))) for v in value)


def _static_query(config: EndpointConfig) -> tuple[tuple[str, str], ...]:
    value: Mapping[str, Any] = config.options.get("query") or {}
    if not isinstance(value, Mapping):
        raise _fail(config, f"option 'query': expected an object of name -> value, found {value!r}", "query")
    return tuple((str(k), str(v)) for k, v in value.items())


def _plain(config: EndpointConfig, query: list[tuple[str, str]]) -> tuple[str, str] | None:
    if config.username is None:
        return None
    scheme = config.options.get("plainscheme", "basic")
    password = config.password or ""
    if scheme == "basic":
        return config.username, password
    if scheme == "query":
        user_field = config.options.get("plainusernamefield")
        password_field = config.options.get("plainpasswordfield")
        if not user_field or not password_field:
            raise _fail(config, "plainscheme 'query' needs plainusernamefield and plainpasswordfield", "plainscheme")
        query += [(str(user_field), config.username), (str(password_field), password)]
        return None
    raise _fail(config, f"option 'plainscheme': expected basic or query, found {scheme!r}", "plainscheme")


def sink_options(config: EndpointConfig) -> HttpSinkOptions:
    scheme, _host, _port, _path = _uri(config)
    method = config.options.get("method", "POST")
    if not isinstance(method, str) or not method.strip():
        raise _fail(config, f"option 'method': expected an HTTP method, found {method!r}", "method")
    query = list(_static_query(config))
    basic = _plain(config, query)
    context = client_ssl(config, config.tls) if scheme == "https" else None
    return HttpSinkOptions(
        endpoint_id=config.endpoint_id,
        url=config.uris[0],
        method=method.strip().upper(),
        headers=_static_headers(config),
        query=tuple(query),
        ssl=context,
        timeout=_reader(config).number("requesttimeout", default=30.0, above=0),
        connections=_reader(config).integer("connections", default=100, least=1),
        api_key=_api_key(config),
        basic_auth=basic,
    )


def share_source(config: EndpointConfig, worker: int) -> EndpointConfig:
    """`xgate run --workers N`: every worker listens on the same address with SO_REUSEPORT, and the kernel
    spreads incoming connections over them."""
    return replace(config, extra={**config.extra, "reuseport": True})
