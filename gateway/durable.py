"""Files replaced so that a crash or a power cut leaves the old bytes or the new ones, never a mix or nothing.

The new bytes go to a file beside the target under a name no loader reads (`.<name>.<pid>.tmp`: one per
process, so workers sharing a file never write each other's), are flushed to disk (fsync), renamed over the
target (os.replace, atomic on POSIX), and the directory is synced so that the rename itself is on disk.
Every file xgate keeps across restarts is written this way: the write API's documents (registry_api/store.py),
the registry's epochs (registry_api/state.py) and the change-event outbox (runtime/change_events.py).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def aside_of(path: Path) -> Path:
    """Where this process stages the next bytes of `path`."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def stage(path: Path, data: bytes) -> Path:
    """Write `data` beside `path`, synced to disk; returns that file (put in place with `commit`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    aside = aside_of(path)
    with open(aside, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    return aside


def sync_directory(directory: Path) -> None:
    """Make the directory's entries (a rename, a removal) durable."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def commit(staged: Path, path: Path) -> None:
    """Put a staged file in place of `path` in one rename, and make the rename durable."""
    os.replace(staged, path)
    sync_directory(path.parent)


def write_atomically(path: Path, data: bytes) -> None:
    """Replace `path` by `data` crash-safely; a failure leaves the old file and no staged one behind."""
    staged = stage(path, data)
    try:
        commit(staged, path)
    except BaseException:
        with contextlib.suppress(OSError):
            staged.unlink()
        raise


def remove(path: Path) -> None:
    """Remove `path` (if it is there), durably."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
        sync_directory(path.parent)


def remove_leftovers(path: Path) -> None:
    """Staged copies of `path` a killed process left behind (any process id: the dead one's)."""
    for stale in path.parent.glob(f".{path.name}.*.tmp"):
        with contextlib.suppress(OSError):
            stale.unlink()
