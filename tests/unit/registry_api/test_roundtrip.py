"""Round trips: `xgate export` (declared and `--resolved`) and `GET /registry?inline` give documents that load
again on their own and judge the conformance corpus's messages exactly as the registry they came from.

The recorded-message cases are those of tests/conformance: the CloudEvents binding examples against
tests/documents/cloudevents/bindings.xreg.json (good and broken, every protocol and mode, batches), the
cloudevents/sdk-java JSON fixtures against sdk-java-fixtures.xreg.json, and the JSON-Schema-Test-Suite
(one endpoint per schema, one message per test). The xRegistry corpus documents have no recorded messages:
each is exported on its own and judged with probes made from its own definitions (their declared
CloudEvents attribute values and protocol fields, placeholders filled in, a JSON and a non-JSON body, in
every mode of the protocol), so identification, templates and payload schemas all take part.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import tests.conformance.test_cloudevents_bindings as bindings
from gateway.check import judge_record
from gateway.compiler import Ruleset, compile_registry
from gateway.loader import Snapshot, load_snapshot
from gateway.registry_api import RegistryView, registry_document
from gateway.registry_api.handlers import answer
from tests.conformance.cloudevents_wire import PROTOCOL_MODES, encode
from tests.conformance.corpus_outcomes import corpus_documents, relative
from tests.conftest import ABSENT_HINT, SHARED_CONFORMANCE
from tests.unit.registry_api.support import BASE

if not SHARED_CONFORMANCE.is_dir():
    pytest.skip(f"conformance material not found at {SHARED_CONFORMANCE} ({ABSENT_HINT})",
                allow_module_level=True)

FORMS = ("declared", "resolved", "api")
SUITE = SHARED_CONFORMANCE / "jsonschema-suite" / "tests"
DRAFTS = {"draft7": "JSONSchema/draft-07", "draft2020-12": "JSONSchema/draft/2020-12"}
FIXTURES = SHARED_CONFORMANCE / "cloudevents" / "sdk-java-json-fixtures"
MODES = {protocol: [m for p, m in PROTOCOL_MODES if p == protocol] for protocol, _ in PROTOCOL_MODES}


def exported(snapshot: Snapshot, form: str, folder: Path) -> Snapshot:
    """Write the registry of `snapshot` in `form` to a folder of its own and load that document alone."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{form}.xreg.json"
    if form == "api":
        from multidict import MultiDict
        body = answer(RegistryView(snapshot).state, BASE, "", MultiDict([("inline", "*")])).body
        assert isinstance(body, bytes)
        target.write_bytes(body)
    else:
        target.write_text(json.dumps(registry_document(snapshot, resolved=form == "resolved"), default=str), "utf-8")
    return load_snapshot([target])


def compiled(snapshot: Snapshot) -> Ruleset:
    return compile_registry(snapshot.registry, snapshot.digest)


ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def verdicts(ruleset: Ruleset, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Verdicts as JSON values; an object's address in a message (fastavro's `<_io.BytesIO object at 0x..>`)
    is not part of what is compared."""
    return [json.loads(ADDRESS.sub(" at 0x", json.dumps(judge_record(ruleset, record).as_dict(), default=str)))
            for record in records]


def assert_same_verdicts(snapshot: Snapshot, records: list[dict[str, Any]], form: str, folder: Path,
                         name: str) -> None:
    again = exported(snapshot, form, folder)
    before, after = verdicts(compiled(snapshot), records), verdicts(compiled(again), records)
    differing = [(record, b, a) for record, b, a in zip(records, before, after) if a != b]
    assert not differing, f"{name} ({form}): {len(differing)} of {len(records)} verdicts differ, first: " \
                          f"{json.dumps(differing[0], default=str)[:1500]}"


# -- the recorded-message cases of tests/conformance ---------------------------------------------------------------

def binding_records() -> list[dict[str, Any]]:
    records = [encode(p, m, bindings.EVENT, bindings.APP_DATA) for p, m in PROTOCOL_MODES]
    records += [bindings._broken(variant, p, m) for variant in bindings.BROKEN for p, m in PROTOCOL_MODES]
    records.append(bindings._batch({**bindings.EVENT, "data": bindings.APP_DATA},
                                   {k: v for k, v in bindings.CORE.items() if k != "id"}))
    return records


@pytest.mark.parametrize("form", FORMS)
def test_cloudevents_binding_cases(form: str, tmp_path: Path) -> None:
    snapshot = load_snapshot([bindings.BINDINGS_DOC])
    assert_same_verdicts(snapshot, binding_records(), form, tmp_path, "bindings.xreg.json")


@pytest.mark.parametrize("form", FORMS)
def test_sdk_java_fixture_cases(form: str, tmp_path: Path) -> None:
    paths = sorted(FIXTURES.glob("v*/*.json"))
    assert paths, f"no fixtures under {FIXTURES}"
    records = [bindings._fixture_record(path, "fixtures.permissive") for path in paths]
    assert_same_verdicts(load_snapshot([bindings.FIXTURES_DOC]), records, form, tmp_path, "sdk-java fixtures")


@cache
def suite_case(draft: str, folder: str) -> tuple[Path, tuple[str, ...]]:
    """All suite files of a draft as one registry (an endpoint per schema) and one message per test."""
    endpoints: dict[str, Any] = {}
    records = []
    for path in sorted((SUITE / draft).glob("*.json")):
        for g, group in enumerate(json.loads(path.read_text("utf-8"))):
            if "localhost:1234" in json.dumps(group["schema"]):
                continue  # remote $ref: fetching is off
            eid = f"{path.stem}-{g}"
            endpoints[eid] = {"usage": ["subscriber"], "protocol": "HTTP", "messages": {"payload": {
                "protocol": "HTTP", "dataschemaformat": DRAFTS[draft], "dataschema": group["schema"]}}}
            records += [json.dumps({"endpoint": eid, "protocol": "HTTP", "method": "POST", "path": "/",
                                    "headers": {"Content-Type": "application/json"},
                                    "body": json.dumps(test["data"])}) for test in group["tests"]]
    registry = Path(folder) / f"{draft}.xreg.json"
    registry.write_text(json.dumps({"endpoints": endpoints}), "utf-8")
    return registry, tuple(records)


@pytest.fixture(scope="module")
def suite_folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("suite"))


@pytest.mark.parametrize("draft", DRAFTS)
@pytest.mark.parametrize("form", FORMS)
def test_json_schema_suite_cases(draft: str, form: str, suite_folder: str, tmp_path: Path) -> None:
    registry, lines = suite_case(draft, suite_folder)
    records = [json.loads(line) for line in lines]
    assert len(records) > 500
    assert_same_verdicts(load_snapshot([registry]), records, form, tmp_path, registry.name)


# -- the xRegistry corpus documents, with probes made from their own definitions ------------------------------------

PLACEHOLDER = re.compile(r"\{[^{}]*\}")
ADDRESS_FIELDS = ("topic", "topic_name", "subject", "path")


def _filled(value: Any) -> Any:
    if isinstance(value, dict) and "value" in value:
        value = value["value"]
    return PLACEHOLDER.sub("x1", value) if isinstance(value, str) else value


def probes(snapshot: Snapshot) -> list[dict[str, Any]]:
    """Messages shaped after each definition of the registry, on each endpoint that has it."""
    registry = snapshot.registry
    places: list[tuple[str | None, dict[str, Any], Any]] = [
        (eid, e.attrs, m) for eid, e in registry.endpoints.items() for m in e.messages]
    if not registry.endpoints:
        places = [(None, {}, m) for m in registry.messages.values()]
    records: list[dict[str, Any]] = []
    for endpoint, endpoint_attrs, definition in places:
        attrs = definition.attrs
        protocol = attrs.get("protocol") or endpoint_attrs.get("protocol") or "HTTP"
        attributes: dict[str, Any] = {}
        if attrs.get("envelope"):
            attributes = {"specversion": "1.0", "id": "1", "source": "/probe", "type": "probe"}
            for name, spec in (attrs.get("envelopemetadata") or {}).items():
                if isinstance(spec, dict) and "value" in spec:
                    attributes[name] = _filled(spec["value"])
        options = attrs.get("protocoloptions") or {}
        for mode in MODES.get(protocol, ["binary"]):
            for body in ({"temperature": 21.5, "id": "x1"}, None):
                text = "not json" if body is None and mode == "binary" else None
                record = encode(protocol, mode, attributes, body, data_text=text)
                for field in ADDRESS_FIELDS:
                    if field in options and field in record:
                        record[field] = _filled(options[field])
                if endpoint is None:
                    del record["endpoint"]
                else:
                    record["endpoint"] = endpoint
                records.append(record)
    return records


@pytest.mark.parametrize("form", FORMS)
def test_xregistry_corpus_documents(form: str, tmp_path: Path) -> None:
    documents = corpus_documents()
    assert len(documents) > 200
    judged = 0
    for index, document in enumerate(documents):
        snapshot = load_snapshot([document])
        records = probes(snapshot)
        if not records and not snapshot.registry.schemagroups:
            continue
        assert_same_verdicts(snapshot, records, form, tmp_path / str(index), relative(document))
        judged += len(records)
    assert judged > 1000, judged


# -- directories: documents merged across files ----------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[3]
CORPUS = SHARED_CONFORMANCE / "xregistry"
DIRECTORIES = {"config/demo": REPO / "config" / "demo",
               "split-files": CORPUS / "codegen" / "samples" / "split-files",
               "message-definitions": CORPUS / "codegen" / "samples" / "message-definitions",
               "scenarios": CORPUS / "spec" / "cloudevents" / "samples" / "scenarios",
               "real-time-sources": CORPUS / "real-time-sources"}


@pytest.mark.parametrize("name", DIRECTORIES)
@pytest.mark.parametrize("form", FORMS)
def test_directories_merge_and_round_trip(name: str, form: str, tmp_path: Path) -> None:
    snapshot = load_snapshot([DIRECTORIES[name]])
    records = probes(snapshot)
    assert len(records) > 10
    assert_same_verdicts(snapshot, records, form, tmp_path, name)
