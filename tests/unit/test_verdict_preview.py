"""`actual` previews: what json.dumps(value, default=str) writes, cut near ACTUAL_LIMIT, at bounded cost."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from gateway.verdict import ACTUAL_LIMIT, truncate

SCALARS: list[Any] = ["plain", 'quote " backslash \\ newline \n', "caf\u00e9 \U0001f600", "", 0, -7, 2**40, 10**30,
                      1.5, -0.0, 1e300, 5e-324, float("nan"), float("inf"), True, False, None]


@pytest.mark.parametrize("value", SCALARS, ids=repr)
def test_scalars_inside_a_container_read_as_json_dumps_writes_them(value: Any) -> None:
    assert truncate([value]) == json.dumps([value], default=str)


def test_a_small_payload_is_its_json_text() -> None:
    payload = {"id": "A-1", "n": 3, "ok": True, "none": None, "tags": ["x", "y"], "nested": {"f": 0.25}}
    assert truncate(payload) == json.dumps(payload)


def test_a_long_or_deep_payload_is_cut_at_the_limit() -> None:
    wide = {f"key{n}": "v" * 50 for n in range(10_000)}
    assert truncate(wide) == json.dumps(wide)[:ACTUAL_LIMIT] + "..."
    deep: Any = 1
    for _ in range(100_000):  # deeper than json.dumps could recurse
        deep = [deep]
    assert truncate(deep) == "[" * ACTUAL_LIMIT + "..."


def test_long_strings_and_bytes_are_cut() -> None:
    assert truncate("x" * 500) == "x" * ACTUAL_LIMIT + "..."
    assert truncate(b"\xffab" + b"c" * 500) == "\ufffdab" + "c" * (ACTUAL_LIMIT - 3) + "..."
    assert truncate(["y" * 500]) == json.dumps(["y" * 500])[:ACTUAL_LIMIT] + "..."


def _expected_preview(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= ACTUAL_LIMIT else text[:ACTUAL_LIMIT] + "..."


def test_random_containers_read_as_json_dumps_writes_them() -> None:
    # random containers, some past the limit, some beyond 64-bit integers or with long strings inside
    rng = random.Random(7)

    def value(depth: int) -> Any:
        kind = rng.randrange(7 if depth < 4 else 4)
        if kind == 0:
            return rng.choice(SCALARS[:-4] + [2**70, "x" * rng.randrange(300)])
        if kind == 1:
            return rng.uniform(-1e6, 1e6)
        if kind == 2:
            return "caf\u00e9" * rng.randrange(5)
        if kind == 3:
            return rng.randrange(-10**6, 10**6)
        if kind == 4:
            return [value(depth + 1) for _ in range(rng.randrange(400 if rng.random() < 0.1 else 6))]
        if kind == 5:
            return tuple(value(depth + 1) for _ in range(rng.randrange(4)))
        return {f"k{n}": value(depth + 1) for n in range(rng.randrange(300 if rng.random() < 0.1 else 6))}

    for _ in range(400):
        sample = value(0)
        if isinstance(sample, (dict, list, tuple)):
            assert truncate(sample) == _expected_preview(sample)
