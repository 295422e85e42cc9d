"""The JSON Schema payload validator against the JSON-Schema-Test-Suite (required tests).

Every case of tests/draft7/*.json and tests/draft2020-12/*.json (top level,
not optional/) is compiled through `compile_payload_validator` and judged via
both `check_value` and `check_bytes(orjson.dumps(data))`; both must agree with
the case's `valid`.

Cases whose schema names the suite's remote server (http://localhost:1234):
the compiler does no I/O, so, as the loader does for an operator who allows
the host, their remote `$ref`s are first embedded by gateway.loader.bundle
through the RemoteFetcher (allow-list 127.0.0.1) from the suite's `remotes/`
folder, served on a free port (tests/conformance/remotes.py rewrites the
prefix to it). A custom `$schema` meta-schema is not fetched (the format's
draft applies), which changes the verdict of one case: KNOWN_FAILURES.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from gateway.compiler.payload import PayloadValidator, SchemaFormat, compile_payload_validator
from gateway.errors import SchemaCompileError
from gateway.loader.bundle import RefUnavailable, bundle, is_legacy
from gateway.loader.fetch import FetchError, RemoteFetcher, RemotePolicy
from tests.conformance.remotes import serve_remotes
from tests.conftest import ABSENT_HINT, SHARED_CONFORMANCE

SUITE = SHARED_CONFORMANCE / "jsonschema-suite" / "tests"
DRAFTS = {"draft7": "draft-07", "draft2020-12": "2020-12"}
REMOTE = "http://localhost:1234"

# Cases jsonschema-rs gets wrong, as (draft dir, file, group description, test description).
KNOWN_FAILURES: dict[tuple[str, str, str, str], str] = {
    ("draft2020-12", "vocabulary.json", "schema that uses custom metaschema with with no validation vocabulary",
     "no validation: invalid number, but it still validates"):
        "a custom meta-schema's $vocabulary is not read: the format's draft applies",
}


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


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    with serve_remotes(SUITE.parent / "remotes") as base:
        yield base


def _bundled(folder: str, schema: Any, served: str) -> Any:
    """The schema with what its remote `$ref`s name embedded, fetched as the loader fetches them."""
    schema = orjson.loads(orjson.dumps(schema).decode().replace(REMOTE, served))
    fetcher = RemoteFetcher(RemotePolicy(allow=("127.0.0.1",)))

    def fetch(url: str) -> Any:
        try:
            return orjson.loads(fetcher.fetch(url).data)
        except FetchError as exc:
            raise RefUnavailable(f"{url}: {exc}") from None
    return bundle(schema, None, fetch, legacy=is_legacy(schema, DRAFTS[folder]))


def _compile(folder: str, schema: Any, served: str) -> PayloadValidator | SchemaCompileError:
    key = folder + orjson.dumps(schema, option=orjson.OPT_SORT_KEYS).decode()
    if key not in _compiled:
        try:
            if REMOTE in orjson.dumps(schema).decode():
                schema = _bundled(folder, schema, served)
            _compiled[key] = compile_payload_validator(SchemaFormat("jsonschema", DRAFTS[folder]), schema)
        except SchemaCompileError as exc:
            _compiled[key] = exc
    return _compiled[key]


def test_suite_is_present() -> None:
    if not SUITE.is_dir():
        pytest.skip(f"JSON-Schema-Test-Suite not found under {SUITE} ({ABSENT_HINT})")
    assert len(CASES) > 2000, f"JSON-Schema-Test-Suite under {SUITE} holds only {len(CASES)} cases"


@pytest.mark.parametrize(("folder", "schema", "data", "valid"), CASES)
def test_suite_case(folder: str, schema: Any, data: Any, valid: bool, served: str) -> None:
    compiled = _compile(folder, schema, served)
    assert not isinstance(compiled, SchemaCompileError), f"unexpected compile error: {compiled}"
    by_value = compiled.check_value(data) is None
    by_bytes = compiled.check_bytes(orjson.dumps(data), "application/json") is None
    assert by_value == by_bytes, "check_value and check_bytes disagree"
    assert by_value == valid
