"""The proxy's hand-written field tables (gateway/proxy/schemas.py) against Apache Kafka's own message schemas.

Kafka ships the JSON its protocol code is generated from inside kafka-clients.jar (common/message/*.json). A
field out of order, a wrong type, a nullable version off by one: any of them makes the proxy misread every frame
of that version, so each readable version is compared field by field. Tagged fields are left out on both sides:
the codec keeps them as raw bytes and the tables do not list them.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

import pytest

from gateway.proxy import schemas
from gateway.proxy.wire import Field, Message, Versions

MESSAGES: dict[str, tuple[int, Message]] = {
    "ProduceRequest": (schemas.PRODUCE, schemas.PRODUCE_REQUEST),
    "ProduceResponse": (schemas.PRODUCE, schemas.PRODUCE_RESPONSE),
    "MetadataResponse": (schemas.METADATA, schemas.METADATA_RESPONSE),
    "FindCoordinatorResponse": (schemas.FIND_COORDINATOR, schemas.FIND_COORDINATOR_RESPONSE),
    "DescribeClusterResponse": (schemas.DESCRIBE_CLUSTER, schemas.DESCRIBE_CLUSTER_RESPONSE),
    "ApiVersionsResponse": (schemas.API_VERSIONS, schemas.API_VERSIONS_RESPONSE),
}
CASES = [(name, version) for name, (api, _) in MESSAGES.items()
         for version in range(schemas.READABLE[api][0], schemas.READABLE[api][1] + 1)]
REQUESTS = {schemas.PRODUCE: "ProduceRequest", schemas.METADATA: "MetadataRequest",
            schemas.FIND_COORDINATOR: "FindCoordinatorRequest", schemas.DESCRIBE_CLUSTER: "DescribeClusterRequest",
            schemas.API_VERSIONS: "ApiVersionsRequest"}

# one field at one version: (name, type or its struct's fields, nullable at that version)
Shape = list[tuple[str, Any, bool]]


def client_jar() -> Path:
    """Where deploy/brokers/kafka.sh puts Kafka's jars, by the same defaults."""
    version = os.environ.get("XGATE_KAFKA_VERSION", "4.1.1")
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    libs = Path(os.environ.get("XGATE_KAFKA_CACHE") or f"{cache}/xgate/kafka-{version}") / "libs"
    return libs / f"kafka-clients-{version}.jar"


@pytest.fixture(scope="module")
def kafka() -> dict[str, dict[str, Any]]:
    """Kafka's message schemas by name, read from the client jar."""
    jar = client_jar()
    if not jar.is_file():
        pytest.skip(f"Kafka's client jar is not at {jar}; `bash deploy/brokers/kafka.sh start` downloads it")
    found = {}
    with zipfile.ZipFile(jar) as archive:
        for name in [*MESSAGES, *REQUESTS.values()]:
            text = archive.read(f"common/message/{name}.json").decode("utf-8")
            found[name] = json.loads("\n".join(line for line in text.splitlines()
                                               if not line.lstrip().startswith("//")))
    return found


def kafka_shape(fields: list[dict[str, Any]], version: int) -> Shape:
    shape = []
    for spec in fields:
        tagged = Versions.parse(spec.get("taggedVersions", "none"))
        if version not in Versions.parse(spec["versions"]) or version in tagged:
            continue
        kind: Any = spec["type"]
        if "fields" in spec:
            assert kind.startswith("[]"), f"{spec['name']}: a struct that is not an array, which the codec lacks"
            kind = kafka_shape(spec["fields"], version)
        shape.append((spec["name"], kind, version in Versions.parse(spec.get("nullableVersions", "none"))))
    return shape


def our_shape(fields: tuple[Field, ...], version: int) -> Shape:
    return [(spec.name, spec.type if isinstance(spec.type, str) else our_shape(spec.type, version),
             version in spec.nullable)
            for spec in fields if version in spec.versions]


@pytest.mark.parametrize(("name", "version"), CASES)
def test_fields_match_kafka_at_each_readable_version(kafka: dict[str, dict[str, Any]], name: str,
                                                     version: int) -> None:
    assert our_shape(MESSAGES[name][1].fields, version) == kafka_shape(kafka[name]["fields"], version)


@pytest.mark.parametrize("name", MESSAGES)
def test_the_first_flexible_version_is_kafkas(kafka: dict[str, dict[str, Any]], name: str) -> None:
    assert Versions(MESSAGES[name][1].flexible, None) == Versions.parse(kafka[name]["flexibleVersions"])


@pytest.mark.parametrize("name", MESSAGES)
def test_the_message_is_named_as_kafka_names_it(kafka: dict[str, dict[str, Any]], name: str) -> None:
    assert MESSAGES[name][1].name == kafka[name]["name"]


@pytest.mark.parametrize("name", MESSAGES)
def test_readable_versions_are_versions_kafka_defines(kafka: dict[str, dict[str, Any]], name: str) -> None:
    low, high = schemas.READABLE[MESSAGES[name][0]]
    valid = Versions.parse(kafka[name]["validVersions"])
    assert low in valid and high in valid


@pytest.mark.parametrize("api", sorted(REQUESTS))
def test_request_headers_turn_flexible_with_kafkas_request(kafka: dict[str, dict[str, Any]], api: int) -> None:
    """The request header is version 2 exactly where the request is flexible; a wrong first version misplaces
    the body by the header's tag byte."""
    assert Versions(schemas.FLEXIBLE[api], None) == Versions.parse(kafka[REQUESTS[api]]["flexibleVersions"])
