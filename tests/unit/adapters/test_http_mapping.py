"""HTTP request <-> Envelope mapping and the webhook answers, offline (protocol_adapters/http/mapping.py)."""

from __future__ import annotations

import json

import pytest

from gateway.envelope import Envelope, header_value, header_values
from gateway.errors import AdapterError
from gateway.verdict import Outcome, Rule, Verdict, Violation
from protocol_adapters.base import Delivery, EndpointConfig
from protocol_adapters.http.mapping import (
    allowed_path,
    envelope_from_request,
    header_pairs,
    outgoing_headers,
    query_pairs,
    request_fields,
    verdict_body,
)
from protocol_adapters.http.options import ApiKey, sink_options, source_options

RAW = [(b"Content-Type", b"application/json"), (b"ce-id", b"1"), (b"X-Tag", b"a"), (b"x-tag", b"b"),
       (b"Host", b"gw:8088")]


def test_every_field_of_a_request() -> None:
    envelope = envelope_from_request("POST", "/hooks/orders", "a=1&b=two&a=3", RAW, b'{"x":1}',
                                     endpoint="ep", remote="127.0.0.1", handle="h")
    assert envelope.protocol == "HTTP"
    assert envelope.body == b'{"x":1}'
    assert envelope.endpoint == "ep"
    assert envelope.ack == "h"
    assert envelope.position == {"method": "POST", "path": "/hooks/orders", "remote": "127.0.0.1"}
    assert envelope.fields == {
        "method": "POST",
        "path": "/hooks/orders",
        "query": [("a", "1"), ("b", "two"), ("a", "3")],
        "headers": [("Content-Type", "application/json"), ("ce-id", "1"), ("X-Tag", "a"), ("x-tag", "b"),
                    ("Host", "gw:8088")],
    }


def test_repeated_headers_keep_order_and_read_case_insensitively() -> None:
    headers = request_fields("POST", "/", "", RAW)["headers"]
    assert header_values(headers, "x-tag", casefold=True) == ["a", "b"]
    assert header_value(headers, "CONTENT-TYPE", casefold=True) == "application/json"
    assert header_value(headers, "X-TAG", casefold=True) == "b"  # the last one wins
    assert header_value(headers, "X-Tag", casefold=False) == "a"
    assert header_value(headers, "x-tags", casefold=True) is None and header_value(None, "x", casefold=True) is None


def test_header_bytes_that_are_not_utf8_are_read_as_latin1() -> None:
    assert header_pairs([(b"X-Bin", b"caf\xe9"), (b"X-Utf", "café".encode())]) == [("X-Bin", "café"),
                                                                                    ("X-Utf", "café")]


def test_query_is_decoded_with_blanks_and_repeats() -> None:
    assert query_pairs("") == []
    assert query_pairs("q=a%20b&flag&empty=&q=c+d&n%C3%A4me=%E2%82%AC") == [
        ("q", "a b"), ("flag", ""), ("empty", ""), ("q", "c d"), ("näme", "€")]


def test_body_is_kept_byte_for_byte() -> None:
    body = bytes(range(256))
    assert envelope_from_request("PUT", "/", "", [], body, endpoint=None, remote=None).body == body


def test_decoded_content_encoding_is_dropped_but_an_unknown_one_is_kept() -> None:
    gz = request_fields("POST", "/", "", [(b"Content-Encoding", b"gzip"), (b"ce-id", b"1")])
    assert gz["headers"] == [("ce-id", "1")]
    other = request_fields("POST", "/", "", [(b"Content-Encoding", b"x-custom")])
    assert other["headers"] == [("Content-Encoding", "x-custom")]


def test_the_api_key_carrier_is_removed() -> None:
    in_header = ApiKey("X-Api-Key", "header", "s3cret")
    fields = request_fields("POST", "/", "k=1", [(b"x-api-key", b"s3cret"), (b"ce-id", b"1")], credential=in_header)
    assert fields["headers"] == [("ce-id", "1")] and fields["query"] == [("k", "1")]
    in_query = ApiKey("key", "query", "s3cret")
    fields = request_fields("POST", "/", "key=s3cret&k=1", [(b"ce-id", b"1")], credential=in_query)
    assert fields["query"] == [("k", "1")] and fields["headers"] == [("ce-id", "1")]


def test_outgoing_headers_drop_hop_by_hop_framing_and_credentials() -> None:
    envelope = Envelope("HTTP", {"headers": [
        ("Content-Type", "application/cloudevents+json"), ("Connection", "keep-alive, X-Hop"), ("X-Hop", "1"),
        ("Transfer-Encoding", "chunked"), ("Content-Length", "10"), ("Host", "in:1"), ("Authorization", "Bearer t"),
        ("ce-id", "1"), ("X-Tag", "a"), ("X-Tag", "b"), ("Keep-Alive", "timeout=5"), ("Cookie", "c=1")]}, b"")
    assert outgoing_headers(envelope) == [("Content-Type", "application/cloudevents+json"), ("ce-id", "1"),
                                          ("X-Tag", "a"), ("X-Tag", "b")]


def test_outgoing_headers_accept_binary_values_from_other_protocols() -> None:
    envelope = Envelope("KAFKA", {"headers": [("ce_id", b"1"), ("bin", b"\xff"), ("none", None)]}, b"")
    assert outgoing_headers(envelope) == [("ce_id", "1"), ("bin", "ÿ")]
    assert outgoing_headers(Envelope("NATS", {}, b"")) == []


@pytest.mark.parametrize(("path", "base", "allowed"), [
    ("/hooks", "/hooks", True), ("/hooks/a/b", "/hooks", True), ("/hooksx", "/hooks", False),
    ("/other", "/hooks", False), ("/anything", "", True), ("/", "", True)])
def test_paths_below_the_endpoint_are_accepted(path: str, base: str, allowed: bool) -> None:
    assert allowed_path(path, base) is allowed


def test_verdict_body_is_the_verdict_as_json() -> None:
    violation = Violation("attributes.type", Rule.VALUE, "a", b"b" * 300, "wrong type")
    verdict = Verdict(Outcome.NONCONFORMANT, "g", "m", (violation,))
    body = json.loads(verdict_body(Delivery(verdict, forwarded=True, rejected=True)))
    assert body["verdict"] == "nonconformant" and body["messagegroupid"] == "g" and body["messageid"] == "m"
    assert body["violations"][0]["rule"] == "value" and body["violations"][0]["actual"].endswith("...")
    assert json.loads(verdict_body(None)) == {}


def config(uri: str, options: dict[str, object] | None = None, **kw: object) -> EndpointConfig:
    return EndpointConfig("ep", "HTTP", (uri,), options or {}, **kw)  # type: ignore[arg-type]


def test_source_options_defaults_and_uri() -> None:
    options = source_options(config("http://127.0.0.1:8088/hooks/"))
    assert (options.host, options.port, options.base_path) == ("127.0.0.1", 8088, "/hooks")
    assert options.methods == {"POST", "PUT"} and options.max_body_size == 1024 * 1024
    assert options.api_key is None and options.ssl is None and options.respond == "delivery"
    assert source_options(config("http://:9000")).host == "127.0.0.1"
    assert source_options(config("http://0.0.0.0:9000")).host == "0.0.0.0"
    assert source_options(config("http://127.0.0.1/x", {"method": "PUT"})).methods == {"PUT"}
    assert source_options(config("http://127.0.0.1/x", {"methods": "post, patch"})).methods == {"POST", "PATCH"}
    with pytest.raises(AdapterError) as caught:  # https without a certificate to serve
        source_options(config("https://127.0.0.1:8443/x"))
    assert not caught.value.retriable and "cert_file" in str(caught.value)


def test_source_listen_override_and_api_key_from_settings_only() -> None:
    options = source_options(config("http://events.example.com/in", {"apikeyname": "X-Key"},
                                    extra={"listen": "127.0.0.1:7001", "apikey": "k"}))
    assert (options.host, options.port) == ("127.0.0.1", 7001)
    assert options.api_key == ApiKey("X-Key", "header", "k") and "k'" not in repr(options.api_key)
    with pytest.raises(AdapterError) as caught:
        source_options(config("http://127.0.0.1/in", {"apikeyname": "X-Key", "apikey": "from-a-document"}))
    assert not caught.value.retriable and "apikey" in str(caught.value)


@pytest.mark.parametrize("options", [{"maxbodysize": 0}, {"maxbodysize": "big"}, {"methods": []},
                                     {"respond": "later"}, {"apikeyname": "k", "apikeyin": "body"}])
def test_bad_source_options_are_not_retriable(options: dict[str, object]) -> None:
    with pytest.raises(AdapterError) as caught:
        source_options(config("http://127.0.0.1/in", options, extra={"apikey": "k"}))
    assert not caught.value.retriable


def test_sink_options() -> None:
    options = sink_options(config("http://127.0.0.1:9/out?a=1", {
        "method": "put", "headers": [{"name": "X-Static", "value": "1"}], "query": {"b": "2"},
        "apikeyname": "key", "apikeyin": "query"}, extra={"apikey": "k"}, username="u", password="p"))
    assert options.method == "PUT" and options.url == "http://127.0.0.1:9/out?a=1"
    assert options.headers == (("X-Static", "1"),) and options.query == (("b", "2"),)
    assert options.basic_auth == ("u", "p") and "'p'" not in repr(options)
    plain_query = sink_options(config("http://h/out", {"plainscheme": "query", "plainusernamefield": "user",
                                                       "plainpasswordfield": "pw"}, username="u", password="p"))
    assert plain_query.basic_auth is None and plain_query.query == (("user", "u"), ("pw", "p"))
    with pytest.raises(AdapterError):
        sink_options(config("kafka://127.0.0.1:9092"))
