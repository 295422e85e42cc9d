"""The JSON Schema payload validator against the JSON-Schema-Test-Suite (required tests).

Every case of tests/draft7/*.json and tests/draft2020-12/*.json (top level,
not optional/) is compiled through `compile_payload_validator` and judged via
both `check_value` and `check_bytes(orjson.dumps(data))`; both must agree with
the case's `valid`.

Skipped, by design: cases whose schema needs a resource from the suite's
remote server (http://localhost:1234). xgate fetches no remote schema, so
those schemas fail to compile (a `$ref`), or compile against the draft of the
document's format instead of their unknown custom meta-schema (a `$schema`).
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from gateway.compiler.payload import PayloadValidator, SchemaFormat, compile_payload_validator
from gateway.errors import SchemaCompileError
from tests.conftest import ABSENT_HINT, SHARED_CONFORMANCE

SUITE = SHARED_CONFORMANCE / "jsonschema-suite" / "tests"
DRAFTS = {"draft7": "draft-07", "draft2020-12": "2020-12"}
REMOTE = "http://localhost:1234"

# Cases jsonschema-rs gets wrong, as (draft dir, file, group description, test description).
KNOWN_FAILURES: dict[tuple[str, str, str, str], str] = {}


def _cases() -> list[Any]:
    params: list[Any] = []
    for folder in DRAFTS:
        for path in sorted((SUITE / folder).glob("*.json")):
            for group_index, group in enumerate(json.loads(path.read_text(encoding="utf-8"))):
                for test_index, test in enumerate(group["tests"]):
                    key = (folder, path.name, group["description"], test["description"])
                    marks = []
                    if key in KNOWN_FAILURES:
                        marks.append(pytest.mark.xfail(reason=KNOWN_FAILURES[key], strict=True))
                    params.append(
                        pytest.param(
                            folder,
                            group["schema"],
                            test["data"],
                            test["valid"],
                            id=f"{folder}/{path.stem}/{group_index}/{test_index}",
                            marks=marks,
                        )
                    )
    return params


CASES = _cases()
_compiled: dict[str, PayloadValidator | SchemaCompileError] = {}


def _compile(folder: str, schema: Any) -> PayloadValidator | SchemaCompileError:
    key = folder + orjson.dumps(schema, option=orjson.OPT_SORT_KEYS).decode()
    if key not in _compiled:
        try:
            _compiled[key] = compile_payload_validator(SchemaFormat("jsonschema", DRAFTS[folder]), schema)
        except SchemaCompileError as exc:
            _compiled[key] = exc
    return _compiled[key]


def _custom_meta_schemas(node: Any) -> bool:
    if isinstance(node, dict):
        meta = node.get("$schema")
        if isinstance(meta, str) and meta.startswith(REMOTE):
            return True
        return any(_custom_meta_schemas(v) for v in node.values())
    if isinstance(node, list):
        return any(_custom_meta_schemas(v) for v in node)
    return False


def test_suite_is_present() -> None:
    if not SUITE.is_dir():
        pytest.skip(f"JSON-Schema-Test-Suite not found under {SUITE} ({ABSENT_HINT})")
    assert len(CASES) > 2000, f"JSON-Schema-Test-Suite under {SUITE} holds only {len(CASES)} cases"


@pytest.mark.parametrize(("folder", "schema", "data", "valid"), CASES)
def test_suite_case(folder: str, schema: Any, data: Any, valid: bool) -> None:
    compiled = _compile(folder, schema)
    if isinstance(compiled, SchemaCompileError):
        assert REMOTE in str(compiled), f"unexpected compile error: {compiled}"
        pytest.skip("remote $ref to http://localhost:1234 refused at compile (no fetching)")
    if _custom_meta_schemas(schema):
        pytest.skip("custom $schema on http://localhost:1234 not fetched; the format's draft applies")
    by_value = compiled.check_value(data) is None
    by_bytes = compiled.check_bytes(orjson.dumps(data), "application/json") is None
    assert by_value == by_bytes, "check_value and check_bytes disagree"
    assert by_value == valid
