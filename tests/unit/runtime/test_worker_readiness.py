"""The supervisor's view of a worker's readiness (`--workers N`, gateway/runtime/workers.py): a worker that
answers 503 is not ready at once; one that misses a probe or two (a busy event loop on a loaded machine) stays
ready until PROBE_MISSES in a row; one whose process is gone is not ready at the first miss."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from gateway.runtime import workers
from gateway.runtime.workers import PROBE_MISSES, SLOW_START_PROBES, Supervisor, _Worker

READY = (200, b'{"ready": true, "sources": {"in": true}}')
NOT_READY = (503, b'{"ready": false, "sources": {"in": false}}')


def _worker(alive: bool = True) -> _Worker:
    worker = _Worker(0, port=1)
    worker.process = SimpleNamespace(returncode=None if alive else -9)  # type: ignore[assignment]
    return worker


def test_a_503_makes_the_worker_not_ready_at_once_and_says_why(caplog: Any) -> None:
    worker = _worker()
    Supervisor._probed(worker, READY)
    assert worker.ready and worker.became_ready and worker.sources == {"in": True}
    with caplog.at_level(logging.WARNING, "xgate.workers"):
        Supervisor._probed(worker, NOT_READY)
    assert not worker.ready and worker.sources == {"in": False}
    assert "worker 0 is not ready: /readyz answered 503" in caplog.text


@pytest.mark.parametrize("alive", [True, False])
def test_missed_probes_count_only_in_a_row_and_only_for_a_live_worker(alive: bool) -> None:
    worker = _worker(alive)
    Supervisor._probed(worker, READY)
    for _ in range(PROBE_MISSES - 1):
        Supervisor._probed(worker, None)
    assert worker.ready is alive  # a process that is gone is not ready at the first miss
    Supervisor._probed(worker, READY)  # an answer starts the count again
    assert worker.ready and worker.misses == 0
    for _ in range(PROBE_MISSES):
        Supervisor._probed(worker, None)
    assert not worker.ready


def test_a_worker_that_never_answered_is_not_ready() -> None:
    worker = _worker()
    Supervisor._probed(worker, None)
    assert not worker.ready and not worker.became_ready


def test_a_worker_slow_to_become_ready_says_why_once(caplog: Any) -> None:
    """Never ready means no transition to log; past SLOW_START_PROBES the supervisor says why, once."""
    worker = _worker()
    with caplog.at_level(logging.WARNING, "xgate.workers"):
        for _ in range(SLOW_START_PROBES - 1):
            Supervisor._probed(worker, NOT_READY)
        assert "still not ready" not in caplog.text
        for _ in range(3):
            Supervisor._probed(worker, NOT_READY)
    assert caplog.text.count(f"worker 0 is still not ready after {SLOW_START_PROBES} probes: /readyz answered 503") == 1
    Supervisor._probed(worker, READY)
    assert worker.ready and worker.unready == 0


def test_a_restarted_worker_gets_a_private_port_picked_afresh(monkeypatch: Any, caplog: Any) -> None:
    """The port a worker had may have been taken by another process (that may be why it exited): the next start
    gets a new one, instead of failing the same way on every restart (one restart: the test waits its 1 s)."""

    supervisor = Supervisor("cfg", 1, [], "", None, 1.0)  # type: ignore[arg-type]
    worker = supervisor.workers[0]
    addresses: list[str] = []
    ports = iter([40001, 40002])

    class Exited:
        returncode = None

        async def wait(self) -> int:
            if len(addresses) == 2:
                supervisor.request_stop()  # the second run ends with the gateway stopping
            return 1

    async def spawn(*argv: str, **_: Any) -> Exited:
        addresses.append(argv[argv.index("--metrics-address") + 1])
        return Exited()

    monkeypatch.setattr(workers, "ephemeral_port", lambda: next(ports))
    monkeypatch.setattr(asyncio, "create_subprocess_exec", spawn)
    first = worker.port
    with caplog.at_level(logging.WARNING, "xgate.workers"):
        asyncio.run(asyncio.wait_for(supervisor._keep_running(worker), timeout=10))
    assert addresses == [f"127.0.0.1:{first}", "127.0.0.1:40001"]
    assert worker.port == 40001
    assert "starting it again in 1 s on private port 40001" in caplog.text
