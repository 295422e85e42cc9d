"""File references stay inside the directories being loaded: `..`, absolute paths, `file:` URIs and symbolic
links that lead out are refused with a diagnostic naming the document, the pointer and the reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.errors import Diagnostic
from tests.unit.builders import Loaded, ce_message, kafka_ce, load_files, ok, registry, shape

SCHEMA = {"type": "object", "required": ["temperature"], "properties": {"temperature": {"type": "number"}}}
POINTER = "/messagegroups/g/messages/m/dataschemauri"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """config/ is loaded; outside/ beside it holds files a document must not reach."""
    config, outside = tmp_path / "config", tmp_path / "outside"
    config.mkdir()
    outside.mkdir()
    (outside / "secret.json").write_text(json.dumps(SCHEMA))
    (outside / "registry.json").write_text(json.dumps({"messagegroups": {"x": {"messages": {"m": ce_message("x")}}},
                                                       "schemagroups": {"sg": {"schemas": {"s": {
                                                           "format": "JsonSchema/draft-07", "schema": SCHEMA}}}}}))
    return config, outside


def _document(dataschemauri: str) -> dict[str, Any]:
    return registry("KAFKA", {"m": ce_message("t", dataschemaformat="JsonSchema/draft-07", dataschemauri=dataschemauri),
                              "other": ce_message("u")})


def _refusal(loaded: Loaded) -> Diagnostic:
    [refused] = [d for d in loaded.errors if d.pointer == POINTER]
    return refused


@pytest.mark.parametrize(("reference", "target"), [
    ("../outside/secret.json", "secret.json"),
    ("../../../../../../..{outside}/secret.json", "secret.json"),
    ("file://{outside}/secret.json", "secret.json"),
    ("../outside/registry.json#/schemagroups/sg/schemas/s", "registry.json"),
])
def test_a_reference_out_of_the_directory_is_refused(layout: tuple[Path, Path], reference: str, target: str) -> None:
    config, outside = layout
    text = reference.format(outside=outside)
    loaded = load_files(config, {"registry.xreg.json": _document(text)})
    refused = _refusal(loaded)
    assert refused.file == str(config / "registry.xreg.json")
    assert f"{outside / target} is outside the directories being loaded ({config})" in refused.message
    assert repr(text) in refused.message
    # the message with the refused link is left out; the rest of the document works
    assert shape(loaded.judge(kafka_ce("u"), "ep")) == ok("g", "other")
    assert [v.rule.value for v in loaded.judge(kafka_ce("t", body='{"temperature": 1}'), "ep").violations] == \
        ["no-match"]


def test_an_absolute_path_without_file_scheme_is_an_xid_and_reads_no_file(layout: tuple[Path, Path]) -> None:
    config, outside = layout
    loaded = load_files(config, {"registry.xreg.json": _document(f"{outside}/secret.json")})
    assert "does not point into schemagroups" in _refusal(loaded).message


def test_a_symbolic_link_out_of_the_directory_is_refused(layout: tuple[Path, Path]) -> None:
    config, outside = layout
    (config / "schemas").mkdir()
    (config / "schemas" / "reading.json").symlink_to(outside / "secret.json")
    loaded = load_files(config, {"registry.xreg.json": _document("schemas/reading.json")})
    message = _refusal(loaded).message
    assert f"{config / 'schemas' / 'reading.json'} is a symbolic link (or lies under one) to " \
           f"{outside / 'secret.json'}, outside the directories being loaded" in message


def test_a_linked_directory_out_of_the_tree_is_refused(layout: tuple[Path, Path]) -> None:
    config, outside = layout
    (config / "shared").symlink_to(outside, target_is_directory=True)
    loaded = load_files(config, {"registry.xreg.json": _document("shared/registry.json#/schemagroups/sg/schemas/s")})
    assert "is a symbolic link (or lies under one)" in _refusal(loaded).message


def test_a_document_linked_in_from_outside_is_not_loaded(layout: tuple[Path, Path]) -> None:
    config, outside = layout
    (config / "borrowed.xreg.json").symlink_to(outside / "registry.json")
    loaded = load_files(config, {"registry.xreg.json": registry("KAFKA", {"m": ce_message("t")})})
    [refused] = [d for d in loaded.errors if d.code == "link-outside"]
    assert refused.file == str(config / "borrowed.xreg.json")
    assert f"symbolic link to {outside / 'registry.json'}, outside the directory being loaded" in refused.message
    assert "x" not in loaded.snapshot.registry.messagegroups


def test_links_and_references_inside_the_directory_still_work(layout: tuple[Path, Path]) -> None:
    # the layout Kubernetes mounts a ConfigMap with: every file a link into a hidden, versioned folder
    config, _ = layout
    (config / "..2024_01").mkdir()
    (config / "..2024_01" / "reading.json").write_text(json.dumps(SCHEMA))
    (config / "reading.json").symlink_to(config / "..2024_01" / "reading.json")
    loaded = load_files(config, {"registry.xreg.json": _document("reading.json")})
    assert loaded.errors == []
    assert shape(loaded.judge(kafka_ce("t", body='{"temperature": 1}'), "ep")) == ok("g", "m")


def test_a_message_group_in_a_file_outside_is_refused(layout: tuple[Path, Path]) -> None:
    config, _ = layout
    endpoint = {"endpoints": {"ep": {"protocol": "KAFKA", "messagegroups": ["../outside/registry.json#/messagegroups/x"]}}}
    loaded = load_files(config, {"endpoint.json": endpoint})
    [refused] = [d for d in loaded.errors if d.pointer == "/endpoints/ep/messagegroups/0"]
    assert "is outside the directories being loaded" in refused.message


def test_a_json_schema_ref_to_a_local_file_is_not_followed(layout: tuple[Path, Path]) -> None:
    # the compiler's retriever refuses every $ref outside the schema itself, file: included
    config, outside = layout
    schema = {"$ref": f"file://{outside}/secret.json"}
    doc = registry("KAFKA", {"m": ce_message("t", dataschemaformat="JsonSchema/draft-07", dataschema=schema)})
    loaded = load_files(config, {"registry.xreg.json": doc})
    [error] = [d for d in loaded.errors if d.pointer.startswith("/messagegroups/g/messages/m")]
    assert "unresolvable reference" in error.message and f"file://{outside}/secret.json" in error.message


def test_a_protobuf_import_cannot_climb_out_of_the_compiler_sandbox(layout: tuple[Path, Path]) -> None:
    # protoc sees only the schema text in a private temporary directory and the bundled well-known types
    config, _ = layout
    proto = 'syntax = "proto3"; import "../../../../../etc/passwd"; message A { int32 x = 1; }'
    doc = registry("KAFKA", {"m": ce_message("t", dataschemaformat="Protobuf/3", dataschema=proto)})
    loaded = load_files(config, {"registry.xreg.json": doc})
    [error] = [d for d in loaded.errors if d.pointer.startswith("/messagegroups/g/messages/m")]
    assert '".." are not allowed in the virtual path' in error.message
