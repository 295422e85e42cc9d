"""The Kafka adapter over TLS and SASL/PLAIN against a private Apache Kafka whose listeners the test configures.

The broker (tests/kafka_broker.py) gets three more listeners beside its plain one: SSL (server certificate
from a throwaway CA), SASL_SSL with PLAIN users, and SSL that requires a client certificate. A sink and a
source move records through each; the wrong CA, the wrong password and a missing client certificate are
refused with a non-retriable error rather than retried for ever.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from gateway.envelope import Envelope
from gateway.errors import AdapterError
from protocol_adapters import kafka
from protocol_adapters.base import EndpointConfig, TlsSettings
from tests.certificates import Pki, make_pki
from tests.conftest import free_port
from tests.contract.suite import publish, run, take
from tests.kafka_broker import PrivateKafka

pytestmark = pytest.mark.integration

USER, PASSWORD = "xgate", "xgate-secret"


@dataclass(frozen=True)
class SecureKafka:
    pki: Pki
    ssl: int        # server-authenticated TLS
    sasl_ssl: int   # TLS + SASL/PLAIN
    mtls: int       # TLS requiring a client certificate


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureKafka]:
    folder = tmp_path_factory.mktemp("kafka-tls")
    pki = make_pki(folder / "pki")
    keystore = folder / "server-keystore.pem"  # Kafka's PEM keystore: the key, then the certificate
    keystore.write_text(pki.server_key.read_text() + pki.server_cert.read_text())
    port, ssl_port, sasl_port, mtls_port = free_port(), free_port(), free_port(), free_port()
    controller = "CONTROLLER://127.0.0.1:{c}"
    listeners = f"PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:{ssl_port},SASL_SSL://127.0.0.1:{sasl_port}," \
                f"MTLS://127.0.0.1:{mtls_port}"
    broker = PrivateKafka(port=port)
    properties = "\n".join([
        f"listeners={listeners},{controller.format(c=broker.controller_port)}",
        f"advertised.listeners={listeners}",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,MTLS:SSL",
        "ssl.keystore.type=PEM",
        f"ssl.keystore.location={keystore}",
        "ssl.truststore.type=PEM",
        f"ssl.truststore.location={pki.ca}",
        "listener.name.mtls.ssl.client.auth=required",
        "sasl.enabled.mechanisms=PLAIN",
        ("listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
         f'required user_{USER}="{PASSWORD}";'),
        "",
    ])
    extra = broker.state / "extra.properties"
    extra.write_text(properties)
    broker.env["XGATE_KAFKA_PROPERTIES"] = str(extra)
    with broker:
        yield SecureKafka(pki, ssl_port, sasl_port, mtls_port)


def endpoint(name: str, uri: str, **settings: Any) -> EndpointConfig:
    extra = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500, "commit_interval_ms": 50,
             "connect_timeout_ms": 15000, "request_timeout_ms": 10000, **settings.pop("extra", {})}
    return EndpointConfig(name, "KAFKA", (uri,), {"topic": f"secure-{name}", "consumergroup": f"secure-{name}"},
                          extra=extra, **settings)


def roundtrip(config: EndpointConfig, count: int = 20) -> list[bytes]:
    sent = [Envelope("KAFKA", {"key": f"k{i}".encode(), "headers": [("n", str(i).encode())]}, f"secure-{i}".encode())
            for i in range(count)]

    async def scenario() -> list[bytes]:
        await publish(_Harness, config, sent)
        async with kafka.create_source(config) as source:
            got = await take(source, count)
            for envelope in got:
                await source.ack(envelope)
        return sorted(e.body for e in got)
    return run(scenario, timeout=90)


class _Harness:
    create_sink = staticmethod(kafka.create_sink)


def refusal(config: EndpointConfig) -> AdapterError:
    async def scenario() -> None:
        async with kafka.create_sink(config) as sink:
            await sink.send(Envelope("KAFKA", {}, b"never"))
    with pytest.raises(AdapterError) as caught:
        run(scenario, timeout=60)
    return caught.value


def test_ssl_listener_with_the_ca(secure: SecureKafka) -> None:
    config = endpoint("ssl", f"SSL://127.0.0.1:{secure.ssl}", tls=TlsSettings(ca_file=str(secure.pki.ca)))
    assert roundtrip(config) == sorted(f"secure-{i}".encode() for i in range(20))


def test_sasl_plain_over_ssl(secure: SecureKafka) -> None:
    config = endpoint("sasl", f"SASL_SSL://127.0.0.1:{secure.sasl_ssl}", username=USER, password=PASSWORD,
                      tls=TlsSettings(ca_file=str(secure.pki.ca)), extra={"sasl_mechanism": "PLAIN"})
    assert roundtrip(config) == sorted(f"secure-{i}".encode() for i in range(20))


def test_mutual_tls_with_a_client_certificate(secure: SecureKafka) -> None:
    tls = TlsSettings(ca_file=str(secure.pki.ca), cert_file=str(secure.pki.client_cert),
                      key_file=str(secure.pki.client_key))
    config = endpoint("mtls", f"SSL://127.0.0.1:{secure.mtls}", tls=tls)
    assert roundtrip(config) == sorted(f"secure-{i}".encode() for i in range(20))


def test_a_wrong_password_is_refused_and_not_retried(secure: SecureKafka) -> None:
    config = endpoint("badpass", f"SASL_SSL://127.0.0.1:{secure.sasl_ssl}", username=USER, password="wrong",
                      tls=TlsSettings(ca_file=str(secure.pki.ca)), extra={"sasl_mechanism": "PLAIN"})
    error = refusal(config)
    assert not error.retriable and "Invalid username or password" in str(error), error


def test_an_untrusted_broker_certificate_is_refused(secure: SecureKafka) -> None:
    config = endpoint("rogue", f"SSL://127.0.0.1:{secure.ssl}", tls=TlsSettings(ca_file=str(secure.pki.rogue_ca)))
    error = refusal(config)
    assert not error.retriable and "certificate was not accepted" in str(error), error
