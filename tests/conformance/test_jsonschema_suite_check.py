"""The JSON-Schema-Test-Suite through the real `xgate check` path.

Each suite file becomes one registry document: every schema is the inline
`dataschema` of a message definition on its own HTTP endpoint, and every
test's data is the body of a recorded message sent to that endpoint. The
verdict must be conformant exactly when the suite says the data is valid.
Remote-ref cases (http://localhost:1234) are skipped: remote fetching is off.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from gateway.cli import main
from tests.conftest import SHARED_CONFORMANCE

SUITE = SHARED_CONFORMANCE / "jsonschema-suite" / "tests"
DRAFTS = {"draft7": "JSONSchema/draft-07", "draft2020-12": "JSONSchema/draft/2020-12"}


def _uses_remote(schema: Any) -> bool:
    return "localhost:1234" in json.dumps(schema)


def _cases() -> list[Any]:
    params = []
    for draft in DRAFTS:
        for path in sorted((SUITE / draft).glob("*.json")) if SUITE.exists() else []:
            for g, group in enumerate(json.loads(path.read_text("utf-8"))):
                for t, test in enumerate(group["tests"]):
                    params.append(pytest.param(draft, path.name, g, t,
                                               id=f"{draft}/{path.stem}/{g}:{group['description']}/{test['description']}"))
    return params


@lru_cache(maxsize=None)
def _verdicts(draft: str, name: str, tmp: str) -> dict[tuple[int, int], dict[str, Any]]:
    groups = json.loads((SUITE / draft / name).read_text("utf-8"))
    endpoints = {}
    records = []
    keys = []
    for g, group in enumerate(groups):
        if _uses_remote(group["schema"]):
            continue
        endpoints[f"case-{g}"] = {
            "usage": ["subscriber"], "protocol": "HTTP",
            "messages": {"payload": {"protocol": "HTTP", "dataschemaformat": DRAFTS[draft],
                                     "dataschema": group["schema"]}}}
        for t, test in enumerate(group["tests"]):
            records.append({"endpoint": f"case-{g}", "protocol": "HTTP", "method": "POST", "path": "/",
                            "headers": {"Content-Type": "application/json"}, "body": json.dumps(test["data"])})
            keys.append((g, t))
    folder = Path(tmp)
    registry = folder / f"{draft}-{name}"
    registry.write_text(json.dumps({"endpoints": endpoints}), "utf-8")
    messages = folder / f"{draft}-{name}.jsonl"
    messages.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["check", "--registry", str(registry), str(messages)])
    assert code in (0, 1), f"check exited {code}: {err.getvalue()}"
    lines = out.getvalue().splitlines()
    assert len(lines) == len(records), err.getvalue()
    return {key: json.loads(line) for key, line in zip(keys, lines)}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("jsonschema-suite"))


@pytest.mark.parametrize(("draft", "name", "group", "test"), _cases())
def test_suite_case_through_check(draft: str, name: str, group: int, test: int, workdir: str) -> None:
    case = json.loads((SUITE / draft / name).read_text("utf-8"))[group]
    if _uses_remote(case["schema"]):
        pytest.skip("remote $ref: remote fetching is off by default (CONFORMANCE.md section 2)")
    verdict = _verdicts(draft, name, workdir)[(group, test)]
    expected = "conformant" if case["tests"][test]["valid"] else "nonconformant"
    assert verdict["verdict"] == expected, verdict
    if expected == "nonconformant":
        assert {v["rule"] for v in verdict["violations"]} <= {"schema"}, verdict
