"""`xgate export`: the merged registry as one document, declared or `--resolved`, that loads on its own.

Declared keeps `basemessageuri` references (as xids), resolved materializes the chains and inlines the
payload schemas. Schema files beside the documents are inlined; a pointer into another file becomes an xid,
one that found nothing stays dangling. Exports of the spec's own samples validate against the spec's
document schemas (endpoint, message and schema `schemas/document-schema.json`).
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from gateway.check import judge_record
from gateway.cli import main
from gateway.compiler import compile_registry
from gateway.loader import load_snapshot
from gateway.registry_api import registry_document
from tests.conftest import ABSENT_HINT
from tests.unit.builders import ce_message, kafka_ce, write_doc
from tests.unit.loader.test_remote_fetch import GOOD, SCHEMA, WRONG, Server, _allow_local, server
from tests.unit.registry_api.registry import READING, write_registry
from tests.unit.registry_api.support import SPEC

CE = "CloudEvents/1.0"
AVRO = {"type": "record", "name": "Reading", "fields": [{"name": "v", "type": "double"}]}


def export(directory: Path, *flags: str) -> tuple[int, dict[str, Any], str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["export", "--config", str(directory), *flags])
    return code, json.loads(out.getvalue()) if out.getvalue() else {}, err.getvalue()


def test_declared_keeps_basemessage_references(tmp_path: Path) -> None:
    code, document, _ = export(write_registry(tmp_path))
    assert code == 0 and document["specversion"] == "1.0-rc4" and document["registryid"] == "xgate"
    cancelled = document["messagegroups"]["orders"]["messages"]["cancelled"]
    assert cancelled == {"messageid": "cancelled", "basemessageuri": "/messagegroups/orders/messages/placed",
                         "envelope": CE, "envelopemetadata": {"type": {"value": "com.example.order.cancelled"}}}
    placed = document["messagegroups"]["orders"]["messages"]["placed"]
    assert placed["dataschemauri"] == "/schemagroups/shop/schemas/reading" and "dataschema" not in placed
    reading = document["schemagroups"]["shop"]["schemas"]["reading"]
    assert reading["meta"] == {"defaultversionid": "2", "defaultversionsticky": False}
    assert reading["versions"]["2"] == {"schemaid": "reading", "versionid": "2", "format": "JsonSchema/draft-07",
                                        "isdefault": True, "schema": READING}


def test_resolved_materializes_chains_and_inlines_schemas(tmp_path: Path) -> None:
    code, document, _ = export(write_registry(tmp_path), "--resolved")
    assert code == 0
    cancelled = document["messagegroups"]["orders"]["messages"]["cancelled"]
    assert "basemessageuri" not in cancelled
    assert cancelled["envelopemetadata"]["source"] == {"type": "uritemplate", "value": "/shops/{shop}"}
    assert cancelled["dataschema"] == READING and cancelled["dataschemaformat"] == "JsonSchema/draft-07"
    ping = document["endpoints"]["orders.in"]["messages"]["ping"]
    assert ping["dataschema"].startswith('syntax = "proto3"')


def test_files_references_and_left_out_messages(tmp_path: Path) -> None:
    (tmp_path / "reading.avsc").write_text(json.dumps(AVRO))
    write_doc(tmp_path, "a.xreg.json", {"messagegroups": {"g": {"envelope": CE, "messages": {
        "base": {"envelope": CE, "envelopemetadata": {"type": {"value": "base"}},
                 "dataschemaformat": "Avro/1.11", "dataschemauri": "reading.avsc"},
        "broken": {"envelope": CE, "envelopemetadata": {"type": {"value": "broken"}},
                   "dataschemauri": "#/schemagroups/nope/schemas/x"}}}}})
    write_doc(tmp_path, "b.yaml", {"messagegroups": {"h": {"envelope": CE, "messages": {
        "derived": {"basemessage": "a.xreg.json#/messagegroups/g/messages/base",
                    "envelopemetadata": {"type": {"value": "derived"}}}}}},
        "endpoints": {"in": {"usage": ["consumer"], "protocol": "HTTP",
                             "messagegroups": ["a.xreg.json#/messagegroups/g", "#/messagegroups/h",
                                               "#/messagegroups/g"]}}})
    _, declared, errors = export(tmp_path)
    assert "dangling-ref" in errors  # the load problems are reported on stderr
    base = declared["messagegroups"]["g"]["messages"]["base"]
    assert base["dataschema"] == AVRO and "dataschemauri" not in base  # the file, inlined
    assert declared["messagegroups"]["h"]["messages"]["derived"]["basemessageuri"] == "/messagegroups/g/messages/base"
    assert declared["messagegroups"]["g"]["messages"]["broken"]["dataschemauri"] == \
        (tmp_path / "a.xreg.json").as_uri() + "#/schemagroups/nope/schemas/x"  # dangling where written: kept so
    refs = declared["endpoints"]["in"]["messagegroups"]
    assert refs == ["/messagegroups/g", "/messagegroups/h", (tmp_path / "b.yaml").as_uri() + "#/messagegroups/g"]
    _, resolved, _ = export(tmp_path, "--resolved")
    assert list(resolved["messagegroups"]["g"]["messages"]) == ["base"]  # `broken` was left out by the loader
    assert resolved["endpoints"]["in"]["messagegroups"] == ["/messagegroups/g", "/messagegroups/h"]
    assert resolved["messagegroups"]["h"]["messages"]["derived"]["dataschema"] == AVRO
    record = {"endpoint": "in", "protocol": "HTTP", "method": "POST", "path": "/",
              "headers": {"ce-specversion": "1.0", "ce-id": "1", "ce-source": "/s", "ce-type": "derived"},
              "body": "\u0000" * 8}  # an Avro double
    original = judge_record(compile_registry(load_snapshot([tmp_path]).registry), record).as_dict()
    assert original["verdict"] == "conformant" and original["messageid"] == "derived", original
    for form, document in (("declared", declared), ("resolved", resolved)):
        copy = tmp_path.parent / f"{tmp_path.name}-{form}" / "export.xreg.json"
        copy.parent.mkdir()
        copy.write_text(json.dumps(document))
        again = load_snapshot([copy])
        again_verdict = judge_record(compile_registry(again.registry), record).as_dict()
        assert again_verdict == original, (form, again_verdict, original)


def test_output_file_and_usage_errors(tmp_path: Path) -> None:
    target = tmp_path / "out" / "registry.json"
    target.parent.mkdir()
    code, printed, _ = export(write_registry(tmp_path / "config"), "--resolved", "--output", str(target))
    assert code == 0 and printed == {}
    assert json.loads(target.read_text())["messagegroups"]["orders"]["messages"]["placed"]["dataschema"] == READING
    code, _, errors = export(tmp_path / "missing")
    assert code == 2 and "not a directory" in errors


# -- the spec's document schemas ---------------------------------------------------------------------------------------

SCENARIOS = sorted((SPEC / "cloudevents" / "samples" / "scenarios").glob("*.json"))


@pytest.mark.parametrize("resolved", [False, True], ids=["declared", "resolved"])
@pytest.mark.parametrize("sample", SCENARIOS, ids=lambda p: p.name)
def test_exports_of_the_spec_samples_validate_against_the_document_schemas(sample: Path, resolved: bool) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    document = json.loads(json.dumps(registry_document(load_snapshot([sample]), resolved=resolved), default=str))
    for spec in ("endpoint", "message", "schema"):
        schema = json.loads((SPEC / spec / "schemas" / "document-schema.json").read_text("utf-8"))
        errors = [f"{list(e.absolute_path)}: {e.message[:200]}" for e in
                  jsonschema.Draft7Validator(schema).iter_errors(document)]
        assert not errors, f"{spec} document schema: {errors[:3]}"


def test_spec_samples_are_there() -> None:
    if not SPEC.is_dir():
        pytest.skip(f"conformance material not found ({ABSENT_HINT})")
    assert len(SCENARIOS) >= 9


# -- remote references ------------------------------------------------------------------------------------------------

def test_what_was_fetched_is_in_the_resolved_document(tmp_path: Path, server: Server) -> None:
    """A remote group (and the schema its message names relative to the remote document) are part of what
    xgate judges with: the resolved export carries them and needs no fetching; the declared one keeps the URLs."""
    url = f"{server.base}/registry.json"
    write_doc(tmp_path / "config", "registry.xreg.json", {
        "endpoints": {"ep": {"usage": ["consumer"], "protocol": "KAFKA",
                             "messagegroups": [f"{url}#/messagegroups/remote", "#/messagegroups/g"]}},
        "messagegroups": {"g": {"messages": {"derived": {**ce_message("d"),
                                                         "basemessage": f"{url}#/messagegroups/remote/messages/base"}}}}})
    snapshot = load_snapshot([tmp_path / "config"], fetcher=_allow_local())
    assert not snapshot.errors
    resolved = registry_document(snapshot, resolved=True)
    assert resolved["endpoints"]["ep"]["messagegroups"] == ["/messagegroups/remote", "/messagegroups/g"]
    remote = resolved["messagegroups"]["remote"]["messages"]
    assert remote["r"]["dataschema"] == SCHEMA and "dataschemauri" not in remote["r"]  # mutually exclusive
    declared = registry_document(snapshot, resolved=False)
    assert declared["endpoints"]["ep"]["messagegroups"] == [f"{url}#/messagegroups/remote", "/messagegroups/g"]
    assert declared["messagegroups"]["g"]["messages"]["derived"]["basemessageuri"] == \
        f"{url}#/messagegroups/remote/messages/base"
    records = [kafka_ce("r", body=GOOD), kafka_ce("r", body=WRONG), kafka_ce("d"),
               kafka_ce("d", extra_headers={"ce_source": "/plant/berlin"})]
    expected = [judge_record(compile_registry(snapshot.registry), r, "ep").as_dict() for r in records]
    for name, document, fetcher in (("resolved", resolved, None), ("declared", declared, _allow_local())):
        copy = tmp_path / name / "export.xreg.json"
        copy.parent.mkdir()
        copy.write_text(json.dumps(document))
        again = load_snapshot([copy], fetcher=fetcher)
        assert [judge_record(compile_registry(again.registry), r, "ep").as_dict() for r in records] == expected, name
