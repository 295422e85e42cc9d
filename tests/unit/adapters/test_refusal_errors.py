"""Which adapter failures are about one message (MessageRefused / MessageTooLarge: dead-letter or drop it, the
route goes on) and which about the destination (retried, or the destination is reported down)."""

from __future__ import annotations

import nats.errors
import pytest
from aiokafka import errors as kafka_errors  # type: ignore[import-untyped]

from gateway.errors import MessageRefused, MessageTooLarge
from protocol_adapters.amqp.errors import queue_mismatch, rejected
from protocol_adapters.http.errors import status_error
from protocol_adapters.kafka.errors import adapter_error as kafka_error
from protocol_adapters.nats.errors import adapter_error as nats_error


@pytest.mark.parametrize(("status", "kind"), [(413, MessageTooLarge), (415, MessageRefused), (422, MessageRefused)])
def test_http_answers_about_the_message_are_refusals(status: int, kind: type[Exception]) -> None:
    error = status_error("e", "http://h/p", status, "No", b"")
    assert isinstance(error, kind) and not error.retriable


@pytest.mark.parametrize("status", [401, 403, 404, 500, 503])
def test_http_answers_about_the_destination_are_not(status: int) -> None:
    assert not isinstance(status_error("e", "http://h/p", status, "No", b""), MessageRefused)


def test_kafka_record_too_large_is_about_the_record_and_a_connection_error_is_not() -> None:
    assert isinstance(kafka_error(kafka_errors.MessageSizeTooLargeError("big"), "produce"), MessageTooLarge)
    assert isinstance(kafka_error(kafka_errors.RecordTooLargeError("big"), "produce"), MessageTooLarge)
    connection = kafka_error(kafka_errors.KafkaConnectionError("down"), "produce")
    assert not isinstance(connection, MessageRefused) and connection.retriable
    assert not isinstance(kafka_error(kafka_errors.TopicAuthorizationFailedError("no"), "produce"), MessageRefused)


def test_nats_max_payload_is_about_the_message_and_a_closed_connection_is_retriable() -> None:
    assert isinstance(nats_error("e", "publish", nats.errors.MaxPayloadError()), MessageTooLarge)
    closed = nats_error("e", "publish", nats.errors.ConnectionClosedError())
    assert closed.retriable and not isinstance(closed, MessageRefused)


def test_amqp_rejected_is_a_refusal_and_a_queue_mismatch_names_the_fix() -> None:
    assert isinstance(rejected("/queue/q", "amqp:precondition-failed", "too big"), MessageRefused)
    mismatch = queue_mismatch("amqp.in", "/queue/q", "PRECONDITION_FAILED - inequivalent arg 'durable' for queue 'q' "
                              "in vhost '/': received 'true' but current is 'false'")
    assert mismatch is not None and not mismatch.retriable
    assert str(mismatch) == ("AMQP endpoint 'amqp.in': queue 'q' (/queue/q) already exists with durable=false, but "
                             "the endpoint asks for durable=true; set protocoloptions.terminusdurable: false on the "
                             "endpoint to use it as it is, or delete the queue")
    assert queue_mismatch("amqp.in", "/queue/q", "something else") is None
