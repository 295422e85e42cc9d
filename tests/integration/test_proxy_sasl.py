"""SASL through `xgate proxy`: SaslHandshake and SaslAuthenticate pass to the broker as bytes, so each client
authenticates to the cluster itself with its own credentials. Tested mechanisms: PLAIN and SCRAM-SHA-256 on a
private Apache Kafka's SASL_PLAINTEXT listener (credentials made through its PLAINTEXT listener), with aiokafka,
Apache Kafka's Java console producer (SCRAM-SHA-256) and librdkafka (PLAIN)."""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError
from confluent_kafka import KafkaError as LibrdkafkaError
from confluent_kafka import Producer

from gateway.recorded import envelope_from_record
from protocol_adapters.kafka.mapping import outgoing_record
from tests.conftest import free_port
from tests.integration import traffic as it_traffic
from tests.integration.proxy_harness import (
    ProxyProcess,
    config,
    console_line,
    create_topics,
    java_tools,
    proxy_port,
    read_all,
    run_tool,
)
from tests.kafka_broker import PrivateKafka

pytestmark = pytest.mark.integration

USER, PASSWORD = "xgate-client", "proxy-secret"


@dataclass(frozen=True)
class SaslKafka:
    plaintext: str  # for the test's own reads and the SCRAM credentials
    sasl: str       # SASL_PLAINTEXT: PLAIN and SCRAM-SHA-256


def _sasl_broker() -> tuple[PrivateKafka, int]:
    """A private Kafka with a SASL_PLAINTEXT listener beside its plaintext one (not started), and that port."""
    port, sasl_port = free_port(), free_port()
    broker = PrivateKafka(port=port)
    listeners = f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"
    (broker.state / "extra.properties").write_text("\n".join([
        f"listeners={listeners},CONTROLLER://127.0.0.1:{broker.controller_port}",
        f"advertised.listeners={listeners}",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
        ("listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain."
         f'PlainLoginModule required user_{USER}="{PASSWORD}";'),
        ("listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram."
         "ScramLoginModule required;"),
        "",
    ]))
    broker.env["XGATE_KAFKA_PROPERTIES"] = str(broker.state / "extra.properties")
    return broker, sasl_port


@pytest.fixture(scope="module")
def sasl_kafka() -> Iterator[SaslKafka]:
    # its three ports are chosen free and bound by the broker seconds later, while the run's other workers start
    # brokers and gateways of their own: once, in a fresh clone's `make test`, the broker could not open its
    # listener. A broker that does not start is tried again on new ports; one that never does fails the tests.
    for attempt in range(3):
        broker, sasl_port = _sasl_broker()
        try:
            broker.start()
            break
        except subprocess.CalledProcessError:
            broker.__exit__(None, None, None)
            if attempt == 2:
                raise
    try:
        _scram_user(broker.bootstrap)
        yield SaslKafka(broker.bootstrap, f"127.0.0.1:{sasl_port}")
    finally:
        broker.__exit__(None, None, None)


def _scram_user(bootstrap: str) -> None:
    from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialUpsertion)

    admin = AdminClient({"bootstrap.servers": bootstrap})
    upsert = UserScramCredentialUpsertion(USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                                          PASSWORD.encode())
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(30)


def conformant(count: int) -> list[tuple[bytes, list[tuple[str, bytes]]]]:
    records = [r for r in it_traffic.mixed("KAFKA", count * 7) if it_traffic.kind_of_record(r).startswith("ok-")]
    return [(out.value, list(out.headers or [])) for out in
            (outgoing_record(envelope_from_record(r)) for r in records[:count])]


async def produce(port: int, topic: str, mechanism: str, password: str, records: list[tuple[bytes, list[tuple[
        str, bytes]]]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", security_protocol="SASL_PLAINTEXT",
                                sasl_mechanism=mechanism, sasl_plain_username=USER, sasl_plain_password=password,
                                acks="all", request_timeout_ms=10000)
    try:
        await producer.start()
        for value, headers in records:
            await producer.send_and_wait(topic, value, headers=headers)
    finally:
        await producer.stop()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_sasl_clients_authenticate_to_the_cluster_through_the_proxy(sasl_kafka: SaslKafka, tmp_path: Path,
                                                                    mechanism: str) -> None:
    run = uuid.uuid4().hex[:8]
    topics = {name: f"proxy-sasl-{run}-{name}" for name in ("in", "valid", "dlq", "unknown")}
    create_topics(*topics.values(), bootstrap=sasl_kafka.plaintext)
    port = proxy_port()
    proxy = ProxyProcess(config(tmp_path, topics, port, upstream=sasl_kafka.sasl), port, wait=False)
    try:
        records = conformant(5)
        _ready(proxy)
        asyncio.run(produce(port, topics["in"], mechanism, PASSWORD, records))
        landed = asyncio.run(read_all(sasl_kafka.plaintext, topics["in"], len(records)))
        assert sorted(m.value for m in landed) == sorted(value for value, _ in records)
        # the broker, not the proxy, refuses a wrong password
        with pytest.raises(KafkaError):
            asyncio.run(produce(port, topics["in"], mechanism, "wrong", records[:1]))
    finally:
        proxy.stop()


def _ready(proxy: ProxyProcess) -> None:
    deadline = time.monotonic() + 60
    while proxy.scrape("/readyz")[0] != 200:  # its probe (ApiVersions) needs no credentials
        assert time.monotonic() < deadline, proxy.output()
        time.sleep(0.2)


def test_java_and_librdkafka_clients_authenticate_through_the_proxy_and_hear_its_refusal(
        sasl_kafka: SaslKafka, tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:8]
    topics = {name: f"proxy-sasl-{run}-{name}" for name in ("in", "valid", "dlq", "unknown")}
    create_topics(*topics.values(), bootstrap=sasl_kafka.plaintext)
    port = proxy_port()
    proxy = ProxyProcess(config(tmp_path, topics, port, upstream=sasl_kafka.sasl), port, wait=False)
    good, bad = (it_traffic.message("KAFKA", n, kind) for n, kind in ((2001, "ok-structured"),
                                                                      (2003, "bad-structured")))
    try:
        _ready(proxy)
        # Apache Kafka's console producer with SCRAM-SHA-256: the conformant line lands, the next is refused and
        # the tool stops on it (--sync: one record a batch)
        client = tmp_path / "scram.properties"
        client.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                          "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                          f'username="{USER}" password="{PASSWORD}";\nacks=all\n')
        produced = run_tool(java_tools(tmp_path), "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server",
                            f"127.0.0.1:{port}", "--topic", topics["in"], "--sync", "--property", "parse.headers=true",
                            "--producer.config", str(client), stdin=console_line(good) + "\n" + console_line(bad) + "\n")
        assert produced.returncode == 1, produced
        assert produced.stderr.splitlines()[0].startswith(
            "java.util.concurrent.ExecutionException: org.apache.kafka.common.InvalidRecordException: "
            "xgate: nonconformant (in/reading): "), produced.stderr
        # librdkafka with PLAIN: the same two records, each its own batch
        outcomes: list[LibrdkafkaError | None] = []
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SASL_PLAINTEXT",
                             "sasl.mechanism": "PLAIN", "sasl.username": USER, "sasl.password": PASSWORD,
                             "acks": "all"})
        try:
            for record in (good, bad):
                out = outgoing_record(envelope_from_record(record))
                producer.produce(topics["in"], out.value, headers=out.headers,
                                 on_delivery=lambda error, _message: outcomes.append(error))
                assert producer.flush(30) == 0
        finally:
            producer.close()
        assert outcomes[0] is None and outcomes[1] is not None, outcomes
        assert outcomes[1].code() == LibrdkafkaError.INVALID_RECORD, outcomes
        # nothing refused reached the topic, nothing conformant was lost
        landed = asyncio.run(read_all(sasl_kafka.plaintext, topics["in"], 2))
        value = bytes(outgoing_record(envelope_from_record(good)).value)
        assert [m.value for m in landed] == [value, value]
    finally:
        proxy.stop()
