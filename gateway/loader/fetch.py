"""Fetch http(s) documents named by references, only as far as the operator's `remote` settings allow.

Off by default (validation rule 2): with an empty allow-list nothing
is fetched. When on, a URL is fetched only when its host is on the
allow-list, and only from public addresses: a name that resolves to a
loopback, private, link-local (cloud metadata), shared or reserved address
is refused unless that address, or a network holding it, is itself on the
list. This keeps a document from steering the gateway at internal services
(SSRF). The connection goes to the address that was checked (no second DNS
lookup to rebind), redirects are checked like the first URL, no proxy is
used, and the whole fetch, connect to last byte, has one deadline and one
size cap. Fetched documents are cached for `cache_ttl` seconds; when a
refetch fails, the cached copy is used and the failure reported. A failure
is remembered for FAILURE_TTL seconds, so that a dead host costs one
timeout per reload, not one per reference.
"""

from __future__ import annotations

import hashlib
import http.client
import ipaddress
import re
import socket
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

from gateway import __version__
from gateway.errors import GatewayError

MAX_REDIRECTS = 5
CACHE_ENTRIES = 256
# a failed URL is not tried again for this long (at most cache_ttl): a reload's passes and the documents
# naming the same URL must not each wait out the timeout
FAILURE_TTL = 30.0
_DEFAULT_PORTS = {"http": 80, "https": 443}
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_HOST_NAME = re.compile(r"^[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?$")
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True, slots=True)
class RemotePolicy:
    """The `remote` section of gateway.yaml."""

    allow: tuple[str, ...] = ()          # host names, `*.example.com`, `host:port`, IP addresses, CIDR networks
    timeout: float = 5.0                 # seconds for one fetch, connect to last byte
    max_bytes: int = 4 * 1024 * 1024     # a larger response is refused
    cache_ttl: float = 300.0             # seconds a fetched document is reused

    @property
    def enabled(self) -> bool:
        return bool(self.allow)


class FetchError(GatewayError):
    """A URL that was not fetched. `refused` means policy (not on the allow-list), not a failure."""

    def __init__(self, message: str, *, refused: bool = False) -> None:
        self.refused = refused
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class Fetched:
    url: str
    data: bytes
    content_type: str
    # set when this is a cached copy served because refetching failed
    stale: str | None = None
    etag: str | None = None              # the answer's ETag (`poll` only)
    not_modified: bool = False           # 304 to `poll`'s If-None-Match: `data` is empty


@dataclass
class _Cache:
    """Shared by the fetchers of successive policies (a reload that changes `remote` keeps what was fetched)."""

    fetched: dict[str, tuple[float, Fetched]] = field(default_factory=dict)
    failed: dict[str, tuple[float, str]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Entry:
    host: str | None = None              # exact name, or a suffix when `wildcard`
    wildcard: bool = False
    network: IPNetwork | None = None
    port: int | None = None


def _parse_entry(text: str) -> _Entry | None:
    """`name`, `*.domain`, `name:port`, an IP address (`[v6]:port` with a port) or a CIDR network; None if not."""
    text = text.strip().lower()
    port: int | None = None
    if text.startswith("["):
        text, _, rest = text[1:].partition("]")
        if rest:
            if not (rest.startswith(":") and rest[1:].isdigit()):
                return None
            port = int(rest[1:])
    else:
        head, colon, tail = text.rpartition(":")
        if colon and tail.isdigit() and ":" not in head:
            text, port = head, int(tail)
    try:
        return _Entry(network=ipaddress.ip_network(text, strict=False), port=port)
    except ValueError:
        pass
    wildcard = text.startswith("*.")
    host = (text[1:] if wildcard else text).rstrip(".")  # `example.com.` is `example.com`
    return _Entry(host=host, wildcard=wildcard, port=port) if _HOST_NAME.match(host.lstrip(".")) else None


def parse_allow(entries: tuple[str, ...]) -> tuple[list[_Entry], list[str]]:
    """Allow-list entries, and a problem for each one that cannot be an entry."""
    parsed: list[_Entry] = []
    problems: list[str] = []
    for text in entries:
        entry = _parse_entry(text)
        if entry is None:
            problems.append(f"{text!r} is not a host name, `*.domain`, IP address or network")
        else:
            parsed.append(entry)
    return parsed, problems


def _address(host: str) -> IPAddress | None:
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


class RemoteFetcher:
    """Fetches under one RemotePolicy; `with_policy` keeps the cache across reloads."""

    def __init__(self, policy: RemotePolicy, *, resolve: Callable[[str, int], list[str]] | None = None,
                 cache: _Cache | None = None) -> None:
        self.policy = policy
        self.entries, _ = parse_allow(policy.allow)
        self._resolve = resolve or _resolve
        self._cache = cache if cache is not None else _Cache()

    def with_policy(self, policy: RemotePolicy) -> RemoteFetcher:
        return self if policy == self.policy else RemoteFetcher(policy, resolve=self._resolve, cache=self._cache)

    # -- policy ------------------------------------------------------------------------------------
    def refusal(self, url: str) -> str | None:
        """Why policy alone forbids fetching `url` (no network involved), or None."""
        if not self.policy.enabled:
            return "remote fetching is off (gateway.yaml `remote.allow` lists no host)"
        parts = urlsplit(url)
        if parts.scheme.lower() not in _DEFAULT_PORTS:
            return f"only http and https URLs are fetched, not {parts.scheme or 'a relative URL'}"
        host = (parts.hostname or "").lower().rstrip(".")
        if not host:
            return "the URL names no host"
        if parts.username or parts.password:
            return "URLs with credentials are not fetched"
        try:
            port = parts.port or _DEFAULT_PORTS[parts.scheme.lower()]
        except ValueError:
            return "the URL's port is not a number"
        if not any(self._matches(entry, host, port) for entry in self.entries):
            return f"host {host}:{port} is not on gateway.yaml `remote.allow`"
        return None

    def _matches(self, entry: _Entry, host: str, port: int) -> bool:
        if entry.port is not None and entry.port != port:
            return False
        address = _address(host)
        if address is not None:
            return entry.network is not None and address in entry.network
        if entry.host is None:
            return False
        return host.endswith(entry.host) if entry.wildcard else host == entry.host

    def _checked_address(self, host: str, port: int) -> str:
        """An address of `host` to connect to: public, or inside a network the allow-list names."""
        literal = _address(host)
        # the name lookup is the system resolver's, outside `timeout` (getaddrinfo cannot be interrupted)
        candidates = [str(literal)] if literal is not None else self._resolve(host, port)
        if not candidates:
            raise FetchError(f"{host} does not resolve to an address")
        for text in candidates:
            address = _address(text)
            if address is None:
                raise FetchError(f"{host} resolves to {text!r}, which is not an IP address")
            listed = any(e.network is not None and address in e.network for e in self.entries)
            if not (address.is_global and not address.is_multicast) and not listed:
                raise FetchError(f"{host} resolves to {address}, a {_kind(address)} address; list it (or a network "
                                 "holding it) in gateway.yaml `remote.allow` to fetch from it")
        return candidates[0]

    # -- fetching ----------------------------------------------------------------------------------
    def fetch(self, url: str, *, headers: Mapping[str, str] | None = None,
              max_age: float | None = None) -> Fetched:
        """The document at `url` (from the cache while fresh); FetchError says why not.

        `headers` are added to the request (a schema registry's Authorization; never sent on to a redirect
        that leaves the URL's origin); `max_age` (seconds) is how old a cached copy may be instead of
        `cache_ttl` (0: ask again, the cached copy only stands in when asking fails)."""
        refusal = self.refusal(url)
        if refusal is not None:
            raise FetchError(refusal, refused=True)
        cache = self._cache
        # a response fetched with credentials is not served to a request without them
        key = url if not headers else f"{url}\0{hashlib.sha256(repr(sorted(headers.items())).encode()).hexdigest()}"
        cached = cache.fetched.get(key)
        now = time.monotonic()
        if cached is not None and now - cached[0] < (self.policy.cache_ttl if max_age is None else max_age):
            return cached[1]
        failed = cache.failed.get(key)
        if failed is not None and now - failed[0] < min(FAILURE_TTL, self.policy.cache_ttl):
            error = failed[1]
        else:
            try:
                fetched = self._get(url, now + self.policy.timeout, headers or {})
            except FetchError as exc:
                error = str(exc)
                _remember(cache.failed, key, (now, error))
            else:
                cache.failed.pop(key, None)
                _remember(cache.fetched, key, (now, fetched))
                return fetched
        if cached is not None:
            return Fetched(cached[1].url, cached[1].data, cached[1].content_type, stale=error)
        raise FetchError(error)

    def poll(self, url: str, *, headers: Mapping[str, str] | None = None, etag: str | None = None) -> Fetched:
        """`url` asked now, past the cache and remembered failures (a registry followed on an interval keeps
        its own last good copy); with `etag`, a 304 answer comes back as `not_modified`. FetchError says why not."""
        refusal = self.refusal(url)
        if refusal is not None:
            raise FetchError(refusal, refused=True)
        sent = {**(headers or {}), **({"If-None-Match": etag} if etag else {})}
        return self._get(url, time.monotonic() + self.policy.timeout, sent, meta={})

    def _get(self, url: str, deadline: float, headers: Mapping[str, str],
             meta: dict[str, str] | None = None) -> Fetched:
        """`url` after redirects; `meta` (given by `poll`) collects the final answer's ETag."""
        meta = {} if meta is None else meta
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            meta.clear()  # a redirect's ETag is not the document's
            status, location, content_type, data = self._request(current, deadline, headers, meta)
            if status in _REDIRECTS and location:
                target = urljoin(current, location)
                refusal = self.refusal(target)
                if refusal is not None:
                    raise FetchError(f"redirected to {target}, which is not fetched: {refusal}")
                if _origin(target) != _origin(current):
                    headers = {}  # credentials stay with the origin they were given for
                current = target
                continue
            if status == 304 and "If-None-Match" in headers:
                return Fetched(url, b"", content_type, etag=meta.get("etag"), not_modified=True)
            if status != 200:
                raise FetchError(f"HTTP status {status}")
            return Fetched(url, data, content_type, etag=meta.get("etag"))
        raise FetchError(f"more than {MAX_REDIRECTS} redirects")

    def _request(self, url: str, deadline: float, headers: Mapping[str, str] | None = None,
                 meta: dict[str, str] | None = None) -> tuple[int, str | None, str, bytes]:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        host = parts.hostname or ""
        port = parts.port or _DEFAULT_PORTS[scheme]
        address = self._checked_address(host, port)
        connection: _PinnedHTTPConnection | _PinnedHTTPSConnection | None = None
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            if scheme == "https":
                connection = _PinnedHTTPSConnection(host, port, address=address, timeout=_left(deadline),
                                                    context=ssl.create_default_context())
            else:
                connection = _PinnedHTTPConnection(host, port, address=address, timeout=_left(deadline))
            connection.request("GET", target, headers={
                "User-Agent": f"xgate/{__version__}", "Accept-Encoding": "identity",
                "Accept": "application/json, application/yaml, text/plain;q=0.9, */*;q=0.5", **(headers or {})})
            sock = connection.pinned
            assert sock is not None  # request() connected
            sock.settimeout(_left(deadline))
            response = connection.getresponse()
            if meta is not None and response.getheader("ETag"):
                meta["etag"] = str(response.getheader("ETag"))
            if response.status != 200:
                return response.status, response.getheader("Location"), "", b""
            return 200, None, response.getheader("Content-Type", ""), self._body(response, sock, deadline)
        except TimeoutError as exc:
            raise FetchError(f"timed out after {self.policy.timeout:g} s (gateway.yaml `remote.timeout`)") from exc
        except (OSError, ValueError, http.client.HTTPException) as exc:  # ValueError: a URL http.client refuses
            raise FetchError(f"cannot fetch: {exc}") from exc
        finally:
            if connection is not None:
                connection.close()

    def _body(self, response: http.client.HTTPResponse, sock: socket.socket, deadline: float) -> bytes:
        limit = self.policy.max_bytes
        declared = response.getheader("Content-Length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise FetchError(f"response of {int(declared):,} bytes is over the {limit:,}-byte limit "
                             "(gateway.yaml `remote.max_bytes`)")
        chunks: list[bytes] = []
        size = 0
        while True:
            # one deadline for the whole body: a server dripping a byte at a time cannot hold the load
            sock.settimeout(_left(deadline))
            chunk = response.read1(65536)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > limit:
                raise FetchError(f"response is over the {limit:,}-byte limit (gateway.yaml `remote.max_bytes`)")
            chunks.append(chunk)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port


def _remember(store: dict[str, Any], url: str, value: Any) -> None:
    store.pop(url, None)
    while len(store) >= CACHE_ENTRIES:
        del store[next(iter(store))]  # oldest first
    store[url] = value


def fetcher_for(policy: RemotePolicy, previous: RemoteFetcher | None = None) -> RemoteFetcher | None:
    """The fetcher for `policy` (None while remote fetching is off), keeping `previous`'s cache."""
    if not policy.enabled:
        return None
    return previous.with_policy(policy) if previous is not None else RemoteFetcher(policy)


def _left(deadline: float) -> float:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError
    return remaining


def _kind(address: IPAddress) -> str:
    for flag, word in (("is_loopback", "loopback"), ("is_link_local", "link-local"), ("is_private", "private"),
                       ("is_multicast", "multicast"), ("is_unspecified", "unspecified")):
        if getattr(address, flag):
            return word
    return "non-public"


def _resolve(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise FetchError(f"{host} does not resolve: {exc}") from exc
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """Connects to the address that passed the policy check, while the Host header keeps the name."""

    def __init__(self, host: str, port: int, *, address: str, **kwargs: Any) -> None:
        super().__init__(host, port, **kwargs)
        self._address = address
        self.pinned: socket.socket | None = None  # kept after the response detaches `sock`

    def connect(self) -> None:
        self.sock = self.pinned = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, *, address: str, **kwargs: Any) -> None:
        super().__init__(host, port, **kwargs)
        self._address = address
        self.pinned: socket.socket | None = None

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        # the certificate is checked against the host name, not the pinned address
        self.sock = self.pinned = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]
