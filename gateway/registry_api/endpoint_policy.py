"""What a registry write may say about endpoints (issue 35, item 7).

An endpoint document is not only a contract: `xgate run` connects to what it names and listens where it
says. With the write key alone, a client could add an HTTP source listening on 0.0.0.0 and a producer
relaying to 127.0.0.1:<port>/metadata. So writes that add, change or remove endpoints need their own
permission (gateway.yaml `registry.write.endpoints: true`), and even then an address an endpoint names
may not be loopback, link-local or unspecified (0.0.0.0, ::) unless `registry.write.addresses` lists it
(a host name, an address or a CIDR range). Host names are compared as written, never resolved here:
`localhost` and `*.localhost` count as loopback.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from gateway.loader.endpoints import written_addresses

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class EndpointPolicy:
    allowed: bool = False  # registry.write.endpoints
    addresses: tuple[str, ...] = ()  # registry.write.addresses: hosts, addresses or CIDR ranges

    def refusal(self, body: dict[str, Any]) -> str | None:
        """Why an endpoint written with this body is refused, or None."""
        for address in written_addresses(body):
            host = _host(address)
            if host is not None and self._restricted(host) and not self._listed(host):
                return (f"{address!r} names {host}, a loopback, link-local or unspecified address: an endpoint "
                        "written through the API may name it only when gateway.yaml registry.write.addresses "
                        "lists it")
        return None

    @staticmethod
    def _restricted(host: str) -> bool:
        name = host.lower().rstrip(".")
        if name == "localhost" or name.endswith(".localhost"):
            return True
        try:
            ip = ipaddress.ip_address(name)
        except ValueError:
            return False  # a name: not resolved here
        return ip.is_loopback or ip.is_link_local or ip.is_unspecified

    def _listed(self, host: str) -> bool:
        name = host.lower().rstrip(".")
        for entry in self.addresses:
            if entry.lower().rstrip(".") == name:
                return True
            network = _network(entry)
            if network is not None:
                try:
                    if ipaddress.ip_address(name) in network:
                        return True
                except ValueError:
                    continue
        return False


def _host(address: str) -> str | None:
    """The host of `scheme://host:port/...` or of a Kafka `host:port`."""
    text = address.strip()
    if "://" not in text:
        text = "//" + text
    try:
        return urlsplit(text).hostname
    except ValueError:
        return None


def _network(entry: str) -> Network | None:
    try:
        return ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return None
