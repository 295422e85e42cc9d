"""Confluent-compatible schema registries and the Confluent wire format, through `xgate check` and through
`xgate run` Kafka to Kafka on the local Apache Kafka.

No Confluent Schema Registry, Karapace or Apicurio can be installed here, so the registry is a stand-in:
an aiohttp server on 127.0.0.1 answering the documented endpoints (`GET /subjects/{s}/versions`,
`GET /subjects/{s}/versions/{v}`, `GET /schemas/ids/{id}`) from tests/unit/schemaregistry/standin.py,
with basic auth. Payloads are real wire-format payloads: fastavro's and the protobuf runtime's encodings
behind the header and message indexes Confluent's serializers write.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from gateway.recorded import envelope_from_record
from tests.conftest import free_port
from tests.integration.harness import REPO, Collector, Gateway, World, publish, start_broker
from tests.integration.profiles import PROFILES
from tests.unit.builders import b64
from tests.unit.schemaregistry.standin import (
    CONTENT_TYPE,
    ORDERS_PROTO,
    OTHER,
    READING_V1,
    READING_V2,
    StandInRegistry,
    avro_payload,
    encode,
    example_registry,
    header,
    json_payload,
    proto_classes,
    protobuf_payload,
)

pytestmark = pytest.mark.integration

PASSWORD_VARIABLE = "XGATE_TEST_REGISTRY_PASSWORD"


@dataclass
class RegistryServer:
    url: str
    registry: StandInRegistry
    ids: dict[str, int]


@pytest.fixture(scope="module")
def registry_server() -> Iterator[RegistryServer]:
    """The stand-in registry behind aiohttp, on its own event loop in a thread."""
    registry, ids = example_registry(username="xgate", password="registry-secret")
    port = free_port()
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    async def handle(request: web.Request) -> web.Response:
        status, body = registry.answer(request.raw_path, request.headers.get("Authorization"))
        return web.json_response(body, status=status, content_type=CONTENT_TYPE)

    def serve() -> None:
        asyncio.set_event_loop(loop)
        app = web.Application()
        app.router.add_get("/{tail:.*}", handle)
        runner = web.AppRunner(app)
        loop.run_until_complete(runner.setup())
        loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", port).start())
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(10)
    try:
        yield RegistryServer(f"http://127.0.0.1:{port}", registry, ids)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


@pytest.fixture(autouse=True)
def registry_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PASSWORD_VARIABLE, "registry-secret")  # gateway.yaml reads it as ${...}


MESSAGES = {
    "reading": "confluent://main/subjects/readings-value/versions/latest",    # every version: ids 1 and 2
    "reading-v1": "confluent://main/subjects/readings-value/versions/1",
    "order": "confluent://main/subjects/orders-value/versions/1",               # any message type of the file
    "refund": "confluent://main/subjects/orders-value/versions/1:com.example.Refund",
    "event": "{url}/subjects/events-value/versions/latest",                    # the registry's own URL
}


def write_config(directory: Path, server: RegistryServer, kafka: dict[str, dict[str, Any]] | None = None) -> None:
    """registry.json with endpoint `in` (and, for `xgate run`, Kafka destinations) and gateway.yaml."""
    def endpoint(name: str, usage: str) -> dict[str, Any]:
        options = dict((kafka or {}).get(name, {}))
        uris = options.pop("uris", [])
        return {"usage": [usage], "protocol": "KAFKA", "envelope": "CloudEvents/1.0",
                "protocoloptions": {"endpoints": [{"uri": u} for u in uris], **options}}
    messages = {mid: {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": mid, "required": True}},
                      "dataschemauri": uri.format(url=server.url)} for mid, uri in MESSAGES.items()}
    source = {**endpoint("in", "consumer"), "messagegroups": ["#/messagegroups/g"]}
    endpoints = {"in": source}
    if kafka is not None:
        endpoints.update({n: endpoint(n, "producer") for n in ("valid", "dlq", "unknown")})
    document = {"specversion": "1.0-rc4", "endpoints": endpoints, "messagegroups": {"g": {"messages": messages}}}
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "registry.json").write_text(json.dumps(document, indent=1))
    settings: dict[str, Any] = {
        "remote": {"allow": ["127.0.0.1"]},
        "schemaregistries": {"main": {"url": server.url, "username": "xgate",
                                      "password": "${" + PASSWORD_VARIABLE + "}",
                                      "subjects": ["readings-value", "other-value", "orders-value", "events-value"]}}}
    if kafka is not None:
        settings["routes"] = [{"source": "in", "conformant": "valid", "nonconformant": "dlq", "unmatched": "unknown"}]
        settings["endpoints"] = PROFILES["KAFKA"].settings
    (directory / "gateway.yaml").write_text(yaml.safe_dump(settings))


@dataclass
class Case:
    name: str
    message: str                 # the definition's CloudEvents type
    body: bytes
    verdict: str
    rule: str | None = None
    path: str = "dataschema:"
    says: str = ""               # in the violation's message


def cases(ids: dict[str, int], tag: str = "") -> list[Case]:
    classes = proto_classes(ORDERS_PROTO)
    refund = classes["com.example.Refund"](order_id=f"o-{tag}", cents=250)
    refund.lines.add(sku="s-1")
    v1 = {"device": f"d-{tag}", "temperature": 21.5}
    v2 = {**v1, "unit": "C"}
    return [
        Case("avro-latest-version", "reading", avro_payload(ids["reading_v2"], READING_V2, v2), "conformant"),
        Case("avro-older-version", "reading", avro_payload(ids["reading_v1"], READING_V1, v1), "conformant"),
        Case("protobuf-first-message", "order",
             protobuf_payload(ids["orders"], classes["com.example.Order"](id=f"o-{tag}", quantity=2), [0]),
             "conformant"),
        Case("protobuf-second-message", "refund", protobuf_payload(ids["orders"], refund, [1]), "conformant"),
        Case("protobuf-nested-message", "order",
             protobuf_payload(ids["orders"], classes["com.example.Refund.Line"](sku=f"s-{tag}"), [1, 0]),
             "conformant"),
        Case("json", "event", json_payload(ids["event"], {"kind": f"k-{tag}", "count": 3}), "conformant"),
        Case("avro-id-not-allowed", "reading-v1", avro_payload(ids["reading_v2"], READING_V2, v2), "nonconformant",
             "schema", says=f"schema id {ids['reading_v2']} (subject readings-value version 2) of registry 'main' "
                            "is not one this definition allows"),
        Case("avro-id-of-another-subject", "reading", avro_payload(ids["other"], OTHER, {"x": 7}), "nonconformant",
             "schema", says="(subject other-value version 1) of registry 'main' is not one this definition allows"),
        Case("unknown-id", "reading", avro_payload(4000, READING_V1, v1), "nonconformant", "schema",
             says="schema id 4000 is unknown"),
        Case("no-magic-byte", "reading", avro_payload(ids["reading_v1"], READING_V1, v1)[5:], "nonconformant",
             "decode", says="not the Confluent wire-format magic byte 0x00"),
        Case("truncated-header", "reading", header(ids["reading_v1"])[:3], "nonconformant", "decode",
             says="shorter than the 5-byte Confluent wire-format header"),
        Case("avro-not-its-schema", "reading", avro_payload(ids["reading_v2"], READING_V1, v1), "nonconformant",
             "decode", says="payload is not Avro binary of the schema"),
        Case("protobuf-not-its-schema", "refund", encode(ids["orders"], b"\xff\xff\xff", [1]), "nonconformant",
             "decode", says="payload does not parse as com.example.Refund"),
        Case("protobuf-other-message", "refund",
             protobuf_payload(ids["orders"], classes["com.example.Order"](id=f"o-{tag}"), [0]), "nonconformant",
             "schema", says="message indexes [0] select com.example.Order; the definition names com.example.Refund"),
        Case("json-not-its-schema", "event", json_payload(ids["event"], {"kind": f"k-{tag}", "count": -1}),
             "nonconformant", "schema", path="dataschema:/count"),
    ]


def record(case: Case, tag: str = "") -> dict[str, Any]:
    return {"endpoint": "in", "protocol": "KAFKA", "topic": "readings", "key": f"{case.name}{tag}",
            "headers": {"ce_specversion": "1.0", "ce_id": f"{case.name}{tag}", "ce_source": "/producers/1",
                        "ce_type": case.message},
            "body_base64": b64(case.body)}


def assert_verdict(case: Case, verdict: dict[str, Any]) -> None:
    assert verdict["verdict"] == case.verdict, (case.name, verdict)
    assert verdict["messageid"] == case.message, (case.name, verdict)
    if case.rule is None:
        assert verdict["violations"] == [], (case.name, verdict)
        return
    assert [(v["path"], v["rule"]) for v in verdict["violations"]] == [(case.path, case.rule)], (case.name, verdict)
    assert case.says in verdict["violations"][0]["message"], (case.name, verdict)


def test_xgate_check_judges_wire_format_payloads(tmp_path: Path, registry_server: RegistryServer) -> None:
    config = tmp_path / "config"
    write_config(config, registry_server)
    every = cases(registry_server.ids)
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_text("".join(json.dumps(record(case)) + "\n" for case in every))
    asked = len(registry_server.registry.requests)
    done = subprocess.run([sys.executable, "-m", "gateway.cli", "check", "--registry", str(config), "--strict",
                           str(traffic)], capture_output=True, text=True, cwd=REPO, timeout=120, check=False)
    assert done.returncode == 1, done.stderr  # some are nonconformant; --strict: no load error
    assert done.stderr == ""
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(verdicts) == len(every)
    for case, verdict in zip(every, verdicts, strict=True):
        assert_verdict(case, verdict)
    # fetched at load, with credentials; nothing was asked for the ids seen in the traffic
    requests = registry_server.registry.requests[asked:]
    assert "/subjects/readings-value/versions" in requests and "/subjects/orders-value/versions/1" in requests
    assert not any(path.startswith("/schemas/ids/") for path in requests)


def test_wrong_credentials_leave_the_definitions_out(tmp_path: Path, registry_server: RegistryServer,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PASSWORD_VARIABLE, "wrong")
    config = tmp_path / "config"
    write_config(config, registry_server)
    done = subprocess.run([sys.executable, "-m", "gateway.cli", "lint", str(config)], capture_output=True, text=True,
                          cwd=REPO, timeout=120, check=False)
    assert done.returncode == 1
    assert "HTTP status 401" in done.stdout + done.stderr
    assert "registry-secret" not in done.stdout + done.stderr


def test_xgate_run_routes_wire_format_payloads_kafka_to_kafka(tmp_path: Path, registry_server: RegistryServer) -> None:
    start_broker("kafka")
    run = uuid.uuid4().hex[:8]
    config = tmp_path / "config"
    write_config(config, registry_server, PROFILES["KAFKA"].options(run))
    world = World(PROFILES["KAFKA"], config, run)
    every = cases(registry_server.ids, tag=run)
    records = {f"{case.name}{run}": record(case, run) for case in every}
    expected = {key: ("valid" if case.verdict == "conformant" else "dlq")
                for key, case in zip(records, every, strict=True)}
    asked = len(registry_server.registry.requests)

    async def main() -> tuple[dict[str, list[Any]], int, str]:
        async with Collector(world) as collector:
            gateway = Gateway(config)
            try:
                await publish(world, list(records.values()))
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    if sum(len(collector.envelopes[d]) for d in ("valid", "dlq", "unknown")) >= len(records):
                        break
                    await asyncio.sleep(0.2)
                await asyncio.sleep(1)  # anything more (a duplicate) would arrive now
            finally:
                code = gateway.stop()
            return {d: list(collector.envelopes[d]) for d in ("valid", "dlq", "unknown")}, code, gateway.output()

    arrived, code, log = asyncio.run(main())
    assert code == 0, log
    assert "error" not in log.lower().replace("xgate-error", ""), log
    where: dict[str, str] = {}
    for destination, envelopes in arrived.items():
        for envelope in envelopes:
            key = envelope.fields["key"].decode()
            assert key not in where, f"{key} arrived twice"
            where[key] = destination
            original = envelope_from_record(records[key])
            assert envelope.body == original.body  # forwarded and dead-lettered byte for byte
    assert where == expected, log
    # the registry was asked at startup only, never for an id seen in traffic
    requests = registry_server.registry.requests[asked:]
    assert requests and all(path.startswith("/subjects/") for path in requests), requests
    for envelope in arrived["dlq"]:
        case = every[list(records).index(envelope.fields["key"].decode())]
        headers = {name: value.decode() for name, value in envelope.fields["headers"]}
        assert headers["xgate-verdict"] == "nonconformant"
        assert headers["xgate-messageid"] == case.message
        violations = json.loads(headers["xgate-violations"])
        assert [(v["path"], v["rule"]) for v in violations] == [(case.path, case.rule)], case.name
        assert case.says in violations[0]["message"], case.name
