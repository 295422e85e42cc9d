"""Shared test fixtures: where the external conformance material lives."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_CONFORMANCE = REPO.parent / "shared" / "conformance"


def conformance_dir(*parts: str) -> Path:
    """A folder of ../shared/conformance, or skip the test when the material is not beside the checkout."""
    path = SHARED_CONFORMANCE.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"conformance material not found at {path} (clone the project with shared/ beside it)")
    return path
