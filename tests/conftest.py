"""Shared test fixtures: where the external conformance material lives."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# the external conformance material: $XGATE_CONFORMANCE, or ../shared/conformance beside the checkout
SHARED_CONFORMANCE = Path(os.environ.get("XGATE_CONFORMANCE") or REPO.parent / "shared" / "conformance")
ABSENT_HINT = "clone the project with shared/ beside it, or set XGATE_CONFORMANCE to the conformance folder"


def conformance_dir(*parts: str) -> Path:
    """A folder of the conformance material, or skip the test when the material is not there."""
    path = SHARED_CONFORMANCE.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"conformance material not found at {path} ({ABSENT_HINT})")
    return path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
