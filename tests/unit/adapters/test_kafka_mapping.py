"""Offline tests of the Kafka adapter: record <-> Envelope mapping, options, and the per-partition offset tracker."""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka.structs import ConsumerRecord

from gateway.envelope import Envelope
from gateway.errors import AdapterError
from protocol_adapters.base import EndpointConfig, TlsSettings
from protocol_adapters.kafka.errors import adapter_error, is_retriable
from protocol_adapters.kafka.mapping import OutgoingRecord, forwarded_record, outgoing_record, record_envelope
from protocol_adapters.kafka.offsets import PartitionOffsets
from protocol_adapters.kafka.options import sink_options, source_options


def record(**overrides: Any) -> ConsumerRecord[bytes, bytes]:
    values: dict[str, Any] = {
        "topic": "orders", "partition": 3, "offset": 42, "timestamp": 1_700_000_000_123, "timestamp_type": 0,
        "key": b"\x00key\xff", "value": b'{"id": 1}', "checksum": None, "serialized_key_size": 5,
        "serialized_value_size": 9,
        "headers": [("ce_type", b"order.created"), ("bin", b"\x00\xff"), ("ce_type", b"second")],
    }
    values.update(overrides)
    return ConsumerRecord(**values)


class TestRecordToEnvelope:
    def test_every_field_in_the_kafka_shape(self) -> None:
        envelope = record_envelope(record(), "orders.in", ack="handle")
        assert envelope.protocol == "KAFKA"
        assert envelope.endpoint == "orders.in"
        assert envelope.body == b'{"id": 1}'
        assert envelope.fields == {
            "topic": "orders",
            "partition": 3,
            "key": b"\x00key\xff",
            "headers": [("ce_type", b"order.created"), ("bin", b"\x00\xff"), ("ce_type", b"second")],
            "timestamp": 1_700_000_000_123,
        }
        assert envelope.position == {"topic": "orders", "partition": 3, "offset": 42}
        assert envelope.ack == "handle"

    def test_repeated_headers_keep_wire_order_and_headers_are_a_list(self) -> None:
        headers = record_envelope(record(), None).fields["headers"]
        assert isinstance(headers, list)
        assert [name for name, _ in headers] == ["ce_type", "bin", "ce_type"]

    def test_absent_key_value_timestamp_and_null_header(self) -> None:
        envelope = record_envelope(record(key=None, value=None, timestamp=-1, headers=[("empty", None)]), None)
        assert envelope.fields["key"] is None
        assert envelope.body == b""
        assert envelope.fields["timestamp"] is None
        assert envelope.fields["headers"] == [("empty", b"")]

    def test_nulls_are_read_as_empty_and_produced_as_null_again(self) -> None:
        """Issue 35: judged, a tombstone is an empty body and a null header b""; produced (a dead letter goes
        this way, `xgate-*` headers appended), both are null again, at their places."""
        envelope = record_envelope(record(value=None, headers=[("a", b"1"), ("trace", None), ("b", None)]), None)
        assert (envelope.body, envelope.fields["headers"]) == (b"", [("a", b"1"), ("trace", b""), ("b", b"")])
        assert envelope.fields["tombstone"] is True and envelope.fields["null_headers"] == (1, 2)
        envelope.fields["headers"] = envelope.fields["headers"] + [("xgate-verdict", b"nonconformant")]
        out = outgoing_record(envelope)
        assert out.value is None
        assert out.headers == [("a", b"1"), ("trace", None), ("b", None), ("xgate-verdict", b"nonconformant")]
        assert forwarded_record(record(value=None, headers=[("trace", None)])).value is None
        assert forwarded_record(record(headers=[("trace", None)])).headers == [("trace", None)]

    def test_a_record_without_nulls_has_no_null_fields(self) -> None:
        fields = record_envelope(record(), None).fields
        assert "tombstone" not in fields and "null_headers" not in fields

    def test_no_headers_is_an_empty_list(self) -> None:
        assert record_envelope(record(headers=()), None).fields["headers"] == []


class TestEnvelopeToRecord:
    def test_body_key_headers_and_timestamp_pass_through_as_bytes(self) -> None:
        envelope = Envelope("KAFKA", {"topic": "elsewhere", "partition": 9, "key": b"\x01k",
                                      "headers": [("a", b"\x00\xff"), ("a", b"2"), ("b", b"")],
                                      "timestamp": 1_700_000_000_000}, b"\x00body")
        assert outgoing_record(envelope) == OutgoingRecord(
            value=b"\x00body", key=b"\x01k", headers=[("a", b"\x00\xff"), ("a", b"2"), ("b", b"")],
            timestamp_ms=1_700_000_000_000)

    def test_text_values_are_encoded_as_utf8(self) -> None:
        envelope = Envelope("KAFKA", {"key": "clé", "headers": [("h", "välue"), ("n", 5), ("z", None)]}, b"")
        out = outgoing_record(envelope)
        assert out.key == "clé".encode()
        assert out.headers == [("h", "välue".encode()), ("n", b"5"), ("z", b"")]

    def test_header_mapping_and_buffer_types_are_accepted(self) -> None:
        envelope = Envelope("KAFKA", {"headers": {"x": bytearray(b"1"), "y": memoryview(b"2")}}, memoryview(b"body"))  # type: ignore[arg-type]
        out = outgoing_record(envelope)
        assert out.headers == [("x", b"1"), ("y", b"2")]
        assert out.value == b"body"

    def test_a_mixed_header_list_is_converted_into_a_new_list(self) -> None:
        headers: list[tuple[Any, Any]] = [("a", b"1"), ("b", "2")]
        envelope = Envelope("KAFKA", {"headers": headers}, b"")
        assert outgoing_record(envelope).headers == [("a", b"1"), ("b", b"2")]
        assert headers == [("a", b"1"), ("b", "2")]  # the envelope's own list unchanged
        defaults = outgoing_record(Envelope("KAFKA", {"headers": [("a", b"1")]}, b""), None, (("c", b"3"),))
        assert defaults.headers == [("a", b"1"), ("c", b"3")]

    def test_missing_fields_give_no_key_headers_or_timestamp(self) -> None:
        assert outgoing_record(Envelope("KAFKA", {}, b"x")) == OutgoingRecord(b"x", None, [], None)

    @pytest.mark.parametrize("value, expected", [(1.5e12, 1_500_000_000_000), (-1, None), (True, None), ("1", None)])
    def test_timestamp_only_from_non_negative_numbers(self, value: Any, expected: int | None) -> None:
        assert outgoing_record(Envelope("KAFKA", {"timestamp": value}, b"")).timestamp_ms == expected

    def test_defaults_fill_a_missing_key_and_absent_header_names_only(self) -> None:
        envelope = Envelope("KAFKA", {"headers": [("a", b"mine")]}, b"")
        out = outgoing_record(envelope, b"fixed", (("a", b"default"), ("b", b"added")))
        assert out.key == b"fixed"
        assert out.headers == [("a", b"mine"), ("b", b"added")]
        assert outgoing_record(Envelope("KAFKA", {"key": b"own"}, b""), b"fixed").key == b"own"

    def test_a_consumed_record_maps_back_to_the_same_wire_values(self) -> None:
        consumed = record_envelope(record(), "in")
        out = outgoing_record(consumed)
        again = record_envelope(record(key=out.key, value=out.value, headers=out.headers, timestamp=out.timestamp_ms), "in")
        assert again.fields == consumed.fields and again.body == consumed.body


def config(options: dict[str, Any], uris: tuple[str, ...] = ("tcp://127.0.0.1:9092",), **kwargs: Any) -> EndpointConfig:
    return EndpointConfig("ep", "KAFKA", uris, options, **kwargs)


class TestOptions:
    def test_source_defaults(self) -> None:
        opts = source_options(config({"topic": "t"}))
        assert opts.topics == ("t",)
        assert opts.group_id == "xgate-ep"
        assert opts.auto_offset_reset == "earliest"
        assert opts.connection.bootstrap_servers == ("127.0.0.1:9092",)
        assert opts.connection.security_protocol == "PLAINTEXT"
        assert (opts.fetch_min_bytes, opts.fetch_pacing_ms) == (1, 10)

    def test_source_topics_group_reset_and_tuning_from_extra(self) -> None:
        opts = source_options(config({"topics": "a, b,a", "consumergroup": "g", "autooffsetreset": "latest"},
                                     extra={"session_timeout_ms": 1000, "max_unacked": 7}))
        assert opts.topics == ("a", "b") and opts.group_id == "g" and opts.auto_offset_reset == "latest"
        assert opts.session_timeout_ms == 1000 and opts.rebalance_timeout_ms == 1000 and opts.max_unacked == 7

    def test_sink_options(self) -> None:
        opts = sink_options(config({"topic": "out", "acks": 1, "partition": 2, "key": "k", "headers": {"h": "v"}}))
        assert (opts.topic, opts.acks, opts.partition, opts.default_key) == ("out", 1, 2, b"k")
        assert opts.default_headers == (("h", b"v"),)
        assert sink_options(config({"topic": "out", "acks": 0})).acks == "all"
        assert sink_options(config({"topic": "out", "key": "{id}"})).default_key is None

    def test_the_sink_is_idempotent_by_default_and_only_with_acks_all(self) -> None:
        assert sink_options(config({"topic": "out"})).idempotent is True
        assert sink_options(config({"topic": "out"}, extra={"enable_idempotence": "false"})).idempotent is False
        assert sink_options(config({"topic": "out", "acks": 1})).idempotent is False  # acks 1 cannot be idempotent
        with pytest.raises(AdapterError, match="enable_idempotence"):
            sink_options(config({"topic": "out", "acks": 1}, extra={"enable_idempotence": True}))
        with pytest.raises(AdapterError, match="enable_idempotence"):
            sink_options(config({"topic": "out", "enable_idempotence": "maybe"}))

    @pytest.mark.parametrize("uri, servers, protocol", [
        ("kafka.example:9093", ("kafka.example:9093",), "PLAINTEXT"),
        ("PLAINTEXT://h:1", ("h:1",), "PLAINTEXT"),
        ("SSL://h:1", ("h:1",), "SSL"),
        ("SASL_SSL://h", ("h:9092",), "SASL_SSL"),
    ])
    def test_uri_schemes(self, uri: str, servers: tuple[str, ...], protocol: str) -> None:
        connection = sink_options(config({"topic": "t"}, (uri,))).connection
        assert connection.bootstrap_servers == servers and connection.security_protocol == protocol

    def test_credentials_and_tls_come_from_settings(self) -> None:
        connection = source_options(config({"topic": "t"}, username="u", password="p", tls=TlsSettings(verify=False),
                                           extra={"sasl_mechanism": "scram-sha-256"})).connection
        assert connection.security_protocol == "SASL_SSL"
        kwargs = connection.client_kwargs()
        assert kwargs["sasl_mechanism"] == "SCRAM-SHA-256"
        assert (kwargs["sasl_plain_username"], kwargs["sasl_plain_password"]) == ("u", "p")
        assert kwargs["ssl_context"].check_hostname is False

    @pytest.mark.parametrize("options, uris", [
        ({}, ("tcp://h:1",)),
        ({"topic": "t-{id}"}, ("tcp://h:1",)),
        ({"topic": "t", "autooffsetreset": "middle"}, ("tcp://h:1",)),
        ({"topic": "t"}, ("http://h:1",)),
        ({"topic": "t"}, ()),
        ({"topic": "t", "max_unacked": 0}, ("tcp://h:1",)),
        ({"topic": "t", "isolation_level": "dirty"}, ("tcp://h:1",)),
        ({"topic": "t", "fetch_pacing_ms": -1}, ("tcp://h:1",)),
    ])
    def test_bad_source_options_are_not_retriable(self, options: dict[str, Any], uris: tuple[str, ...]) -> None:
        with pytest.raises(AdapterError) as caught:
            source_options(config(options, uris))
        assert not caught.value.retriable


class TestErrors:
    def test_retriable_follows_the_failure(self) -> None:
        from aiokafka import errors

        assert adapter_error(errors.KafkaConnectionError("down"), "produce").retriable
        assert adapter_error(errors.KafkaTimeoutError(), "produce").retriable
        assert adapter_error(errors.RequestTimedOutError(), "produce").retriable
        assert adapter_error(ConnectionRefusedError(), "connect").retriable
        assert not adapter_error(errors.MessageSizeTooLargeError(), "produce").retriable
        assert not adapter_error(errors.TopicAuthorizationFailedError(), "produce").retriable

    def test_retriable_is_aiokafkas_flag_but_for_the_two_it_leaves_unflagged(self) -> None:
        from aiokafka import errors

        flagged = (errors.KafkaConnectionError, errors.NoBrokersAvailable, errors.NodeNotReadyError,
                   errors.RequestTimedOutError, errors.NotEnoughReplicasError,
                   errors.NotEnoughReplicasAfterAppendError, errors.CoordinatorNotAvailableError)
        unflagged_but_transient = (errors.KafkaTimeoutError, errors.KafkaUnavailableError)
        refusals = (errors.MessageSizeTooLargeError, errors.RecordTooLargeError, errors.InvalidTopicError,
                    errors.TopicAuthorizationFailedError, errors.GroupAuthorizationFailedError,
                    errors.ClusterAuthorizationFailedError, errors.UnsupportedSaslMechanismError,
                    errors.AuthenticationFailedError, errors.SaslAuthenticationFailed, errors.UnsupportedVersionError,
                    errors.IllegalArgumentError)
        assert all(kind.retriable for kind in flagged)
        assert not any(kind.retriable for kind in (*unflagged_but_transient, *refusals))
        assert all(is_retriable(kind()) for kind in (*flagged, *unflagged_but_transient))
        assert not any(is_retriable(kind()) for kind in refusals)


class TestPartitionTracker:
    def test_commit_point_is_one_past_the_acknowledged_prefix(self) -> None:
        part = PartitionOffsets()
        for offset in range(5, 10):
            part.track(offset)
        assert not part.ack(6) and part.commit_to is None
        assert part.ack(5) and part.commit_to == 7
        assert not part.ack(8) and part.commit_to == 7
        assert part.ack(7) and part.commit_to == 9
        assert part.pending_commit() == 9
        part.committed = 9
        assert part.pending_commit() is None

    def test_gaps_in_offsets_do_not_stall_commits(self) -> None:
        part = PartitionOffsets()
        for offset in (10, 12, 15):
            part.track(offset)
        part.ack(12)
        part.ack(10)
        assert part.commit_to == 13

    def test_unknown_or_repeated_acks_are_ignored(self) -> None:
        part = PartitionOffsets()
        part.track(0)
        assert not part.ack(99)
        assert part.ack(0) and not part.ack(0)

    def test_pending_means_handed_out_and_not_acknowledged(self) -> None:
        part = PartitionOffsets()
        part.track(0)
        part.track(1)
        part.ack(1)
        assert part.pending(0) and not part.pending(1) and not part.pending(2)
        part.ack(0)
        assert not part.pending(0) and part.commit_to == 2

    @staticmethod
    def tracked(offsets: list[int]) -> PartitionOffsets:
        part = PartitionOffsets()
        part.track_many(offsets)
        return part

    def test_a_batch_that_is_the_oldest_handed_out_is_taken_off_at_once(self) -> None:
        part = self.tracked([10, 12, 15, 16, 20])
        assert part.ack_many([10, 12, 15]) and part.commit_to == 16
        assert list(part.order) == [16, 20] and part.open == {16, 20} and not part.acked
        assert part.ack_many([20, 16]) and part.commit_to == 21 and not part.order and not part.open

    def test_a_batch_acknowledged_out_of_order_waits_for_the_gap(self) -> None:
        part = self.tracked(list(range(10)))
        assert not part.ack_many([3, 4, 5]) and part.commit_to is None
        assert part.ack_many([0, 1, 2]) and part.commit_to == 6  # 3-5 were held back, now they count
        assert not part.ack_many([8, 9]) and part.ack_many([6, 7]) and part.commit_to == 10

    def test_a_batch_with_stale_repeated_or_unknown_offsets_counts_only_the_open_ones(self) -> None:
        part = self.tracked([5, 6, 7])
        assert part.ack_many([5, 5, 99]) and part.commit_to == 6  # a repeat and an offset never handed out
        assert not part.ack_many([5]) and part.ack_many([6, 7, 8]) and part.commit_to == 8
        assert not part.pending(6) and not part.order

    def test_skipped_offsets_are_committed_past_once_what_came_before_is_acked(self) -> None:
        """An unreadable batch (offsets 5-9) is stepped over: the commit point passes it, but only after the
        records handed out before it are acknowledged (issue 35, item 3)."""
        part = PartitionOffsets()
        part.track_many([3, 4])
        part.skip_to(10)
        part.track_many([10])
        assert part.pending_commit() is None
        part.ack(3)
        assert part.commit_to == 4
        part.ack(4)
        assert part.commit_to == 10  # past the skipped batch
        part.ack(10)
        assert part.commit_to == 11
        fresh = PartitionOffsets()
        fresh.skip_to(7)  # nothing handed out before: committable at once
        assert fresh.pending_commit() == 7
