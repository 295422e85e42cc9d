"""aiokafka failures as AdapterError, with `retriable` saying whether trying again can help."""

from __future__ import annotations

from aiokafka import errors as kafka_errors  # type: ignore[import-untyped]  # aiokafka ships no type information

from gateway.errors import AdapterError, MessageRefused, MessageTooLarge

# failures aiokafka does not flag retriable but that pass once the broker is back or less busy
_TRANSIENT = (
    kafka_errors.KafkaConnectionError,
    kafka_errors.KafkaTimeoutError,
    kafka_errors.NoBrokersAvailable,
    kafka_errors.NodeNotReadyError,
    kafka_errors.RequestTimedOutError,
    kafka_errors.NotEnoughReplicasError,
    kafka_errors.NotEnoughReplicasAfterAppendError,
    kafka_errors.CoordinatorNotAvailableError,
    kafka_errors.KafkaUnavailableError,
)
# never helped by retrying: the record, the request or the credentials are wrong
_PERMANENT = (
    kafka_errors.MessageSizeTooLargeError,
    kafka_errors.RecordTooLargeError,
    kafka_errors.InvalidTopicError,
    kafka_errors.TopicAuthorizationFailedError,
    kafka_errors.GroupAuthorizationFailedError,
    kafka_errors.ClusterAuthorizationFailedError,
    kafka_errors.UnsupportedSaslMechanismError,
    kafka_errors.AuthenticationFailedError,
    kafka_errors.UnsupportedVersionError,
    kafka_errors.IllegalArgumentError,
)

# about the one record (max.request.size on the client, message.max.bytes or a policy on the broker), not the topic
_TOO_LARGE = (kafka_errors.MessageSizeTooLargeError, kafka_errors.RecordTooLargeError)
_RECORD_REFUSED = (kafka_errors.CorruptRecordException,)

KafkaError = kafka_errors.KafkaError


def is_retriable(exc: BaseException) -> bool:
    if isinstance(exc, _PERMANENT):
        return False
    if isinstance(exc, (*_TRANSIENT, OSError, TimeoutError)):
        return True
    return bool(getattr(exc, "retriable", False))


def adapter_error(exc: BaseException, doing: str) -> AdapterError:
    """An AdapterError for `exc`, raised while `doing` (e.g. "produce to topic t")."""
    if isinstance(exc, AdapterError):
        return exc
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, _TOO_LARGE):
        return MessageTooLarge(f"Kafka: could not {doing}: record too large ({detail}; the limits are the "
                               "producer's max_request_size and the broker's message.max.bytes)")
    if isinstance(exc, _RECORD_REFUSED):
        return MessageRefused(f"Kafka: could not {doing}: the broker refused the record: {detail}")
    return AdapterError(f"Kafka: could not {doing}: {detail}", retriable=is_retriable(exc))
