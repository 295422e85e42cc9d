"""The contracts every protocol adapter implements.

A source is an async context manager and an async iterator of Envelopes; it
acknowledges (commits, accepts, acks) a message only when `ack` is called,
which the runtime does after the sink confirmed delivery. A sink is an async
context manager whose `send` returns only once the broker confirmed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import TracebackType
from typing import Protocol, runtime_checkable

from gateway.envelope import Envelope


@runtime_checkable
class SourceAdapter(Protocol):
    async def __aenter__(self) -> SourceAdapter: ...

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None: ...

    def __aiter__(self) -> AsyncIterator[Envelope]: ...

    async def ack(self, envelope: Envelope) -> None:
        """Delivery of `envelope` downstream is confirmed: commit/accept it at the broker."""

    async def nack(self, envelope: Envelope) -> None:
        """Delivery failed: release it for redelivery (never drop it)."""


@runtime_checkable
class SinkAdapter(Protocol):
    async def __aenter__(self) -> SinkAdapter: ...

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None: ...

    async def send(self, envelope: Envelope) -> None:
        """Deliver and wait for the broker's confirmation; raise AdapterError(retriable=...) on failure."""
