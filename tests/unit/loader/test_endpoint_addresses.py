"""Endpoint addresses (validation rule 8): KAFKA's 1.0-rc4 `bootstrap.servers` entries beside the older
`uri` entries, read the same by every command that connects, served and written back in the rc4 form; an entry
without an address is a load error at its pointer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.cli import main
from gateway.loader import load_snapshot
from gateway.registry_api import registry_document
from gateway.routes.resolve import endpoint_config
from gateway.settings import Settings
from protocol_adapters.kafka.options import sink_options, source_options

RC4 = {"bootstrap.servers": ["127.0.0.1:19092", "kafka-2:9092"]}


def endpoints_doc(path: Path, endpoints: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"endpoints": endpoints}))
    return path


def kafka(entries: Any, usage: str = "consumer") -> dict[str, Any]:
    return {"usage": [usage], "protocol": "KAFKA", "protocoloptions": {"endpoints": entries, "topic": "t"}}


def test_rc4_bootstrap_servers_reach_the_kafka_client(tmp_path: Path) -> None:
    doc = endpoints_doc(tmp_path / "k.xreg.json", {"k.in": kafka([RC4]), "k.out": kafka([RC4], "producer")})
    snapshot = load_snapshot([str(doc)])
    assert not snapshot.errors
    config = endpoint_config(snapshot.registry, "k.in", Settings())
    assert config.uris == ("127.0.0.1:19092", "kafka-2:9092")
    assert source_options(config).connection.bootstrap_servers == ("127.0.0.1:19092", "kafka-2:9092")
    out = endpoint_config(snapshot.registry, "k.out", Settings())
    assert sink_options(out).connection.client_kwargs()["bootstrap_servers"] == ["127.0.0.1:19092", "kafka-2:9092"]


@pytest.mark.parametrize("entries, servers", [
    ([{"uri": "127.0.0.1:19092"}], ("127.0.0.1:19092",)),
    ([{"uri": "tcp://127.0.0.1:19092"}, {"uri": "kafka://b:9093"}], ("127.0.0.1:19092", "b:9093")),
    ([{"bootstrap.servers": "a:1,b:2"}], ("a:1", "b:2")),
    ([{"bootstrap.servers": ["a:1"]}, {"uri": "b:2"}], ("a:1", "b:2")),
])
def test_older_uri_entries_are_read_too(tmp_path: Path, entries: Any, servers: tuple[str, ...]) -> None:
    snapshot = load_snapshot([str(endpoints_doc(tmp_path / "k.xreg.json", {"k.in": kafka(entries)}))])
    assert not snapshot.errors
    config = endpoint_config(snapshot.registry, "k.in", Settings())
    assert source_options(config).connection.bootstrap_servers == servers


@pytest.mark.parametrize("entries, pointer", [
    ([{"bootstrap.servers": []}], "/endpoints/k.in/protocoloptions/endpoints/0"),
    ([RC4, {"servers": ["a:1"]}], "/endpoints/k.in/protocoloptions/endpoints/1"),
    ([{"uri": ""}], "/endpoints/k.in/protocoloptions/endpoints/0"),
    ("127.0.0.1:19092", "/endpoints/k.in/protocoloptions/endpoints"),
])
def test_an_entry_without_an_address_is_a_load_error_with_its_pointer(tmp_path: Path, entries: Any,
                                                                      pointer: str) -> None:
    doc = endpoints_doc(tmp_path / "k.xreg.json", {"k.in": kafka(entries)})
    errors = load_snapshot([str(doc)]).errors
    assert [(e.file, e.pointer) for e in errors] == [(str(doc), pointer)]
    assert "bootstrap.servers" in errors[0].message


@pytest.mark.parametrize("resolved", [False, True], ids=["export", "registry-api"])
def test_the_registry_document_serves_kafka_in_the_rc4_form(tmp_path: Path, resolved: bool) -> None:
    doc = endpoints_doc(tmp_path / "k.xreg.json", {
        "k.in": kafka([RC4]), "k.sasl": kafka([{"uri": "SASL_SSL://k:9093"}]),
        "n.in": {"usage": ["consumer"], "protocol": "NATS",
                 "protocoloptions": {"endpoints": [{"uri": "nats://127.0.0.1:4222"}], "subject": "s"}}})
    served = registry_document(load_snapshot([str(doc)]), resolved=resolved)["endpoints"]
    assert served["k.in"]["protocoloptions"]["endpoints"] == [RC4]
    # a scheme says the security protocol: kept as the older uri form, which still loads
    assert served["k.sasl"]["protocoloptions"]["endpoints"] == [{"uri": "SASL_SSL://k:9093"}]
    assert served["n.in"]["protocoloptions"]["endpoints"] == [{"uri": "nats://127.0.0.1:4222"}]
    again = endpoints_doc(tmp_path / "again.xreg.json", {"k.in": served["k.in"]})
    config = endpoint_config(load_snapshot([str(again)]).registry, "k.in", Settings())
    assert config.uris == ("127.0.0.1:19092", "kafka-2:9092")


def test_init_writes_the_rc4_form(tmp_path: Path) -> None:
    directory = tmp_path / "config"
    assert main(["init", str(directory), "kafka"]) == 0
    text = (directory / "kafka.xreg.yaml").read_text()
    assert "- bootstrap.servers: [127.0.0.1:9092]" in text and "- uri:" not in text
    snapshot = load_snapshot([str(directory)])
    assert not snapshot.errors
    assert snapshot.registry.endpoints["kafka.in"].attrs["endpoints"] == ["127.0.0.1:9092"]
