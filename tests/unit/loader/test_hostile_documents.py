"""Documents built to exhaust memory or the stack fail fast with a diagnostic naming the file and the reason,
and leave the other documents (and, on reload, the last good configuration) alone."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from gateway.compiler import compile_registry
from gateway.errors import Diagnostic
from gateway.loader import load_snapshot
from gateway.loader.decode import MAX_YAML_ALIASES, MAX_YAML_CHARACTERS, decode_text
from gateway.loader.document_limits import MAX_DOCUMENT_VALUES, MAX_NESTING_DEPTH, measure
from gateway.metrics import names
from gateway.runtime.engine import Engine
from gateway.runtime.reload import Reloader
from gateway.settings import load_settings
from gateway.testing import memory
from tests.unit.builders import ce_message, kafka_ce, load_files, ok, registry, shape

# nine levels of nine aliases: 387 bytes of YAML, 9^9 (387 million) strings once expanded
BILLION_LAUGHS = "\n".join(
    ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    + ["messagegroups:", "  g:", "    messages:", "      m:", "        envelope: CloudEvents/1.0",
       "        envelopemetadata: {type: {value: t}}", "        dataschemaformat: JsonSchema/draft-07",
       "        dataschema: {enum: *a8}"]) + "\n"


def _errors(snapshot: Any, file: str) -> list[Diagnostic]:
    return [d for d in snapshot.errors if d.file.endswith(file)]


def _good_document() -> dict[str, Any]:
    return registry("KAFKA", {"m": ce_message("t")})


def test_billion_laughs_fails_fast_naming_the_file(tmp_path: Path) -> None:
    started = time.thread_time()  # this thread's CPU, which a loaded machine does not stretch
    loaded = load_files(tmp_path, {"bomb.yaml": BILLION_LAUGHS, "good.xreg.json": _good_document()})
    assert time.thread_time() - started < 10  # before the fix the compiler ran out of memory expanding it
    [error] = _errors(loaded.snapshot, "bomb.yaml")
    assert error.code == "limit"
    assert f"more than {MAX_DOCUMENT_VALUES:,} values once YAML aliases are expanded" in error.message
    # the other document loads and judges as usual
    assert shape(loaded.judge(kafka_ce("t"), "ep")) == ok("g", "m")


def test_more_aliases_than_the_budget_are_refused_with_the_line() -> None:
    text = "a: &a x\nb: [" + ", ".join(["*a"] * (MAX_YAML_ALIASES + 1)) + "]\n"
    value, problem = decode_text(text, "many.yaml", yaml_syntax=True)
    assert value is None and problem is not None
    assert (problem.file, problem.code) == ("many.yaml", "limit")
    assert f"more than {MAX_YAML_ALIASES} YAML aliases (at line 2)" in problem.message


def test_a_recursive_yaml_alias_is_refused() -> None:
    # SafeLoader builds a list that contains itself; walking it would never end
    value, problem = decode_text("a: &a [1, *a]\n", "loop.yaml", yaml_syntax=True)
    assert value is None and problem is not None and problem.code == "limit"
    assert "refers to a node that contains it" in problem.message


def test_nesting_beyond_the_interpreter_stack_is_a_diagnostic_not_a_crash(tmp_path: Path) -> None:
    deep = 100_000
    files = {"deep.json": '{"messagegroups": ' + "[" * deep + "]" * deep + "}",
             "deep.yaml": "messagegroups: " + "[" * deep + "]" * deep + "\n",
             "good.xreg.json": _good_document()}
    loaded = load_files(tmp_path, files)
    for name in ("deep.json", "deep.yaml"):
        [error] = _errors(loaded.snapshot, name)
        assert error.code == "limit" and "nests too deep to parse" in error.message
    assert shape(loaded.judge(kafka_ce("t"), "ep")) == ok("g", "m")


def test_nesting_beyond_the_depth_limit_is_refused(tmp_path: Path) -> None:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(MAX_NESTING_DEPTH):
        schema = {"type": "object", "properties": {"a": schema}}
    doc = registry("KAFKA", {"m": ce_message("t", dataschemaformat="JsonSchema/draft-07", dataschema=schema)})
    loaded = load_files(tmp_path, {"nested.json": doc})
    [error] = _errors(loaded.snapshot, "nested.json")
    assert error.code == "limit" and f"nests deeper than {MAX_NESTING_DEPTH} levels" in error.message


def test_depth_counts_through_shared_yaml_nodes() -> None:
    # each node is shallow where it is defined; the alias puts it 100 levels further down
    inner: dict[str, Any] = {}
    node = inner
    for _ in range(60):
        node["a"] = {}
        node = node["a"]
    outer: Any = {"shared": inner}
    for _ in range(100):
        outer = [outer]
    assert measure({"first": inner}) is None
    assert measure({"first": inner, "second": outer}) == f"nests deeper than {MAX_NESTING_DEPTH} levels"


def test_huge_yaml_is_refused_before_parsing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = "a: [" + "1," * (MAX_YAML_CHARACTERS // 2) + "1]\n"
    # before parsing: the YAML loader is never even built (checked by construction, not by the clock)
    from gateway.loader import decode

    def never(*args: Any) -> Any:
        raise AssertionError("the YAML parser was started on a document over the limit")

    monkeypatch.setattr(decode, "_BoundedSafeLoader", never)
    value, problem = decode_text(text, "huge.yaml", yaml_syntax=True)
    assert value is None and problem is not None and problem.code == "limit"
    assert f"the limit for YAML is {MAX_YAML_CHARACTERS:,}" in problem.message


def test_a_document_with_too_many_values_is_refused() -> None:
    text = json.dumps({"messagegroups": {"g": {"messages": {}}}, "padding": [0] * MAX_DOCUMENT_VALUES})
    value, problem = decode_text(text, "big.json", yaml_syntax=False)
    assert value is None and problem is not None
    assert (problem.file, problem.code) == ("big.json", "limit")
    assert f"more than {MAX_DOCUMENT_VALUES:,} values" in problem.message


def test_a_cycle_of_schema_references_is_an_error_not_a_hang(tmp_path: Path) -> None:
    # s1's only version points at s2, whose only version points back at s1
    def pointing_at(other: str) -> dict[str, Any]:
        return {"format": "JsonSchema/draft-07", "versions": {"1": {"schemauri": f"#/schemagroups/sg/schemas/{other}"}}}

    doc = registry("KAFKA", {"m": ce_message("t", dataschemaformat="JsonSchema/draft-07",
                                             dataschemauri="#/schemagroups/sg/schemas/s1"), "ok": ce_message("u")},
                   schemagroups={"sg": {"schemas": {"s1": pointing_at("s2"), "s2": pointing_at("s1")}}})
    loaded = load_files(tmp_path, {"cycle.json": doc})
    ref_error = next(d for d in loaded.snapshot.errors if d.code == "ref")
    assert ref_error.file.endswith("cycle.json") and ref_error.pointer.startswith("/schemagroups/sg/schemas/s")
    assert "a cycle, or a chain too long" in ref_error.message
    left_out = next(d for d in loaded.snapshot.errors if d.code == "message-left-out")
    assert left_out.pointer == "/messagegroups/g/messages/m"
    assert shape(loaded.judge(kafka_ce("u"), "ep")) == ok("g", "ok")


def test_reload_keeps_the_last_good_configuration_when_a_hostile_document_arrives(tmp_path: Path) -> None:
    (tmp_path / "good.xreg.json").write_text(json.dumps(_good_document()))
    snapshot = load_snapshot([tmp_path])
    settings, _ = load_settings(tmp_path)
    engine = Engine([], compile_registry(snapshot.registry, snapshot.digest), create_source=memory.create_source,
                    create_sink=memory.create_sink)
    reloader = Reloader(tmp_path, engine, snapshot, settings)

    async def drop_bombs() -> list[str]:
        (tmp_path / "bomb.yaml").write_text(BILLION_LAUGHS)
        first = await reloader.reload("test")
        # and the good document itself overwritten with one: its last good content keeps judging
        (tmp_path / "good.xreg.json").write_text(BILLION_LAUGHS.replace("messagegroups:", "endpoints:"))
        second = await reloader.reload("test")
        return [first, second]

    started = time.monotonic()
    assert asyncio.run(drop_bombs()) == ["failed", "failed"]
    assert time.monotonic() - started < 10
    rules = engine.ref.ruleset.endpoints["ep"]
    assert [d.discriminator.value for d in rules.definitions if d.discriminator] == ["t"]
    assert engine.metrics[names.RELOADS].labels("failed")._value.get() == 2
