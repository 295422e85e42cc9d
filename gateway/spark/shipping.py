"""Ship registry documents to Spark executors as bytes; compile there once per digest.

Only a `RegistryBundle` (a digest and the documents' bytes) is pickled. An executor
writes the bytes to a private temporary directory, loads and compiles them with the
same loader and compiler as `xgate check`, and keeps the Ruleset in a module-level
cache keyed by digest, so a Python worker compiles each registry once however many
partitions or micro-batches it serves. Compiled closures never cross a process.

The native core (`xgate_core`) is not shipped with the bundle: the executors' Python has it installed (the
wheel on the workers, or a packed environment through `spark.archives`; deploy/spark/README.md). Without it an
executor would judge in Python, several times slower and silently; `XGATE_REQUIRE_CORE=1` in the executors'
environment (`spark.executorEnv.XGATE_REQUIRE_CORE=1`, set by deploy/spark/submit.sh) makes that a task failure
that names the executor's Python instead.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from gateway.compiler import Ruleset, compile_registry
from gateway.compiler.core import NativeJudge, native_available
from gateway.errors import GatewayError
from gateway.loader import Snapshot, load_snapshot

# bytes shipped beside the documents (schemas referenced by path, ...) stop at this total
AUXILIARY_LIMIT = 16 * 1024 * 1024
# "1" in an executor's environment: judging without the native core is an error there, not a slow fallback
REQUIRE_CORE = "XGATE_REQUIRE_CORE"


class CoreMissing(GatewayError):
    """An executor asked to judge with the native core cannot import it; the message names its Python."""


@dataclass(frozen=True, slots=True)
class RegistryBundle:
    """What travels to executors: the snapshot digest, every file as (relative path, bytes), the load set."""

    digest: str
    files: tuple[tuple[str, bytes], ...]
    # the paths given to the loader, relative to the bundle root ("." is the whole root)
    load: tuple[str, ...]

    @property
    def size(self) -> int:
        return sum(len(data) for _, data in self.files)


def _common_root(paths: list[Path]) -> Path:
    bases = [p if p.is_dir() else p.parent for p in paths]
    return Path(os.path.commonpath([str(b) for b in bases]))


def _auxiliary_files(directory: Path) -> list[Path]:
    """Non-hidden regular files under a directory, walked the way the loader walks it."""
    out: list[Path] = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        out.extend(Path(root) / name for name in sorted(files) if not name.startswith("."))
    return out


def bundle_from_snapshot(snapshot: Snapshot, paths: list[str | Path]) -> RegistryBundle:
    """The documents `snapshot` was loaded from (its own bytes), plus other files under directory inputs.

    `paths` are the paths the snapshot was loaded from; the executor loads the same paths
    relative to its copy, so discovery and `file.json#/...` references resolve the same way.
    """
    # absolute paths as found, links not followed: the snapshot names documents so (a ConfigMap volume's
    # files are links into a hidden version directory that the executor's loader would not walk)
    given = [Path(os.path.abspath(p)) for p in paths if Path(p).exists()]
    if not given:
        return RegistryBundle(snapshot.digest, (), ())
    root = _common_root(given)
    files: dict[str, bytes] = {}
    for name, data in snapshot.contents.items():
        path = Path(os.path.abspath(name))
        if root in path.parents:
            files[path.relative_to(root).as_posix()] = data
    budget = AUXILIARY_LIMIT
    for directory in (p for p in given if p.is_dir()):
        for path in _auxiliary_files(directory):
            path = Path(os.path.abspath(path))
            rel = path.relative_to(root).as_posix() if root in path.parents else None
            if rel is None or rel in files or not path.is_file():
                continue
            size = path.stat().st_size
            if size > budget:
                continue
            budget -= size
            files[rel] = path.read_bytes()
    load = tuple(p.relative_to(root).as_posix() if p != root else "." for p in given)
    return RegistryBundle(snapshot.digest, tuple(sorted(files.items())), load)


def bundle_from_paths(paths: list[str | Path]) -> tuple[Snapshot, RegistryBundle]:
    """Load on the driver (for diagnostics and the digest) and bundle the bytes for the executors."""
    snapshot = load_snapshot(list(paths))
    return snapshot, bundle_from_snapshot(snapshot, paths)


_rulesets: dict[str, Ruleset] = {}
_judges: dict[str, NativeJudge] = {}
_directories: dict[str, str] = {}
_lock = threading.Lock()


def _cleanup() -> None:
    for directory in _directories.values():
        shutil.rmtree(directory, ignore_errors=True)


atexit.register(_cleanup)


def materialize(bundle: RegistryBundle) -> Path:
    """Write the bundle's files to a private temporary directory (once per digest in this process)."""
    with _lock:
        existing = _directories.get(bundle.digest)
        if existing is not None:
            return Path(existing)
        directory = Path(tempfile.mkdtemp(prefix=f"xgate-{bundle.digest[:12]}-"))
        for rel, data in bundle.files:
            target = (directory / rel).resolve()
            if directory.resolve() not in target.parents:
                raise ValueError(f"bundle path escapes its directory: {rel!r}")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        _directories[bundle.digest] = str(directory)
        return directory


def native_judge_for(bundle: RegistryBundle) -> NativeJudge:
    """`bundle`'s ruleset with its native core (gateway/compiler/core.py), built once per digest in this
    process; without the core installed here it judges in Python (its `available` is False)."""
    cached = _judges.get(bundle.digest)
    if cached is not None:
        return cached
    require_core()
    judge = NativeJudge(ruleset_for(bundle))
    with _lock:
        return _judges.setdefault(bundle.digest, judge)


def require_core() -> None:
    """Raise CoreMissing when this process was told to judge with the core (REQUIRE_CORE) and cannot import it."""
    if os.environ.get(REQUIRE_CORE) == "1" and not native_available():
        raise CoreMissing(f"{REQUIRE_CORE}=1 but the native core (xgate_core) cannot be imported by {sys.executable} "
                          f"on {socket.gethostname()}: install the xgate_core wheel into the Python the executors run "
                          "(spark.pyspark.python), or ship a packed environment with spark.archives "
                          "(deploy/spark/README.md)")


def core_report() -> dict[str, str | bool | None]:
    """What this process judges with: its Python, host and process, and the core's extension file (or None)."""
    import importlib.util

    spec = importlib.util.find_spec("xgate_core._core") if native_available() else None
    return {"host": socket.gethostname(), "pid": str(os.getpid()), "python": sys.executable,
            "core": native_available(), "core_file": spec.origin if spec is not None else None}


def ruleset_for(bundle: RegistryBundle) -> Ruleset:
    """The compiled Ruleset of `bundle`, compiled at most once per digest in this process."""
    cached = _rulesets.get(bundle.digest)
    if cached is not None:
        return cached
    directory = materialize(bundle)
    snapshot = load_snapshot([directory / rel for rel in bundle.load])
    ruleset = compile_registry(snapshot.registry, bundle.digest)
    with _lock:
        return _rulesets.setdefault(bundle.digest, ruleset)


__all__ = ["REQUIRE_CORE", "CoreMissing", "RegistryBundle", "bundle_from_paths", "bundle_from_snapshot", "core_report",
           "materialize", "native_judge_for", "require_core", "ruleset_for"]
