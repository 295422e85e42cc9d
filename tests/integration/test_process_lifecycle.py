"""How `xgate run` ends when it is stopped at awkward moments (issue 35, items 6 and 12): a SIGTERM while it
is still starting is a clean stop (exit 0, logged), and workers whose supervisor was killed stop too instead
of consuming on their own. An HTTP webhook route: no broker needed."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.integration.harness import Gateway, prepare
from tests.integration.profiles import PROFILES
from tests.integration.test_workers import _wait_for_workers

pytestmark = pytest.mark.integration


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's exit may wait to be reaped by an init that never reaps it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def _catches(pid: int, signum: int) -> bool:
    """Whether the process has a handler of its own for the signal (SigCgt in /proc: a mask, bit signum - 1)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return False


def test_sigterm_during_start_up_is_a_clean_stop(tmp_path: Path) -> None:
    world = prepare(PROFILES["HTTP"], tmp_path)
    gateway = Gateway(world.config_dir)
    # the signal goes once the gateway catches it (before that, the interpreter itself is still starting: on a
    # loaded machine, longer than any fixed sleep) and while it is still starting: importing the commands and
    # compiling the registry take far longer than the first steps of gateway.cli, where the catching begins
    deadline = time.monotonic() + 30
    while gateway.process.poll() is None and not _catches(gateway.process.pid, signal.SIGTERM) \
            and time.monotonic() < deadline:
        time.sleep(0.005)
    assert gateway.process.poll() is None
    assert "xgate route" not in gateway.output(), "started before the signal could be sent during start-up"
    gateway.process.send_signal(signal.SIGTERM)
    code = gateway.stop()
    assert code == 0, gateway.output()[-3000:]
    assert "SIGTERM during start-up: stopping before taking any message" in gateway.output()


def test_workers_stop_when_their_supervisor_is_killed(tmp_path: Path) -> None:
    world = prepare(PROFILES["HTTP"], tmp_path)
    gateway = Gateway(world.config_dir, "--workers", "2")
    workers: list[int] = []
    try:
        workers = _wait_for_workers(gateway, 2)
        gateway.process.kill()
        gateway.process.wait(10)
        deadline = time.monotonic() + 60
        while any(_running(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_running(pid) for pid in workers), gateway.output()[-3000:]
    finally:
        for pid in workers:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
        gateway.log.close()
