"""Issue 17 on a running gateway between real brokers: broken reloads keep traffic flowing, a stop never hangs.

Each test leaves its figures in build/reliability/ (`python -m tests.integration.reliability`).
"""

from __future__ import annotations

import asyncio
import copy
import json
import signal
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from tests.conftest import free_port
from tests.integration.harness import Gateway, World, run_scenario
from tests.integration.profiles import PROFILES
from tests.integration.reliability import record
from tests.integration.test_faults import check_nothing_lost, metric

pytestmark = pytest.mark.integration


def _wait(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen within {timeout} s")


def test_broken_reloads_keep_the_last_good_routes_flowing(tmp_path: Path) -> None:
    """Defects 2 and 4: a source option that cannot be read, then the destination's endpoint removed, while
    messages flow NATS -> NATS; each reload fails as a whole, the same process keeps routing, nothing is lost."""
    seen: dict[str, Any] = {}

    def break_and_restore(world: World, gateway: Gateway) -> None:
        registry = world.config_dir / "registry.json"
        good = registry.read_text()
        document = json.loads(good)
        unreadable = copy.deepcopy(document)
        unreadable["endpoints"]["in"]["protocoloptions"]["batch"] = "many"
        without_destination = copy.deepcopy(document)
        del without_destination["endpoints"]["valid"]
        time.sleep(1.0)
        world.fault_ended = time.monotonic()  # recovery: from the first broken document to the next delivery
        for failed, broken in enumerate((unreadable, without_destination), 1):
            registry.write_text(json.dumps(broken))
            _wait(lambda count=failed: _failed(gateway) >= count, 20, f"reload {failed} being refused")
            seen[f"routes_after_{failed}"] = metric(gateway, "xgate_routes")
            seen[f"ready_after_{failed}"] = gateway.scrape("/readyz")[0]
            time.sleep(1.5)  # traffic keeps flowing on the last good routes meanwhile
            registry.write_text(good)
            time.sleep(1.5)
        seen["pid_alive"] = gateway.process.poll() is None

    report = run_scenario(PROFILES["NATS"], tmp_path, 3000, rate=300, during=break_and_restore)
    log = report["gateway_log_tail"]
    assert seen["pid_alive"], log  # the gateway never restarted
    assert seen["routes_after_1"] == 1 and seen["routes_after_2"] == 1, seen
    assert seen["ready_after_1"] == 200 and seen["ready_after_2"] == 200, seen
    output = (tmp_path / "gateway.log").read_text()
    # the unreadable option is named at its own pointer, as lint and startup name it
    assert "registry.json#/endpoints/in/protocoloptions/batch: error" in output and "found 'many'" in output
    assert "conformant destination 'valid' is not in the registry" in output
    assert "Traceback" not in output and "ExceptionGroup" not in output
    check_nothing_lost(report, "reload_refused_nats", "reload with an unreadable option, then without the "
                       "destination's endpoint (NATS in and out; recovery: from the broken file to the next delivery)")


def _failed(gateway: Gateway) -> float:
    text = gateway.scrape()[1]
    for line in text.splitlines():
        if line.startswith('xgate_reloads_total{outcome="failed"} '):
            return float(line.split()[-1])
    return 0.0


def _http_config(tmp_path: Path, drain_timeout: float) -> tuple[Path, str]:
    config = tmp_path / "config"
    config.mkdir()
    port, dead = free_port(), free_port()  # nothing listens on `dead`: every delivery fails, retriably
    document = {"endpoints": {
        "in": {"usage": ["subscriber"], "protocol": "HTTP", "envelope": "CloudEvents/1.0",
               "protocoloptions": {"endpoints": [{"uri": f"http://127.0.0.1:{port}/events"}],
                                   "responsetimeout": 600},
               "messages": {"m": {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "t"}}}}},
        "valid": {"usage": ["producer"], "protocol": "HTTP",
                  "protocoloptions": {"endpoints": [{"uri": f"http://127.0.0.1:{dead}/valid"}]}}}}
    (config / "registry.json").write_text(json.dumps(document))
    (config / "gateway.yaml").write_text(yaml.safe_dump({
        "routes": [{"source": "in", "conformant": "valid", "inflight": 20}],
        "runtime": {"drain_timeout": drain_timeout}}))
    return config, f"http://127.0.0.1:{port}/events"


async def _post_all(url: str, count: int, started: asyncio.Event) -> list[int]:
    headers = {"ce-specversion": "1.0", "ce-id": "x", "ce-source": "/s", "ce-type": "t",
               "Content-Type": "application/json"}
    async with aiohttp.ClientSession() as session:
        for _ in range(100):  # until the gateway listens
            try:
                async with session.head(url) as response:
                    if response.status == 200:
                        break
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.2)

        async def one(n: int) -> int:
            try:
                async with session.post(url, data=json.dumps({"n": n}), headers=headers) as response:
                    return response.status
            except aiohttp.ClientError:
                return 0
        tasks = [asyncio.create_task(one(n)) for n in range(count)]
        await asyncio.sleep(1.5)  # all 30 in: 20 in the window, retrying; 10 waiting for room
        started.set()
        return await asyncio.gather(*tasks)


def _stop_while_full(tmp_path: Path, drain_timeout: float, signals: int) -> tuple[int, float, list[int], str]:
    config, url = _http_config(tmp_path, drain_timeout)
    gateway = Gateway(config)
    try:
        async def main() -> tuple[float, list[int]]:
            started = asyncio.Event()
            answers = asyncio.create_task(_post_all(url, 30, started))
            await started.wait()
            assert metric(gateway, "xgate_inflight_messages") == 20  # the window is full
            signalled = time.monotonic()
            for _ in range(signals):
                gateway.process.send_signal(signal.SIGTERM)
                await asyncio.sleep(0.5)
            while gateway.process.poll() is None and time.monotonic() - signalled < 120:
                await asyncio.sleep(0.05)
            took = time.monotonic() - signalled
            return took, await asyncio.wait_for(answers, 30)
        took, statuses = asyncio.run(main())
        code = gateway.process.wait(5)
    finally:
        if gateway.process.poll() is None:
            gateway.kill()
    return code, took, statuses, gateway.output()


def test_sigterm_with_a_full_window_and_an_unreachable_destination_exits_within_the_drain_timeout(
        tmp_path: Path) -> None:
    """Defect 3: `http.in -> http.valid`, nothing listening on the destination, inflight 20, drain_timeout 5,
    30 requests, SIGTERM: exit 0 within drain_timeout plus a few seconds; every request answered 503 (released,
    never acknowledged: the client sends it again)."""
    code, took, statuses, output = _stop_while_full(tmp_path, 5, signals=1)
    assert code == 0, output
    assert took < 5 + 5, (took, output)
    assert statuses == [503] * 30, statuses
    assert "Traceback" not in output
    record("sigterm_full_window_http", "SIGTERM with the in-flight window full and the destination unreachable "
           "(HTTP in, 30 requests, drain_timeout 5; recovery: signal to exit)",
           {d: {"expected": 30 if d == "valid" else 0, "arrived": 0, "duplicates": 0, "unexpected": 0,
                "missing": 0} for d in ("valid", "dlq", "unknown")},
           {"recovery_seconds": round(took, 1), "released": statuses.count(503)})


def test_a_second_sigterm_stops_at_once(tmp_path: Path) -> None:
    code, took, statuses, output = _stop_while_full(tmp_path, 600, signals=2)
    assert code == 0 and took < 10, (code, took, output)
    assert statuses == [503] * 30, statuses
    assert "stop requested again" in output
