"""The contracts every protocol adapter implements, and the configuration each one is built from.

A source is an async context manager and an async iterator of Envelopes. It
acknowledges (commits, accepts, acks) a message only when `ack` is called,
which the runtime does after the sink confirmed delivery; `nack` releases a
message for redelivery. A sink is an async context manager whose `send`
returns only once the broker confirmed, and raises `AdapterError` with
`retriable` set when it could not.

Each protocol package (`protocol_adapters/<protocol>/`) has the same files:
`options.py` (a frozen options struct built from an EndpointConfig),
`mapping.py` (protocol message <-> Envelope), `source.py`, `sink.py`,
`errors.py`, and exports `create_source(config)` and `create_sink(config)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, AsyncIterator, Mapping, Protocol, runtime_checkable

from gateway.envelope import Envelope
from gateway.verdict import Verdict


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """TLS material: paths from gateway.yaml or the environment, never from registry documents."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    verify: bool = True


@dataclass(frozen=True, slots=True)
class EndpointConfig:
    """Everything an adapter needs to connect to one registry endpoint.

    `uris` and `options` come from the endpoint document (`protocoloptions.endpoints`,
    `protocoloptions` with 1.0 names), possibly overridden in gateway.yaml; `username`,
    `password`, `tls` and `extra` (e.g. `sasl_mechanism`) come only from settings or the environment.
    """

    endpoint_id: str
    protocol: str
    uris: tuple[str, ...]
    options: Mapping[str, Any] = field(default_factory=dict)
    usage: tuple[str, ...] = ()
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    tls: TlsSettings | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, repr=False)  # may hold apikey, token


@dataclass(frozen=True, slots=True)
class Delivery:
    """What happened to a message, handed to `ack` so push protocols (HTTP) can answer with it."""

    verdict: Verdict
    forwarded: bool
    rejected: bool = False


@runtime_checkable
class SourceAdapter(Protocol):
    async def __aenter__(self) -> SourceAdapter: ...

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None: ...

    def __aiter__(self) -> AsyncIterator[Envelope]: ...

    async def ack(self, envelope: Envelope, delivery: Delivery | None = None) -> None:
        """Delivery of `envelope` downstream is confirmed: commit/accept it at the broker."""

    async def nack(self, envelope: Envelope) -> None:
        """Delivery failed: release it for redelivery (never drop it)."""

    async def stop(self) -> None:
        """Stop fetching new messages; iteration ends once what was fetched has been yielded."""


@runtime_checkable
class SinkAdapter(Protocol):
    async def __aenter__(self) -> SinkAdapter: ...

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None: ...

    async def send(self, envelope: Envelope) -> None:
        """Deliver and wait for the broker's confirmation; raise an AdapterError on failure (TransientAdapterError when retrying may help)."""
