"""Offline tests of the AMQP 1.0 mapping (wire bytes <-> Envelope fields and body) and of its options."""

from __future__ import annotations

import datetime as dt
import uuid
from pathlib import Path

import pytest
from proton import Data, Described, Message, symbol, timestamp, ubyte, uint, ulong

from gateway.envelope import Envelope
from gateway.errors import AdapterError
from protocol_adapters.amqp.mapping import decode_message, encode_message
from protocol_adapters.amqp.options import build_options
from protocol_adapters.base import EndpointConfig, TlsSettings

UTC = dt.UTC
CREATED = dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)


def sections(*values: object) -> bytes:
    """Raw message bytes from described sections, as another client could send them."""
    out = b""
    for value in values:
        codec = Data()
        codec.put_object(value)
        out += codec.encode()
    return out


def raw_sections(encoded: bytes) -> dict[int, object]:
    """descriptor -> section value with proton's own types (symbol, ulong, ...)."""
    out: dict[int, object] = {}
    offset = 0
    while offset < len(encoded):
        codec = Data()
        offset += codec.decode(encoded[offset:])
        codec.rewind()
        codec.next()
        section = codec.get_object()
        assert isinstance(section, Described)
        value = section.value
        out[int(section.descriptor)] = bytes(value) if isinstance(value, memoryview) else value
    return out


def wire(descriptor: int, value: object) -> Described:
    return Described(ulong(descriptor), value)


def amqp(fields: dict[str, object], body: bytes = b"payload") -> Envelope:
    return Envelope("AMQP/1.0", fields, body)


FULL_FIELDS: dict[str, object] = {
    "header": {"durable": False, "priority": 7, "ttl": 60000, "first-acquirer": True, "delivery-count": 2},
    "message-annotations": {"x-opt-partition-key": "k1", "x-opt-sequence": 12},
    "properties": {"message-id": "m-1", "user-id": b"\x00user\xff", "to": "/queue/out", "subject": "orders.placed",
                   "reply-to": "/queue/replies", "correlation-id": 77, "content-type": "application/json",
                   "content-encoding": "gzip", "absolute-expiry-time": dt.datetime(2099, 1, 1, tzinfo=UTC),
                   "creation-time": CREATED, "group-id": "g", "group-sequence": 3, "reply-to-group-id": "rg"},
    "application-properties": {"cloudEvents_id": "e-1", "count": -5, "flag": True, "ratio": 0.25,
                               "raw": b"\x00\xff\x10", "when": CREATED, "nothing": None},
    "footer": {"x-opt-signature": b"\x01\x02"},
}


class TestRoundTrip:
    def test_every_field_survives_encode_then_decode(self) -> None:
        fields, body = decode_message(encode_message(amqp(FULL_FIELDS), durable=True))
        assert body == b"payload"
        assert fields == FULL_FIELDS

    def test_binary_values_are_bytes_not_memoryviews(self) -> None:
        fields, body = decode_message(encode_message(amqp(FULL_FIELDS, b"\x00\x01"), durable=True))
        assert type(body) is bytes
        assert type(fields["properties"]["user-id"]) is bytes
        assert type(fields["application-properties"]["raw"]) is bytes
        assert type(fields["footer"]["x-opt-signature"]) is bytes

    def test_only_present_sections_and_fields_appear(self) -> None:
        fields, _ = decode_message(encode_message(amqp({"properties": {"subject": "s"}}), durable=False))
        assert fields == {"header": {"durable": False}, "properties": {"subject": "s"}}

    def test_durable_comes_from_the_option_unless_the_envelope_carries_it(self) -> None:
        assert decode_message(encode_message(amqp({}), durable=True))[0]["header"] == {"durable": True}
        carried = amqp({"header": {"durable": False, "priority": 1}})
        assert decode_message(encode_message(carried, durable=True))[0]["header"] == {"durable": False, "priority": 1}

    def test_delivery_annotations_are_not_forwarded(self) -> None:
        fields, _ = decode_message(encode_message(amqp({"delivery-annotations": {"x-hop": 1}}), durable=True))
        assert "delivery-annotations" not in fields

    def test_another_protocols_fields_are_not_sent(self) -> None:
        kafka = Envelope("KAFKA", {"headers": [("h", b"v")], "key": b"k"}, b"body")
        fields, body = decode_message(encode_message(kafka, durable=True))
        assert fields == {"header": {"durable": True}} and body == b"body"

    def test_naive_datetimes_are_utc_and_int_milliseconds_are_accepted(self) -> None:
        envelope = amqp({"properties": {"creation-time": dt.datetime(2024, 1, 1),
                                        "absolute-expiry-time": 1_700_000_000_000}})
        props = decode_message(encode_message(envelope, durable=True))[0]["properties"]
        assert props["creation-time"] == dt.datetime(2024, 1, 1, tzinfo=UTC)
        assert props["absolute-expiry-time"] == dt.datetime.fromtimestamp(1_700_000_000, UTC)


class TestWireTypes:
    """What other AMQP clients see: proton's own Message reads the bytes the sink sends."""

    def test_typed_fields_have_their_amqp_types(self) -> None:
        message = Message()
        message.decode(encode_message(amqp(FULL_FIELDS), durable=True))
        assert message.priority == 7 and message.ttl == 60.0 and message.delivery_count == 2
        assert message.durable is False and message.first_acquirer is True
        assert type(message.content_type) is symbol and message.content_type == "application/json"
        raw = raw_sections(encode_message(amqp(FULL_FIELDS), durable=True))
        header, props = raw[0x70], raw[0x73]
        assert isinstance(header, list) and isinstance(props, list)
        assert [type(v) for v in header] == [bool, ubyte, uint, bool, uint]
        assert type(props[5]) is ulong and props[5] == 77  # correlation-id
        assert type(props[6]) is symbol and type(props[7]) is symbol  # content-type, content-encoding
        assert type(props[8]) is timestamp and type(props[11]) is uint  # absolute-expiry-time, group-sequence
        assert message.user_id == b"\x00user\xff"
        assert message.creation_time == pytest.approx(CREATED.timestamp())
        assert message.group_sequence == 3
        assert type(message.body) in (bytes, memoryview) and bytes(message.body) == b"payload"
        assert isinstance(message.properties, dict) and message.properties["when"] == timestamp(
            int(CREATED.timestamp() * 1000))
        assert all(type(key) is symbol for key in message.annotations)

    def test_the_body_is_one_data_section(self) -> None:
        raw = raw_sections(encode_message(amqp({}, b"abc"), durable=True))
        assert list(raw) == [0x70, 0x75] and raw[0x75] == b"abc"

    def test_uuid_and_integer_message_ids(self) -> None:
        ident = uuid.uuid4()
        message = Message()
        message.decode(encode_message(amqp({"properties": {"message-id": ident, "correlation-id": b"\x01"}}),
                                      durable=True))
        assert message.id == ident and bytes(message.correlation_id) == b"\x01"
        # read back, a uuid is its string form (documented)
        assert decode_message(message.encode())[0]["properties"]["message-id"] == str(ident)


class TestDecodingForeignMessages:
    def test_a_proton_message(self) -> None:
        message = Message(body="text body", subject="s", id=uuid.UUID(int=1), durable=True, priority=9,
                          properties={"a": 1, "b": b"\x00"}, annotations={symbol("x-opt-k"): symbol("v")},
                          instructions={symbol("x-hop"): 1}, creation_time=1_700_000_000.5)
        fields, body = decode_message(message.encode())
        assert body == b"text body"  # an amqp-value string: its UTF-8 bytes
        assert fields["properties"] == {"message-id": str(uuid.UUID(int=1)), "subject": "s",
                                        "creation-time": dt.datetime.fromtimestamp(1_700_000_000.5, UTC)}
        assert fields["header"] == {"durable": True, "priority": 9}
        assert fields["application-properties"] == {"a": 1, "b": b"\x00"}
        assert fields["message-annotations"] == {"x-opt-k": "v"}
        assert type(fields["message-annotations"]["x-opt-k"]) is str  # a symbol is plain text
        assert fields["delivery-annotations"] == {"x-hop": 1}

    def test_several_data_sections_are_concatenated(self) -> None:
        assert decode_message(sections(wire(0x75, b"ab"), wire(0x75, b"cd")))[1] == b"abcd"

    def test_symbolic_descriptors(self) -> None:
        raw = sections(Described(symbol("amqp:properties:list"), [None, None, None, "sub"]),
                       Described(symbol("amqp:data:binary"), b"x"))
        assert decode_message(raw) == ({"properties": {"subject": "sub"}}, b"x")

    @pytest.mark.parametrize(("value", "body"), [
        (b"\x00raw", b"\x00raw"),
        (None, b""),
        ({"a": [1, True]}, b'{"a":[1,true]}'),
        (42, b"42"),
    ])
    def test_amqp_value_bodies(self, value: object, body: bytes) -> None:
        assert decode_message(sections(wire(0x77, value)))[1] == body

    def test_amqp_sequence_bodies_become_one_json_array(self) -> None:
        assert decode_message(sections(wire(0x76, [1, "a"]), wire(0x76, [b"\x00"])))[1] == b'[1,"a","AA=="]'

    def test_no_body_is_empty(self) -> None:
        assert decode_message(sections(wire(0x70, [True]))) == ({"header": {"durable": True}}, b"")

    def test_typed_numbers_become_plain_ints(self) -> None:
        fields, _ = decode_message(sections(wire(0x70, [None, ubyte(3), uint(1000)]),
                                            wire(0x74, {"u": ulong(5), "t": timestamp(0)})))
        assert fields["header"] == {"priority": 3, "ttl": 1000}
        assert type(fields["application-properties"]["u"]) is int
        assert fields["application-properties"]["t"] == dt.datetime(1970, 1, 1, tzinfo=UTC)

    def test_a_key_repeated_on_the_wire_keeps_the_last_value(self) -> None:
        codec = Data()
        codec.put_described()
        codec.enter()
        codec.put_ulong(0x74)
        codec.put_map()
        codec.enter()
        for value in ("first", "second"):
            codec.put_string("k")
            codec.put_string(value)
        codec.exit()
        codec.exit()
        assert decode_message(codec.encode())[0]["application-properties"] == {"k": "second"}

    def test_nested_annotation_values_and_described_values(self) -> None:
        raw = sections(wire(0x72, {symbol("x-opt-list"): [symbol("a"), uuid.UUID(int=2)],
                                   symbol("x-opt-described"): Described(symbol("d"), 1)}))
        annotations = decode_message(raw)[0]["message-annotations"]
        assert annotations["x-opt-list"] == ["a", str(uuid.UUID(int=2))]
        assert annotations["x-opt-described"] == {"descriptor": "d", "value": 1}

    def test_malformed_bytes_are_not_retriable(self) -> None:
        with pytest.raises(AdapterError) as caught:
            decode_message(b"\x00\x53\x75\xb0\x00\x00\xff\xff")  # a data section claiming 64 KiB
        assert not caught.value.retriable


class TestEncodingErrors:
    @pytest.mark.parametrize("fields", [
        {"header": {"priority": 300}},
        {"header": {"ttl": -1}},
        {"header": {"durable": "yes"}},
        {"properties": {"not-a-field": 1}},
        {"properties": {"subject": 5}},
        {"properties": {"message-id": 1.5}},
        {"application-properties": {"obj": object()}},
        {"application-properties": {1: "non-string key"}},
        {"message-annotations": {1.5: "bad key"}},
        {"application-properties": {"huge": 1 << 70}},
    ])
    def test_a_field_without_an_amqp_form_is_not_retriable(self, fields: dict[str, object]) -> None:
        with pytest.raises(AdapterError) as caught:
            encode_message(amqp(fields), durable=True)
        assert not caught.value.retriable


class TestOptions:
    def config(self, *uris: str, username: str | None = None, tls: TlsSettings | None = None,
               **options: object) -> EndpointConfig:
        return EndpointConfig("e", "AMQP/1.0", uris or ("amqp://127.0.0.1:5672",), options, username=username,
                              password="secret", tls=tls)

    def test_defaults_and_node(self) -> None:
        options = build_options(self.config(node="/queue/orders"))
        assert options.node == "/queue/orders" and options.urls == ("amqp://127.0.0.1:5672",)
        assert options.prefetch == 256 and options.durable and options.terminus_durable

    def test_node_from_the_uri_path_and_the_address_alias(self) -> None:
        assert build_options(self.config("amqp://broker/queue/a%20b")).node == "/queue/a b"
        assert build_options(self.config("amqp://broker/queue/x", address="/queue/y")).node == "/queue/y"
        assert build_options(self.config("amqp://broker/queue/x", node="/queue/z")).node == "/queue/z"

    def test_tls_upgrades_the_scheme(self, tmp_path: Path) -> None:
        (tmp_path / "ca.pem").write_text("checked for readability here, loaded by proton")
        options = build_options(self.config("amqp://broker:1234/queue/q", "amqp://other/queue/q",
                                            tls=TlsSettings(ca_file=str(tmp_path / "ca.pem"))))
        assert options.urls == ("amqps://broker:1234", "amqps://other:5672")

    def test_user_info_in_a_uri_is_refused_without_echoing_it(self) -> None:
        with pytest.raises(AdapterError) as caught:
            build_options(self.config("amqp://eve:pw@broker:1234/queue/q"))
        assert not caught.value.retriable and "credentials" in str(caught.value) and "pw" not in str(caught.value)

    def test_an_unreadable_tls_file_is_named(self) -> None:
        with pytest.raises(AdapterError) as caught:
            build_options(self.config("amqps://broker/queue/q", tls=TlsSettings(cert_file="/nonexistent/c.pem")))
        assert not caught.value.retriable and "tls.cert '/nonexistent/c.pem' cannot be read" in str(caught.value)

    def test_properties_and_distribution_mode(self) -> None:
        options = build_options(self.config(node="q", linkproperties={"a": "1"}, distributionmode="COPY",
                                            **{"connection-properties": {"b": "2"}}))
        assert options.link_properties == (("a", "1"),) and options.connection_properties == (("b", "2"),)
        assert options.distribution_mode == "copy"

    @pytest.mark.parametrize(("uri", "options"), [
        ("amqp://broker", {}),
        ("http://broker/queue/q", {}),
        ("amqp://broker/queue/q", {"prefetch": 0}),
        ("amqp://broker/queue/q", {"prefetch": 2.5}),
        ("amqp://broker/queue/q", {"durable": "maybe"}),
        ("amqp://broker/queue/q", {"distributionmode": "fanout"}),
        ("amqp://broker/queue/q", {"linkproperties": {"a": 1}}),
        ("amqp://broker/queue/q", {"sendtimeout": -1}),
    ])
    def test_invalid_options_are_not_retriable(self, uri: str, options: dict[str, object]) -> None:
        with pytest.raises(AdapterError) as caught:
            build_options(self.config(uri, **options))
        assert not caught.value.retriable
