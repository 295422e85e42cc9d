"""Credentials and TLS as every adapter reads them, offline: no uri carries a secret, TLS files are named when
they fail, a refused handshake is told apart from a dropped connection, and Kafka's SASL settings map onto
aiokafka's (tests/contract/test_kafka_security.py runs them against a real Kafka listener)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from gateway.errors import AdapterError
from protocol_adapters.amqp.errors import condition_error
from protocol_adapters.amqp.options import build_options as amqp_options
from protocol_adapters.base import EndpointConfig, TlsSettings
from protocol_adapters.http.options import sink_options as http_sink_options
from protocol_adapters.kafka.options import sink_options as kafka_sink_options
from protocol_adapters.mqtt.errors import connect_error
from protocol_adapters.mqtt.options import build_options as mqtt_options
from protocol_adapters.nats.options import build_options as nats_options
from protocol_adapters.tls import client_context, tls_refusal
from tests.certificates import make_pki


def _fail(message: str) -> AdapterError:
    return AdapterError(f"endpoint 'e': {message}")


@pytest.mark.parametrize(("protocol", "uri", "build"), [
    ("MQTT/5.0", "mqtts://eve:hunter2@broker:8883", mqtt_options),
    ("NATS", "nats://eve:hunter2@broker:4222", nats_options),
    ("KAFKA", "SASL_SSL://eve:hunter2@broker:9093", kafka_sink_options),
    ("HTTP", "https://eve:hunter2@hooks.example.com/in", http_sink_options),
    ("AMQP/1.0", "amqps://eve:hunter2@broker/queue/q", amqp_options),
])
def test_a_uri_with_credentials_is_refused_without_echoing_them(protocol: str, uri: str, build: object) -> None:
    config = EndpointConfig("e", protocol, (uri,), {"topic": "t", "subject": "s", "topic_name": "t"})
    with pytest.raises(AdapterError) as caught:
        build(config)  # type: ignore[operator]
    text = str(caught.value)
    assert not caught.value.retriable and "carries credentials" in text and "password_file" in text
    assert "hunter2" not in text and "eve" not in text and "***@" in text


def test_client_context_verifies_by_default_and_trusts_only_the_given_ca(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    context = client_context(TlsSettings(ca_file=str(pki.ca)), _fail)
    assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname
    assert [dict(c["subject"][0])["commonName"] for c in context.get_ca_certs()] == ["xgate-test-ca"]
    mutual = client_context(TlsSettings(str(pki.ca), str(pki.client_cert), str(pki.client_key)), _fail)
    assert mutual.verify_mode is ssl.CERT_REQUIRED
    unverified = client_context(TlsSettings(verify=False), _fail)
    assert unverified.verify_mode is ssl.CERT_NONE and not unverified.check_hostname


def test_client_context_names_the_file_that_failed(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    not_pem = tmp_path / "notes.txt"
    not_pem.write_text("not a certificate")
    cases = [
        (TlsSettings(ca_file=str(tmp_path / "missing-ca.pem")), "tls.ca '", "missing-ca.pem"),
        (TlsSettings(ca_file=str(not_pem)), "tls.ca '", "notes.txt"),
        (TlsSettings(cert_file=str(pki.client_cert), key_file=str(pki.server_key)), "tls.cert '", "server.key"),
        (TlsSettings(key_file=str(pki.client_key)), "tls.key is set without tls.cert", ""),
    ]
    for settings, setting, path in cases:
        with pytest.raises(AdapterError) as caught:
            client_context(settings, _fail)
        assert not caught.value.retriable and setting in str(caught.value) and path in str(caught.value)


def test_a_refused_handshake_is_told_apart_from_a_dropped_connection() -> None:
    untrusted = ssl.SSLCertVerificationError(1, "certificate verify failed")
    untrusted.verify_message = "unable to get local issuer certificate"
    assert "unable to get local issuer certificate" in (tls_refusal(untrusted) or "")
    wrapped = RuntimeError("connect failed")
    wrapped.__context__ = untrusted  # how aiomqtt re-raises (`from None` keeps the context)
    assert tls_refusal(wrapped) is not None
    assert tls_refusal(ssl.SSLEOFError(8, "EOF occurred in violation of protocol")) is None
    assert tls_refusal(ConnectionResetError()) is None and tls_refusal(None) is None


def test_mqtt_and_amqp_tls_refusals_are_not_retriable() -> None:
    alert = connect_error(RuntimeError("Operation timed out"), "broker:8883", "TLSV13_ALERT_CERTIFICATE_REQUIRED")
    assert not alert.retriable and "CERTIFICATE_REQUIRED" in str(alert) and "tls.cert" in str(alert)
    assert connect_error(RuntimeError("Operation timed out"), "broker:8883").retriable
    refused = condition_error("sink", "amqp:connection:framing-error",
                              "SSL Failure: error:0A000086:SSL routines::certificate verify failed")
    assert not refused.retriable and "tls.ca" in str(refused)
    assert condition_error("sink", "amqp:connection:framing-error", "connection aborted").retriable


class TestKafkaSasl:
    def config(self, uri: str, **extra: object) -> EndpointConfig:
        tls = extra.pop("tls", None)
        return EndpointConfig("k", "KAFKA", (uri,), {"topic": "t"}, username="svc", password="kafka-secret",
                              tls=tls, extra=extra)  # type: ignore[arg-type]

    def test_scram_over_plaintext_and_tls(self) -> None:
        plain = kafka_sink_options(self.config("tcp://h:9092", sasl_mechanism="SCRAM-SHA-512")).connection
        kwargs = plain.client_kwargs()
        assert (kwargs["security_protocol"], kwargs["sasl_mechanism"]) == ("SASL_PLAINTEXT", "SCRAM-SHA-512")
        assert (kwargs["sasl_plain_username"], kwargs["sasl_plain_password"]) == ("svc", "kafka-secret")
        assert "ssl_context" not in kwargs and "kafka-secret" not in repr(plain)
        secured = kafka_sink_options(self.config("tcp://h:9093", sasl_mechanism="scram-sha-256",
                                                 tls=TlsSettings(verify=False))).connection.client_kwargs()
        assert (secured["security_protocol"], secured["sasl_mechanism"]) == ("SASL_SSL", "SCRAM-SHA-256")
        assert isinstance(secured["ssl_context"], ssl.SSLContext)

    def test_a_sasl_uri_defaults_to_plain_and_tls_alone_is_ssl(self) -> None:
        kwargs = kafka_sink_options(self.config("SASL_SSL://h:9093")).connection.client_kwargs()
        assert (kwargs["security_protocol"], kwargs["sasl_mechanism"]) == ("SASL_SSL", "PLAIN")
        tls_only = EndpointConfig("k", "KAFKA", ("h:9093",), {"topic": "t"}, tls=TlsSettings(verify=False))
        kwargs = kafka_sink_options(tls_only).connection.client_kwargs()
        assert kwargs["security_protocol"] == "SSL" and "sasl_mechanism" not in kwargs

    def test_an_unknown_mechanism_and_an_unreadable_ca_are_refused(self) -> None:
        with pytest.raises(AdapterError) as caught:
            kafka_sink_options(self.config("tcp://h:9092", sasl_mechanism="GSSAPI"))
        assert not caught.value.retriable and "sasl_mechanism" in str(caught.value)
        options = kafka_sink_options(self.config("SSL://h:9093", tls=TlsSettings(ca_file="/nonexistent/ca.pem")))
        with pytest.raises(AdapterError) as caught:
            options.connection.client_kwargs()
        assert not caught.value.retriable and "tls.ca '/nonexistent/ca.pem'" in str(caught.value)


def test_secrets_stay_out_of_the_options_repr() -> None:
    for build, protocol, uri in ((mqtt_options, "MQTT/5.0", "mqtt://h"), (nats_options, "NATS", "nats://h")):
        config = EndpointConfig("e", protocol, (uri,), {"topic": "t", "subject": "s"}, username="u",
                                password="the-password", extra={"token": "the-token"})
        text = repr(build(config)) + repr(config)
        assert "the-password" not in text and "the-token" not in text
