"""A process killed while the API writes a group file leaves the old file or the new one, never a mix
(gateway/durable.py, which store.py writes with: staged beside it, fsync, os.replace)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from gateway import durable
from gateway.registry_api import store

# rewrites the file in a loop, alternating two large contents, until killed
# (durable.py loaded by its path: it needs only the standard library, and the package's imports cost a second)
WRITER = """
import importlib.util, sys
from pathlib import Path
spec = importlib.util.spec_from_file_location("durable", sys.argv[4])
durable = importlib.util.module_from_spec(spec)
spec.loader.exec_module(durable)
path, old, new = Path(sys.argv[1]), Path(sys.argv[2]).read_bytes(), Path(sys.argv[3]).read_bytes()
print("ready", flush=True)
while True:
    for data in (new, old):
        durable.write_atomically(path, data)
"""


def test_a_kill_during_a_write_leaves_the_old_or_the_new_file(tmp_path: Path) -> None:
    final = store.group_path(tmp_path, "messagegroups", "g")
    old = store.encode_group("messagegroups", "g", {"description": "old " + "o" * 400_000})
    new = store.encode_group("messagegroups", "g", {"description": "new " + "n" * 600_000})
    (tmp_path / "old").write_bytes(old)
    (tmp_path / "new").write_bytes(new)
    durable.write_atomically(final, old)
    seen = set()
    for round_ in range(6):
        child = subprocess.Popen([sys.executable, "-c", WRITER, str(final), str(tmp_path / "old"),
                                  str(tmp_path / "new"), durable.__file__], stdout=subprocess.PIPE)
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        time.sleep(0.05 + 0.037 * round_)  # somewhere inside a write: each takes milliseconds
        child.send_signal(signal.SIGKILL)
        child.wait()
        data = final.read_bytes()
        assert data in (old, new), f"round {round_}: {len(data)} bytes, neither the old nor the new file"
        seen.add(json.loads(data)["messagegroups"]["g"]["description"][:3])
    # the loader never reads what a killed writer left staged beside it
    leftovers = [p.name for p in final.parent.iterdir() if p != final]
    assert all(name.startswith(".") and name.endswith(".tmp") for name in leftovers)
    assert seen <= {"old", "new"}
