"""`xgate proxy` under bad input and in operation: a hostile or broken frame closes its own connection with
one log line while the proxy and every other connection go on; a corrupt batch is refused; `/readyz` follows
the upstream cluster; an upstream restart loses nothing acknowledged; a reload applies without dropping
connections; TLS on the listener; SIGTERM exits 0."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import struct
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from gateway.proxy.schemas import PRODUCE_REQUEST, PRODUCE_RESPONSE
from gateway.recorded import envelope_from_record
from protocol_adapters.kafka.mapping import outgoing_record
from tests.certificates import Pki, make_pki
from tests.integration import traffic as it_traffic
from tests.integration.harness import start_broker
from tests.integration.proxy_harness import (BROKER, ProxyProcess, config, create_topics, fresh, produce_each,
                                             proxy_port, read_all)
from tests.kafka_broker import PrivateKafka

pytestmark = pytest.mark.integration


@pytest.fixture()
def running(tmp_path: Path) -> Iterator[tuple[ProxyProcess, dict[str, str]]]:
    start_broker("kafka")
    topics = fresh(uuid.uuid4().hex[:8])
    port = proxy_port()
    proxy = ProxyProcess(config(tmp_path, topics, port, frame_timeout=2), port)
    try:
        yield proxy, topics
    finally:
        proxy.stop()


def closed_by_peer(sock: socket.socket, timeout: float = 10) -> bool:
    """The proxy closed this connection (end of stream or reset) within `timeout`."""
    sock.settimeout(timeout)
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def conformant(count: int) -> list[tuple[bytes, list[tuple[str, bytes]]]]:
    """Conformant records as (value, headers): a structured event needs its content-type header, a binary one
    its `ce_` headers."""
    records = [r for r in it_traffic.mixed("KAFKA", count * 7) if it_traffic.kind_of_record(r).startswith("ok-")]
    outgoing = [outgoing_record(envelope_from_record(r)) for r in records[:count]]
    return [(out.value, list(out.headers or [])) for out in outgoing]


def still_serves(proxy: ProxyProcess, topic: str) -> None:
    """A fresh client produces a conformant record through the proxy."""
    record = next(r for r in it_traffic.mixed("KAFKA", 7) if it_traffic.kind_of_record(r) == "ok-structured")
    assert asyncio.run(produce_each(f"127.0.0.1:{proxy.port}", topic, [record])) == [None], proxy.output()


@pytest.mark.parametrize(("case", "payload", "logged"), [
    ("a frame that claims 2 GB", struct.pack(">i", 2**31 - 1) + b"\x00" * 64, "a frame of 2147483647 bytes"),
    ("a negative size", struct.pack(">i", -5), "a frame of -5 bytes"),
    ("a frame cut short", struct.pack(">i", 100) + b"\x00\x03\x00\x01", "not complete after 2 s"),
    ("a header that does not read", struct.pack(">i", 4) + b"\x00\x03\x00\x01", "a request header that does not read"),
    ("a produce request that does not read", struct.pack(">ihhih", 12, 0, 7, 9, -1) + b"\xff\xff",
     "a produce request that does not read"),
    ("a produce version the proxy does not read", struct.pack(">ihhih", 11, 0, 12, 9, -1) + b"\x00",
     "outside the versions the proxy reads"),
])
def test_bad_frames_close_their_own_connection_only(running: tuple[ProxyProcess, dict[str, str]], case: str,
                                                    payload: bytes, logged: str) -> None:
    proxy, topics = running
    bystander = socket.create_connection(("127.0.0.1", proxy.port))  # another client's open connection
    with socket.create_connection(("127.0.0.1", proxy.port)) as sock:
        sock.sendall(payload)
        assert closed_by_peer(sock), f"{case}: the proxy kept the connection open"
    deadline = time.monotonic() + 5
    while logged not in proxy.output():
        assert time.monotonic() < deadline, f"{case}: no log line saying {logged!r}: {proxy.output()}"
        time.sleep(0.1)
    assert proxy.output().count("closing the connection") == 1, proxy.output()
    still_serves(proxy, topics["in"])
    # the bystander still talks to the broker through the proxy: an ApiVersions v0 round trip
    bystander.sendall(struct.pack(">ihhih", 10, 18, 0, 77, -1))
    bystander.settimeout(10)
    size = struct.unpack(">i", bystander.recv(4, socket.MSG_WAITALL))[0]
    assert size > 0 and struct.unpack(">i", bystander.recv(4, socket.MSG_WAITALL))[0] == 77
    bystander.close()


def test_an_unknown_api_key_passes_to_the_broker_and_the_proxy_goes_on(
        running: tuple[ProxyProcess, dict[str, str]]) -> None:
    proxy, topics = running
    with socket.create_connection(("127.0.0.1", proxy.port)) as sock:
        sock.sendall(struct.pack(">ihhih", 10, 9999, 0, 1, -1))
        assert closed_by_peer(sock), "Kafka closes a connection that sends an API key it does not know"
    still_serves(proxy, topics["in"])


def produce_v3(port: int, topic: str, records: bytes) -> dict[str, object]:
    """One Produce v3 request on a raw connection; the decoded response."""
    body = PRODUCE_REQUEST.encode({"TransactionalId": None, "Acks": -1, "TimeoutMs": 5000, "TopicData": [
        {"Name": topic, "PartitionData": [{"Index": 0, "Records": records}]}]}, 3)
    header = struct.pack(">hhih", 0, 3, 42, 4) + b"test"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        frame = header + body
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        answer = sock.recv(size, socket.MSG_WAITALL)
    assert struct.unpack(">i", answer[:4])[0] == 42
    return PRODUCE_RESPONSE.decode(answer[4:], 3)[0]


def test_a_batch_whose_crc_does_not_match_is_refused_and_not_written(
        running: tuple[ProxyProcess, dict[str, str]]) -> None:
    proxy, topics = running
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    value, headers = conformant(1)[0]
    builder.append(0, timestamp=int(time.time() * 1000), key=None, value=value, headers=headers)
    batch = bytearray(builder.build())
    batch[-3] ^= 0x20  # a byte of the record's value: the CRC no longer matches
    answer = produce_v3(proxy.port, topics["in"], bytes(batch))
    partition = answer["Responses"][0]["PartitionResponses"][0]  # type: ignore[index]
    assert partition["ErrorCode"] == 2, answer  # CORRUPT_MESSAGE
    assert "CRC" in proxy.output()
    assert asyncio.run(read_all(BROKER, topics["in"], 0, timeout=2)) == []


def test_readyz_follows_the_upstream_cluster(tmp_path: Path) -> None:
    with PrivateKafka() as broker:
        topics = {name: f"proxy-ready-{name}" for name in ("in", "valid", "dlq", "unknown")}
        port = proxy_port()
        proxy = ProxyProcess(config(tmp_path, topics, port, upstream=broker.bootstrap), port)
        try:
            assert proxy.scrape("/readyz")[0] == 200
            broker.stop()
            deadline = time.monotonic() + 30
            while proxy.scrape("/readyz")[0] != 503:
                assert time.monotonic() < deadline, "readyz still up 30 s after the cluster stopped"
                time.sleep(0.5)
            assert 'xgate_adapter_up{endpoint="in",role="proxy"} 0.0' in proxy.scrape("/metrics")[1]
            broker.start()
            while proxy.scrape("/readyz")[0] != 200:
                assert time.monotonic() < deadline + 60, "readyz still down 60 s after the cluster came back"
                time.sleep(0.5)
        finally:
            proxy.stop()


def test_an_upstream_restart_loses_nothing_acknowledged(tmp_path: Path) -> None:
    records = conformant(60)
    with PrivateKafka() as broker:
        topics = {name: f"proxy-restart-{name}" for name in ("in", "valid", "dlq", "unknown")}
        create_topics(*topics.values(), bootstrap=broker.bootstrap)
        port = proxy_port()
        proxy = ProxyProcess(config(tmp_path, topics, port, upstream=broker.bootstrap), port)
        acknowledged: list[bytes] = []

        async def produce() -> None:
            async with AIOKafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", acks="all",
                                        enable_idempotence=True, request_timeout_ms=10000) as producer:
                for index, (value, headers) in enumerate(records):
                    if index == len(records) // 2:
                        await asyncio.to_thread(broker.restart)
                    for _ in range(30):  # the client retries through the proxy until the broker is back
                        try:
                            await producer.send_and_wait(topics["in"], value, headers=headers)
                            acknowledged.append(value)
                            break
                        except KafkaError:
                            await asyncio.sleep(1)
        try:
            asyncio.run(produce())
            assert len(acknowledged) == len(records), proxy.output()
            landed = [m.value for m in asyncio.run(read_all(broker.bootstrap, topics["in"], len(acknowledged)))]
            assert set(landed) == set(acknowledged)
        finally:
            proxy.stop()


def test_a_reload_applies_new_rules_on_open_connections(running: tuple[ProxyProcess, dict[str, str]],
                                                        tmp_path: Path) -> None:
    proxy, topics = running
    value, headers = conformant(1)[0]

    async def scenario() -> list[bool]:
        accepted = []
        async with AIOKafkaProducer(bootstrap_servers=f"127.0.0.1:{proxy.port}", acks="all") as producer:
            await producer.send_and_wait(topics["in"], value, headers=headers)
            accepted.append(True)
            # the schema now wants v >= 10**9: the same record no longer conforms
            document = tmp_path / "config" / "it.xreg.json"
            data = json.loads(document.read_text())
            data["endpoints"]["in"]["messages"]["reading"]["dataschema"]["properties"]["v"]["minimum"] = 10**9
            document.write_text(json.dumps(data))
            deadline = time.monotonic() + 30
            while "reload (file change) applied" not in proxy.output():
                assert time.monotonic() < deadline, proxy.output()
                await asyncio.sleep(0.2)
            try:
                await producer.send_and_wait(topics["in"], value, headers=headers)
                accepted.append(True)
            except KafkaError:
                accepted.append(False)
        return accepted

    assert asyncio.run(scenario()) == [True, False]
    assert "closing the connection" not in proxy.output()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def test_tls_on_the_listener(tmp_path: Path, pki: Pki) -> None:
    import ssl

    start_broker("kafka")
    topics = fresh(uuid.uuid4().hex[:8])
    port = proxy_port()
    folder = config(tmp_path, topics, port, tls={"cert": str(pki.server_cert), "key": str(pki.server_key)})
    proxy = ProxyProcess(folder, port, wait=False)
    context = ssl.create_default_context(cafile=str(pki.ca))
    try:
        async def scenario() -> None:
            deadline = time.monotonic() + 60
            while True:
                producer = AIOKafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", security_protocol="SSL",
                                            ssl_context=context, acks="all")
                try:
                    await producer.start()
                    break
                except KafkaError:
                    await producer.stop()
                    assert time.monotonic() < deadline, proxy.output()
                    await asyncio.sleep(0.5)
            value, headers = conformant(1)[0]
            try:
                await producer.send_and_wait(topics["in"], value, headers=headers)
            finally:
                await producer.stop()
        asyncio.run(scenario())
        # a plaintext client gets no Kafka answer (a TLS alert, a close or nothing)
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(struct.pack(">ihhih", 10, 18, 0, 1, -1))
            sock.settimeout(5)
            try:
                reply = sock.recv(64)
            except (ConnectionResetError, TimeoutError):
                reply = b""
            assert reply[4:8] != struct.pack(">i", 1), reply
    finally:
        proxy.stop()
    assert len(asyncio.run(read_all(BROKER, topics["in"], 1))) == 1


def test_sigterm_exits_zero_with_a_summary(running: tuple[ProxyProcess, dict[str, str]]) -> None:
    proxy, topics = running
    still_serves(proxy, topics["in"])
    proxy.process.send_signal(signal.SIGTERM)
    assert proxy.process.wait(30) == 0
    assert "record(s) judged" in proxy.output()
