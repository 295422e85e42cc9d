"""The documents the write API owns: one file per written group, `<config>/registry-api/<GROUPS>/<GID>.xreg.json`,
each a 1.0 xRegistry document holding that one group, loaded like any dropped file.

A file is replaced crash-safely (gateway/durable.py: staged as `.<name>.<pid>.tmp`, a name no loader reads,
synced, renamed over the old name, the directory synced). A crash at any point leaves the old file or the new
one, never a mix; a leftover staged file is ignored by the loader and removed by the next write of that group.

Writers are serialized across processes by an exclusive `flock` on `registry-api/.lock` (two gateways, or
`--workers`, sharing one config directory), besides the asyncio lock of one process.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gateway import durable

API_DIR = "registry-api"
SUFFIX = ".xreg.json"
SPECVERSION = "1.0-rc4"


def group_path(config_dir: Path, plural: str, gid: str) -> Path:
    """Where the API keeps group `gid` of type `plural` (ids are RFC 3986 unreserved characters, `:` or `@`,
    starting with a letter, digit or `_`: always a plain file name)."""
    return Path(os.path.abspath(config_dir)) / API_DIR / plural / f"{gid}{SUFFIX}"


def is_api_file(config_dir: Path, file: str) -> bool:
    root = Path(os.path.abspath(config_dir)) / API_DIR
    return Path(file).parent.parent == root and file.endswith(SUFFIX)


def encode_group(plural: str, gid: str, body: dict[str, Any]) -> bytes:
    document = {"specversion": SPECVERSION, plural: {gid: body}}
    return (json.dumps(document, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def read_group(path: Path, plural: str, gid: str) -> dict[str, Any] | None:
    """The group as the API last wrote it, or None when it has no file."""
    try:
        document = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    body = document.get(plural, {}).get(gid)
    return dict(body) if isinstance(body, dict) else None


def stage(path: Path, data: bytes) -> Path:
    """Write `data` beside `path` under a name no loader reads, synced to disk; returns that file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(f".{path.name}.*.tmp"):  # left by a writer killed mid-write (writers hold
        stale.unlink(missing_ok=True)                         # the lock: no other one is writing it now)
    return durable.stage(path, data)


@contextlib.contextmanager
def exclusive(config_dir: Path) -> Iterator[None]:
    """Hold the write lock of the config directory's API files (blocking: call it off the event loop)."""
    directory = Path(config_dir) / API_DIR
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
