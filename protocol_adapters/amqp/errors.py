"""AMQP error conditions -> AdapterError, deciding which ones retrying can fix.

A broker restart shows up as a refused or aborted socket (`proton.pythonio`,
`amqp:connection:framing-error` "connection aborted") or as
`amqp:connection:forced`: all retriable. Conditions that describe the
configuration (wrong credentials, an address the broker refuses, a queue
declared with other arguments) come back the same on every attempt, so they
are not retriable and the adapter stops reconnecting.
"""

from __future__ import annotations

import re

from gateway.errors import AdapterError, EndpointMismatch, MessageRefused, TransientAdapterError, adapter_failure

# conditions that repeat on every attempt: bad credentials, vhost or address, mismatched queue arguments
FATAL_CONDITIONS = frozenset({
    "amqp:unauthorized-access",
    "amqp:not-found",
    "amqp:not-allowed",
    "amqp:not-implemented",
    "amqp:precondition-failed",
    "amqp:invalid-field",
    "amqp:decode-error",
})


def condition_error(where: str, name: str | None, description: str | None) -> AdapterError:
    """An error for a condition the broker or the transport reported."""
    label = name or "closed"
    text = f"AMQP {where}: {label}"
    if description:
        text += f" ({description})"
    if tls_refused(description):
        return AdapterError(f"{text}: check tls.ca (the broker's certificate must be signed by it and name the "
                            "host in the uri) and tls.cert / tls.key")
    return adapter_failure(text, retriable=label not in FATAL_CONDITIONS)


# RabbitMQ: "inequivalent arg 'durable' for queue 'q' in vhost '/': received 'true' but current is 'false'"
_INEQUIVALENT = re.compile(r"inequivalent arg '([^']+)' for queue '([^']*)'.*received '([^']*)' but current is "
                           r"'([^']*)'")
# the queue argument -> the endpoint option that sets it, when xgate has one
_OPTION_OF = {"durable": "terminusdurable"}


def queue_mismatch(endpoint: str, node: str, description: str | None) -> EndpointMismatch | None:
    """One line for a queue declared earlier with other properties: endpoint, queue, the mismatch and the fix."""
    found = _INEQUIVALENT.search(description or "")
    if found is None:
        return None
    argument, queue, requested, current = found.groups()
    option = _OPTION_OF.get(argument)
    if option is not None:
        fix = f"set protocoloptions.{option}: {current} on the endpoint to use it as it is, or delete the queue"
    else:
        fix = "xgate cannot set this argument: delete the queue or declare it as the broker has it"
    return EndpointMismatch(f"AMQP endpoint {endpoint!r}: queue {queue!r} ({node}) already exists with "
                            f"{argument}={current}, but the endpoint asks for {argument}={requested}; {fix}")


def tls_refused(description: str | None) -> bool:
    """Proton's transport error for a TLS handshake that failed on a certificate, ours or the broker's:
    the same on every attempt (an aborted handshake during a broker restart says neither)."""
    text = (description or "").lower()
    return text.startswith("ssl failure") and ("verify failed" in text or "alert" in text)


def disconnected(where: str) -> AdapterError:
    return TransientAdapterError(f"AMQP {where}: connection lost before the broker settled the delivery")


def rejected(node: str, name: str | None, description: str | None) -> MessageRefused:
    """The broker refused the message itself: sending it again gives the same answer (other messages pass)."""
    detail = ": ".join(part for part in (name, description) if part)
    return MessageRefused(f"AMQP {node}: message rejected" + (f" ({detail})" if detail else ""))


def released(node: str, state: str) -> AdapterError:
    return TransientAdapterError(f"AMQP {node}: broker {state} the message without accepting it")
