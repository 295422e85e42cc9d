"""Shared test fixtures: where the external conformance material lives."""

from __future__ import annotations

import socket
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


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
