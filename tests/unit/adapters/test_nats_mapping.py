"""NATS message <-> Envelope (protocol_adapters/nats/mapping.py) and options, offline: no server, no sleeping."""

from __future__ import annotations

import asyncio
from typing import Any

import nats.errors
import nats.js.errors
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg

from gateway.envelope import Envelope, header_values
from gateway.errors import AdapterError
from protocol_adapters.base import EndpointConfig
from protocol_adapters.nats.errors import adapter_error, is_retriable
from protocol_adapters.nats.mapping import (
    HeaderKeepingClient,
    HeaderPairs,
    RawHeaders,
    envelope_from_msg,
    header_pairs,
    outgoing_headers,
    outgoing_reply,
    parse_header_block,
)
from protocol_adapters.nats.options import sink_options, source_options

BLOCK = b"NATS/1.0\r\nX-Tag: a\r\nx-tag: b\r\nX-Tag: c\r\nCe-Id: 1\r\nText: caf\xc3\xa9 \xe2\x82\xac\r\n\r\n"
JS_REPLY = "$JS.ACK.ORDERS.xgate-orders.3.42.17.1700000000000000000.5"


def message(headers: dict[str, str] | None, *, reply: str = "", data: bytes = b"body") -> Msg:
    # no client: these messages are only mapped, never acked
    return Msg(_client=None, subject="orders.created", reply=reply, data=data,  # type: ignore[arg-type]
               headers=headers)


def test_header_block_keeps_repeats_case_and_order() -> None:
    assert parse_header_block(BLOCK) == [("X-Tag", "a"), ("x-tag", "b"), ("X-Tag", "c"), ("Ce-Id", "1"),
                                         ("Text", "café €")]


def test_header_block_edge_cases() -> None:
    # a status line, a value with colons, no space after the colon, an empty value, invalid UTF-8, junk lines
    raw = b"NATS/1.0 503\r\nA:x:y\r\nB:\r\nC: \xff\xfe\r\nno colon here\r\nbad name: v\r\n\xc3\xa9: v\r\n\r\n"
    assert parse_header_block(raw) == [("A", "x:y"), ("B", ""), ("C", "\ufffd\ufffd")]
    assert parse_header_block(b"NATS/1.0\r\n\r\n") == []


def test_header_pairs_prefers_the_raw_block() -> None:
    kept = RawHeaders({"X-Tag": "c", "x-tag": "b"}, BLOCK)
    assert header_values(header_pairs(kept), "x-tag", casefold=True) == ["a", "b", "c"]
    # without the raw block (a plain nats-py client) only what the dict kept is there
    assert header_pairs({"X-Tag": "c"}) == [("X-Tag", "c")]
    assert header_pairs(None) == [] and header_pairs({}) == []


def test_client_attaches_the_raw_block_to_parsed_headers() -> None:
    async def parse() -> Any:
        return await HeaderKeepingClient()._process_headers(BLOCK)
    parsed = asyncio.run(parse())
    assert isinstance(parsed, RawHeaders) and parsed.raw == BLOCK
    assert parsed["X-Tag"] == "c"  # still nats-py's dict for everything that reads it (JetStream status...)
    assert asyncio.run(_no_headers()) is None


async def _no_headers() -> Any:
    return await HeaderKeepingClient()._process_headers(None)


def test_core_message_to_envelope() -> None:
    msg = message(RawHeaders({}, BLOCK), reply="_INBOX.abc", data=b"\x00\xff binary")
    envelope = envelope_from_msg(msg, "orders", jetstream=False)
    assert envelope.protocol == "NATS" and envelope.endpoint == "orders"
    assert envelope.body == b"\x00\xff binary" and isinstance(envelope.body, bytes)
    assert envelope.fields == {"subject": "orders.created", "reply-to": "_INBOX.abc",
                               "headers": parse_header_block(BLOCK)}
    assert envelope.position == {"subject": "orders.created"}
    assert envelope.ack is msg


def test_core_message_without_reply_or_headers() -> None:
    envelope = envelope_from_msg(message(None), "orders", jetstream=False)
    assert envelope.fields == {"subject": "orders.created", "reply-to": None, "headers": []}


def test_jetstream_message_to_envelope() -> None:
    envelope = envelope_from_msg(message({"A": "1"}, reply=JS_REPLY), "orders", jetstream=True)
    # the reply subject is JetStream's ack subject, not the publisher's
    assert envelope.fields == {"subject": "orders.created", "reply-to": None, "headers": [("A", "1")]}
    assert envelope.position == {"subject": "orders.created", "stream": "ORDERS", "stream_seq": 42}


def test_outgoing_headers_keep_every_pair() -> None:
    envelope = Envelope("NATS", {"subject": "x", "reply-to": "r.1",
                                 "headers": [("X-Tag", "a"), ("x-tag", b"b"), ("X-Tag", "c"), ("N", 5),
                                             ("Skip", None), ("Bin", b"\xff")]}, b"")
    headers = outgoing_headers(envelope)
    assert headers is not None
    assert headers.items() == [("X-Tag", "a"), ("x-tag", "b"), ("X-Tag", "c"), ("N", "5"), ("Bin", "\ufffd")]
    assert headers["X-Tag"] == "c"  # as a dict: the last value
    assert outgoing_reply(envelope) == "r.1"
    empty = Envelope("NATS", {"subject": "x", "headers": [("Skip", None)]}, b"")
    assert outgoing_headers(empty) is None and outgoing_reply(empty) == ""


def test_header_pairs_setitem_replaces_every_earlier_value() -> None:
    headers = HeaderPairs([("A", "1"), ("B", "2"), ("A", "3")])
    headers["A"] = "4"  # how nats-py adds its own headers
    assert headers.items() == [("B", "2"), ("A", "4")] and headers["A"] == "4"


def test_publish_writes_every_pair_on_the_wire() -> None:
    """nats-py's publish serializes HeaderPairs with repeats: checked on the bytes it queues for the socket."""
    async def queued() -> bytes:
        client = Client()
        # reconnecting with a pending buffer: publish queues the command without a socket
        client._status = Client.RECONNECTING
        client._max_pending_size = 1 << 20
        client._flush_queue = asyncio.Queue()
        await client.publish("orders.created", b"hi", reply="r.1",
                             headers=HeaderPairs([("X-Tag", "a"), ("x-tag", "b"), ("X-Tag", "c")]))
        return b"".join(client._pending)
    wire = asyncio.run(queued())
    assert wire.startswith(b"HPUB orders.created r.1 ")
    block = b"NATS/1.0\r\nX-Tag: a\r\nx-tag: b\r\nX-Tag: c\r\n\r\n"
    assert block + b"hi" in wire
    assert parse_header_block(block) == [("X-Tag", "a"), ("x-tag", "b"), ("X-Tag", "c")]


def config(options: dict[str, Any], uris: tuple[str, ...] = ("nats://127.0.0.1:4222",),
           endpoint: str = "facility.doors") -> EndpointConfig:
    return EndpointConfig(endpoint, "NATS", uris, options)


def test_options_modes_and_defaults() -> None:
    core = source_options(config({"subject": "a.b", "queuegroup": "q"}))
    assert not core.jetstream and core.listen_subject == "a.b" and core.queue_group == "q"
    js = source_options(config({"subjectfilter": "a.*", "stream": "ORDERS", "ackwait": 5}))
    assert js.jetstream and js.listen_subject == "a.*" and js.stream_subjects == ("a.*",)
    assert js.durable == "xgate-facility_doors" and js.ack_wait == 5.0 and js.batch == 256
    assert source_options(config({"subject": "a", "stream": "S", "subjects": "a, b.>"})).stream_subjects == \
        ("a", "b.>")
    assert source_options(config({"subject": "a"}, ("tcp://h:1", "tls://h:2"))).servers == \
        ("nats://h:1", "tls://h:2")
    extra = EndpointConfig("e", "NATS", ("nats://h:1",), {"subject": "a"}, extra={"stream": "S", "token": "t"})
    assert source_options(extra).stream == "S" and source_options(extra).token == "t"


@pytest.mark.parametrize("options, uris", [
    ({}, ("nats://h:1",)),                                     # nothing to subscribe to
    ({"subject": "a", "stream": "bad.name"}, ("nats://h:1",)),
    ({"subject": "a", "ackwait": "soon"}, ("nats://h:1",)),
    ({"subject": "a"}, ("http://h:1",)),
    ({"subject": "a"}, ()),
])
def test_bad_source_options_are_permanent_errors(options: dict[str, Any], uris: tuple[str, ...]) -> None:
    with pytest.raises(AdapterError) as caught:
        source_options(config(options, uris))
    assert not caught.value.retriable


@pytest.mark.parametrize("options", [{}, {"subjectfilter": "a.>"}, {"subject": "a.*"}, {"subject": "a.>"}])
def test_a_sink_needs_a_concrete_subject(options: dict[str, Any]) -> None:
    with pytest.raises(AdapterError):
        sink_options(config(options))


def test_error_translation() -> None:
    transient: tuple[Exception, ...] = (nats.errors.NoServersError(), nats.errors.ConnectionClosedError(),
                                        nats.errors.TimeoutError(), nats.errors.FlushTimeoutError(),
                                        nats.errors.OutboundBufferLimitError(), nats.js.errors.NoStreamResponseError(),
                                        nats.js.errors.APIError(code=503), ConnectionRefusedError())
    permanent: tuple[Exception, ...] = (nats.errors.BadSubjectError(), nats.errors.MaxPayloadError(),
                                        nats.errors.BadHeaderError("a b"), nats.js.errors.BadRequestError(code=400),
                                        ValueError("bug"))
    assert all(is_retriable(exc) for exc in transient)
    assert not any(is_retriable(exc) for exc in permanent)
    error = adapter_error("orders", "publish to a", nats.errors.TimeoutError())
    assert error.retriable and "orders" in str(error) and "timed out" in str(error)
