"""The one error family of xgate: every exception raised on purpose derives from GatewayError.

Config-time problems are collected as Diagnostics (file, JSON pointer or
line/column, what was expected) rather than raised one at a time; runtime
errors say by their type whether retrying can help. A nonconformant message
is never an error: it is a Verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class GatewayError(Exception):
    """Root of every exception xgate raises on purpose.

    `retriable` belongs to the type, as in aiokafka: whether trying the same thing again may help. The runtime
    retries exactly the retriable ones (gateway/runtime/pipeline.py, replay.py); everything else fails for good.
    """

    retriable = False


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem found while loading or compiling documents."""

    severity: Severity
    file: str
    message: str
    pointer: str = ""
    line: int | None = None
    column: int | None = None
    code: str = ""

    def location(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}:{self.column or 1}"
        if self.pointer:
            where += f"#{self.pointer}"
        return where

    def __str__(self) -> str:
        code = f" [{self.code}]" if self.code else ""
        return f"{self.location()}: {self.severity.value}{code}: {self.message}"

    def as_dict(self) -> dict[str, object]:
        return {
            "severity": self.severity.value,
            "file": self.file,
            "pointer": self.pointer,
            "line": self.line,
            "column": self.column,
            "code": self.code,
            "message": self.message,
        }


class SchemaCompileError(GatewayError):
    """A payload schema could not be compiled; `pointer` locates the fault inside the schema."""

    def __init__(self, message: str, pointer: str = "") -> None:
        self.pointer = pointer
        super().__init__(message)


class AdapterError(GatewayError):
    """A protocol adapter failed, and trying again cannot help (bad options, refused credentials, a message
    the protocol cannot carry)."""


class TransientAdapterError(AdapterError):
    """A protocol adapter failed for now: the broker is down, busy, slow or reconnecting; trying again may help."""

    retriable = True


def adapter_failure(message: str, *, retriable: bool) -> AdapterError:
    """The failure's type chosen from a flag a translation learned elsewhere (an HTTP status, an MQTT reason
    code, the client library's own `retriable`)."""
    return TransientAdapterError(message) if retriable else AdapterError(message)


class MessageRefused(AdapterError):
    """A destination can never accept this one message (refused by policy, too large): retrying it cannot help,
    yet the destination still takes other messages, so the route goes on. `cause` is a short fixed label
    (`refused`, `too-large`) for metrics and the `xgate-error` header."""

    cause = "refused"


class MessageTooLarge(MessageRefused):
    """The message with the headers xgate adds exceeds what the destination accepts (NATS max_payload, Kafka
    max.request.size or message.max.bytes, MQTT Maximum Packet Size, AMQP max-message-size, HTTP 413)."""

    cause = "too-large"


def too_large(where: str, size: int, limit: int, limit_name: str) -> MessageTooLarge:
    """The one wording of a size refusal, checked before sending where the client knows the limit."""
    return MessageTooLarge(f"{where}: message of {size} bytes exceeds the destination's {limit_name} of {limit} bytes")


class ObserverRefused(GatewayError):
    """An endpoint cannot be read beside the gateway without taking messages from it (an AMQP queue)."""


class EndpointMismatch(AdapterError):
    """The broker holds the endpoint's queue, topic or stream with other properties than its configuration asks
    for: every attempt gets the same answer until the configuration or the broker changes (exit 2 at startup)."""
