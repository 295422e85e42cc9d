"""aiokafka failures as AdapterError or TransientAdapterError: aiokafka's own `retriable` flag decides, except for
the few failures it leaves unflagged that pass once the broker is back."""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka import errors as kafka_errors  # type: ignore[import-untyped]  # aiokafka ships no type information
from aiokafka.conn import create_conn  # type: ignore[import-untyped]

from gateway.errors import AdapterError, MessageRefused, MessageTooLarge, adapter_failure
from protocol_adapters.tls import tls_refusal

# failures aiokafka (0.14) does not flag retriable but that pass once the broker is back or less busy; the other
# connection, timeout and replica failures it flags itself, and it leaves every refusal of the record, the
# request or the credentials (too large, unauthorized, unsupported SASL mechanism) unflagged
_TRANSIENT = (
    kafka_errors.KafkaTimeoutError,
    kafka_errors.KafkaUnavailableError,
    # an idempotent producer out of step with the broker, or one retired (sink.py): the sink's next producer
    # sends the record again with sequences of its own
    kafka_errors.OutOfOrderSequenceNumber,
    kafka_errors.UnknownProducerId,
    kafka_errors.ProducerClosed,
)

# about the one record (max.request.size on the client, message.max.bytes or a policy on the broker), not the topic
_TOO_LARGE = (kafka_errors.MessageSizeTooLargeError, kafka_errors.RecordTooLargeError)
_RECORD_REFUSED = (kafka_errors.CorruptRecordException,)

KafkaError = kafka_errors.KafkaError


def is_retriable(exc: BaseException) -> bool:
    if isinstance(exc, (*_TRANSIENT, OSError, TimeoutError)):
        return True
    return bool(getattr(exc, "retriable", False))


def adapter_error(exc: BaseException, doing: str) -> AdapterError:
    """An AdapterError for `exc`, raised while `doing` (e.g. "produce to topic t")."""
    if isinstance(exc, AdapterError):
        return exc
    if (refusal := tls_refusal(exc)) is not None:
        return AdapterError(f"Kafka: could not {doing}: TLS handshake failed: {refusal}")
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, _TOO_LARGE):
        return MessageTooLarge(f"Kafka: could not {doing}: record too large ({detail}; the limits are the "
                               "producer's max_request_size and the broker's message.max.bytes)")
    if isinstance(exc, _RECORD_REFUSED):
        return MessageRefused(f"Kafka: could not {doing}: the broker refused the record: {detail}")
    return adapter_failure(f"Kafka: could not {doing}: {detail}", retriable=is_retriable(exc))


async def bootstrap_error(exc: BaseException, kwargs: dict[str, Any], doing: str) -> AdapterError:
    """The AdapterError for a client that failed to start, with the reason aiokafka's start leaves out.

    aiokafka logs why each bootstrap server refused (wrong SASL password, untrusted certificate) and then
    raises a bare "Unable to bootstrap", which reads as retriable. One more connection to the first server
    finds the reason: refused credentials or certificates are not retriable; a broker that is down is.
    """
    if not isinstance(exc, kafka_errors.KafkaConnectionError):
        return adapter_error(exc, doing)
    host, _, port = str(kwargs["bootstrap_servers"][0]).rpartition(":")
    try:
        async with asyncio.timeout(kwargs.get("request_timeout_ms", 15000) / 1000):
            connection = await create_conn(
                host, int(port), client_id=kwargs.get("client_id", "xgate"),
                request_timeout_ms=kwargs.get("request_timeout_ms", 15000),
                ssl_context=kwargs.get("ssl_context"), security_protocol=kwargs.get("security_protocol", "PLAINTEXT"),
                sasl_mechanism=kwargs.get("sasl_mechanism", "PLAIN"),
                sasl_plain_username=kwargs.get("sasl_plain_username"),
                sasl_plain_password=kwargs.get("sasl_plain_password"))
    except (KafkaError, OSError, TimeoutError) as cause:
        if not is_retriable(cause) or tls_refusal(cause) is not None:
            return adapter_error(cause, doing)
    else:
        connection.close()
    return adapter_error(exc, doing)
