"""Every document of ../shared/conformance/xregistry goes through `xgate lint` without a crash.

Each file's outcome (errors as `code@pointer[:line:col]`, warning counts, definitions compiled,
generation) is pinned in corpus_expectations.json; `pin_corpus.py` regenerates it after checking each
outcome against the shared INVENTORY.md. The pins alone could be re-pinned carelessly, so the outcomes
the acceptance criterion names are also derived here from the documents themselves: the trailing-comma
files fail with line and column of the trailing comma itself, the `#/schemagroupsContoso...` typos and
the endpoint references to missing groups are dangling-ref errors at their JSON pointers, and the
sparkplugB will-message to a missing group is one too.
"""

from __future__ import annotations

import difflib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gateway.compiler import compile_registry
from gateway.errors import Severity
from gateway.loader import load_snapshot
from gateway.loader.decode import decode_file
from gateway.loader.discover import discover
from tests.conformance.corpus_outcomes import (
    EXPECTATIONS,
    PINNED_KEYS,
    corpus_documents,
    lint_outcome,
    load_expectations,
    relative,
    xregistry_corpus,
)
from tests.conftest import ABSENT_HINT

CORPUS = xregistry_corpus()
if not CORPUS.is_dir():
    pytest.skip(f"xRegistry conformance corpus not found at {CORPUS} ({ABSENT_HINT})",
                allow_module_level=True)

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = corpus_documents()
REPIN = "if the change is intended: .venv/bin/python tests/conformance/pin_corpus.py, then review the diff"

# INVENTORY.md: "Invalid JSON (trailing commas), 10 files"
TRAILING_COMMA = (
    "xregistry-cli/legacy-0.4-wip-definitiongroups/samples/protocols/amqp-consumer-endpoint.cereg",
    "xregistry-cli/legacy-0.4-wip-definitiongroups/samples/protocols/amqp-producer-endpoint.cereg",
    "xregistry-cli/legacy-0.4-wip-definitiongroups/samples/protocols/mqtt-consumer-endpoint.cereg",
    "xregistry-cli/legacy-0.4-wip-definitiongroups/samples/protocols/mqtt-producer-endpoint.cereg",
    "xregistry-cli/legacy-0.4-wip-definitiongroups/samples/protocols/nats-consumer-endpoint.cereg",
    "xregistry-cli/legacy-0.4-wip-definitiongroups/samples/protocols/nats-producer-endpoint.cereg",
    "xregistry-cli/legacy-0.5-wip-definitionGroups/samples/protocols/nats-consumer-endpoint.cereg",
    "xregistry-cli/legacy-0.5-wip-definitionGroups/samples/protocols/nats-producer-endpoint.cereg",
    "xregistry-cli/legacy-0.5-wip-messagegroups-metadata-schemaurl/samples/protocols/nats-consumer-endpoint.xreg.json",
    "xregistry-cli/legacy-0.5-wip-messagegroups-metadata-schemaurl/samples/protocols/nats-producer-endpoint.xreg.json",
)
CLEAN_1_0 = "spec/cloudevents/samples/scenarios/contoso-erp-jsons07.xreg.json"
DANGLING = "codegen/samples/protocols/kafka-consumer-endpoint.xreg.json"


def _pinned() -> dict[str, Any]:
    files: dict[str, Any] = load_expectations()["files"]
    return files


def _diff(expected: dict[str, Any], actual: dict[str, Any]) -> str:
    return "\n".join(difflib.unified_diff(json.dumps(expected, indent=1).splitlines(),
                                          json.dumps(actual, indent=1).splitlines(), "pinned", "now", lineterm=""))


# -- every file, pinned -------------------------------------------------------------------------------------------

def test_pins_cover_exactly_the_corpus() -> None:
    found = {relative(p) for p in DOCUMENTS}
    pinned = set(_pinned())
    assert found == pinned, (f"not pinned: {sorted(found - pinned)}; pinned but gone: {sorted(pinned - found)}; "
                             f"{REPIN}")


@pytest.mark.parametrize("document", DOCUMENTS, ids=relative)
def test_document_lints_as_pinned(document: Path) -> None:
    pin = _pinned().get(relative(document))
    assert pin is not None, f"{relative(document)} is not pinned in {EXPECTATIONS.name}; {REPIN}"
    actual = lint_outcome(document).pinned()
    expected = {key: pin[key] for key in PINNED_KEYS}
    assert actual == expected, (f"{relative(document)} ({pin.get('note', '')})\n{_diff(expected, actual)}\n{REPIN}")


# -- the acceptance criterion, derived from the documents rather than from the pins --------------------------------

@pytest.mark.parametrize("name", TRAILING_COMMA)
def test_trailing_comma_is_a_parse_error_with_line_and_column(name: str) -> None:
    document = CORPUS / name
    errors = lint_outcome(document.resolve()).errors
    assert [e.code for e in errors] == ["parse"], errors
    error = errors[0]
    assert error.line is not None and error.column is not None and "trailing comma" in error.message
    lines = document.read_text("utf-8").splitlines()
    at = lines[error.line - 1][error.column - 1]
    after = lines[error.line - 1][error.column:] + "".join(lines[error.line:])
    assert at == "," and after.lstrip()[:1] in ("}", "]"), f"line {error.line} col {error.column} is not the comma"


def test_every_other_document_parses() -> None:
    broken = {relative(d) for d in DOCUMENTS if any(e.code == "parse" for e in lint_outcome(d).errors)}
    assert broken == set(TRAILING_COMMA)


def _raw(document: Path) -> Any:
    raw, problem = decode_file(document)
    return None if problem else raw


def _dangling(document: Path) -> dict[str, str]:
    return {e.pointer: e.message for e in lint_outcome(document).errors if e.code == "dangling-ref"}


def _missing_slash_refs(raw: Any, pointer: str = "") -> list[tuple[str, str]]:
    """(pointer, text) of every string holding the upstream typo `#/schemagroupsContoso...`."""
    if isinstance(raw, dict):
        return [hit for k, v in raw.items()
                for hit in _missing_slash_refs(v, f"{pointer}/{k.replace('~', '~0').replace('/', '~1')}")]
    if isinstance(raw, list):
        return [hit for i, v in enumerate(raw) for hit in _missing_slash_refs(v, f"{pointer}/{i}")]
    return [(pointer, raw)] if isinstance(raw, str) and raw.lower().startswith("#/schemagroupscontoso") else []


def test_missing_slash_schema_refs_are_dangling() -> None:
    seen = 0
    for document in DOCUMENTS:
        raw = _raw(document)
        for pointer, text in _missing_slash_refs(raw) if raw is not None else ():
            message = pointer.rsplit("/", 1)[0]
            dangling = _dangling(document)
            assert any(p.startswith(message) and text in m for p, m in dangling.items()), \
                f"{relative(document)}#{pointer}: {text!r} not reported as dangling-ref ({dangling})"
            left_out = {e.pointer for e in lint_outcome(document).errors if e.code == "message-left-out"}
            assert message in left_out, f"{relative(document)}#{message} should be left out"
            seen += 1
    # kafka/nats consumer+producer samples of codegen and five xregistry-cli snapshots (24 files), less the
    # 6 nats files whose trailing commas stop them from parsing
    assert seen == 18


def _group_refs(raw: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(pointer, collection key, group id) of every `#/<groups>/<id>` reference an endpoint makes."""
    out = []
    endpoints = raw.get("endpoints")
    for eid, endpoint in endpoints.items() if isinstance(endpoints, dict) else ():
        for key in ("messagegroups", "definitionGroups", "definitiongroups"):
            refs = endpoint.get(key) if isinstance(endpoint, dict) else None
            for index, text in enumerate(refs if isinstance(refs, list) else ()):
                parts = text.split("/") if isinstance(text, str) else []
                if len(parts) == 3 and parts[0] == "#":
                    out.append((f"/endpoints/{eid}/{key}/{index}", parts[1], parts[2]))
    return out


def test_endpoint_refs_to_missing_groups_are_errors() -> None:
    missing = 0
    for document in DOCUMENTS:
        raw = _raw(document)
        if not isinstance(raw, dict):
            continue
        dangling = _dangling(document)
        for pointer, collection, group in _group_refs(raw):
            exists = isinstance(raw.get(collection), dict) and group in raw[collection]
            assert (pointer in dangling) != exists, (f"{relative(document)}#{pointer} -> {collection}/{group}: "
                                                     f"exists={exists}, reported={dangling.get(pointer)}")
            missing += not exists
    assert missing == 17  # `mygroup` / `Contoso.MyGroup` in the protocol samples and the legacy contoso-erp


def test_sparkplug_will_message_to_missing_group_is_dangling() -> None:
    checked = 0
    for document in DOCUMENTS:
        if "sparkplugB" not in document.name or _raw(document) is None:
            continue
        text = document.read_text("utf-8")
        dangling = {p: m for p, m in _dangling(document).items() if p.endswith(("/will-message", "/willmessage"))}
        if "SparkplugB.HostApplication/definitions/STATE.Death" in text:
            assert len(dangling) == 1 and "Eclipse.SparkplugB.HostApplication" in next(iter(dangling.values()))
            checked += 1
        else:
            assert not dangling  # spec sample: willmessage xids that resolve
    assert checked == 6  # codegen, xregistry-cli HEAD and four legacy snapshots (0.4's will is a boolean)


def test_split_files_directory_loads_clean() -> None:
    """codegen split-files: index.json alone has a self-referencing schema version; as a directory it resolves."""
    snapshot = load_snapshot([CORPUS / "codegen" / "samples" / "split-files"])
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    assert [str(d) for d in [*snapshot.errors, *ruleset.diagnostics] if d.severity is Severity.ERROR] == []
    assert ruleset.definition_count == 4


def test_legacy_protocol_metadata_becomes_protocoloptions() -> None:
    """0.5-wip definitionGroups: a `format: MQTT/5.0` message keeps its topic under `metadata.properties`."""
    name = "xregistry-cli/legacy-0.5-wip-definitionGroups/samples/protocols/mqtt-consumer-endpoint.cereg"
    registry = load_snapshot([CORPUS / name]).registry
    message = registry.messages[("Contoso.MyGroup", "Contoso.MyGroup.MyEvent")]
    assert message.attrs["protocol"] == "MQTT/5.0"
    assert message.attrs["protocoloptions"]["topic_name"]["value"] == "clients/{clientid}/events/{eventid}"
    assert "envelopemetadata" not in message.attrs


# -- the real command line ---------------------------------------------------------------------------------------

def _lint_json(name: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run([sys.executable, "-m", "gateway.cli", "lint", "--format", "json", str(CORPUS / name)],
                          check=False, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def _cli_errors(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for entry in report["files"] for e in entry["errors"]]


def test_cli_trailing_comma_names_line_and_column() -> None:
    code, report = _lint_json(TRAILING_COMMA[0])
    errors = _cli_errors(report)
    assert code == 1 and report["errors"] == 1
    assert errors[0]["code"] == "parse" and isinstance(errors[0]["line"], int) and isinstance(errors[0]["column"], int)
    assert errors[0]["file"].endswith("amqp-consumer-endpoint.cereg")


def test_cli_clean_document_exits_zero() -> None:
    code, report = _lint_json(CLEAN_1_0)
    assert code == 0 and report["errors"] == 0
    assert report["compiled"]["definitions"] == 17 and report["compiled"]["endpoints"] == 6


def test_cli_dangling_ref_exits_one_naming_the_pointer() -> None:
    code, report = _lint_json(DANGLING)
    pointers = {e["pointer"] for e in _cli_errors(report) if e["code"] == "dangling-ref"}
    assert code == 1
    assert pointers == {
        "/messagegroups/Contoso.Sensors.Temperature/messages/Contoso.Sensors.Temperature.Metrics/dataschemauri",
        "/endpoints/Fabrikam.RedmondUsWa.Building42.Environment.Temperature/messagegroups/0",
    }


# -- the whole corpus at once, and config/ ------------------------------------------------------------------------

def test_whole_corpus_merges_and_compiles() -> None:
    snapshot = load_snapshot([CORPUS])
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    assert len(snapshot.files) == len(DOCUMENTS)
    assert ruleset.definition_count > 100
    assert ruleset.endpoints


@pytest.mark.parametrize("folder", ["config", "tests/documents"])
def test_every_document_in_folder_loads_with_zero_errors(folder: str) -> None:
    """DESIGN.md: every document in config/ and tests/documents/ loads in CI."""
    documents, _ = discover([REPO / folder])
    if not documents:
        pytest.skip(f"no documents in {folder}/")
    snapshot = load_snapshot([REPO / folder])
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    errors = [str(d) for d in [*snapshot.diagnostics, *ruleset.diagnostics] if d.severity is Severity.ERROR]
    assert errors == []
    assert {s.generation for s in snapshot.files}.isdisjoint({"unparsable", "not a registry", "unknown"})
    assert ruleset.definition_count > 0
