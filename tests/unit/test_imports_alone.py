"""Every module of gateway/ and protocol_adapters/ imports on its own, first thing in a fresh interpreter.

The suite imports modules in whatever order its tests happen to, so a module that works only after some other
has been imported (`import gateway.schemaregistry` once failed with "partially initialized module") passes
there and fails for the user who imports it first. One interpreter imports nothing of the project and forks a
child per module (a fork is a fresh interpreter as far as imports go, at a fraction of the start-up), which
imports that module alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("gateway", "protocol_adapters")

# run by a fresh interpreter: for each module name on stdin, a forked child imports it; a line per failure
_CHILD = r"""
import importlib, json, os, sys, traceback
# third-party libraries are loaded once before forking (they are not what is tested, and loading pyspark or
# aiohttp in every child would make this test slow); nothing of the project is
for library in ("aiohttp", "aiokafka", "aiomqtt", "cloudevents", "fastavro", "google.protobuf.descriptor_pb2",
                "jsonschema_rs", "msgspec", "nats", "orjson", "prometheus_client", "proton", "pyspark.sql", "watchdog",
                "xmlschema", "yaml"):
    try:
        importlib.import_module(library)
    except ImportError:
        pass
failures = {}
for name in json.load(sys.stdin):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            __import__(name)
            code = 0
        except BaseException:
            os.write(write, traceback.format_exc(limit=-3).encode())
            code = 1
        os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        output = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    if status != 0:
        failures[name] = output or f"exit status {status}"
json.dump(failures, sys.stdout)
"""


def module_names() -> list[str]:
    names = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            if parts[-1] != "__main__":  # running a module's main is not importing it
                names.append(".".join(parts))
    return names


def imports_alone(names: list[str], path: Path = ROOT) -> dict[str, str]:
    """The modules that fail to import alone, with the end of their traceback; `path` is where they are."""
    done = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps(names), capture_output=True,
                          text=True, cwd=path, timeout=600, check=True)
    failures: dict[str, str] = json.loads(done.stdout)
    return failures


def test_the_check_sees_a_module_that_fails_alone(tmp_path: Path) -> None:
    (tmp_path / "broken_alone.py").write_text("import no_such_module_anywhere\n")
    (tmp_path / "fine_alone.py").write_text("import json\n")
    failures = imports_alone(["fine_alone", "broken_alone"], tmp_path)
    assert set(failures) == {"broken_alone"}
    assert "no_such_module_anywhere" in failures["broken_alone"]


def test_every_module_imports_alone() -> None:
    names = module_names()
    assert len(names) > 150  # the walk found the packages
    failures = imports_alone(names)
    assert failures == {}, "\n\n".join(f"{name}:\n{error}" for name, error in failures.items())
