"""The coverage-guided fuzzer over every target at once, for a bounded time (XGATE_FUZZ_SECONDS, default 15).

Longer runs: `python -m tests.fuzz --seconds 600` (see tests/fuzz/__main__.py).
"""

from __future__ import annotations

import importlib.util
import os

import pytest

from tests.fuzz.__main__ import run_target

SECONDS = int(os.environ.get("XGATE_FUZZ_SECONDS", "15"))


@pytest.mark.skipif(importlib.util.find_spec("atheris") is None, reason="atheris is not installed (dev extra)")
def test_fuzzer_finds_no_crash_in_the_mixed_target() -> None:
    passed, runs, output = run_target("mixed", SECONDS)
    assert passed, output[-4000:]
    assert runs > 100, output[-2000:]  # the fuzzer ran, and got past the seeds
