"""Policies on real endpoints (observe, reject over HTTP) and the incident tools (capture, replay)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from gateway.recorded import envelope_from_record
from tests.integration.harness import REPO, Gateway, prepare, run_scenario
from tests.integration.profiles import PROFILES
from tests.integration.traffic import message, mixed

pytestmark = pytest.mark.integration


def test_observe_passes_everything_through_and_still_judges(tmp_path: Path) -> None:
    report = run_scenario(PROFILES["NATS"], tmp_path, 700, policy="observe")
    log = report.pop("gateway_log_tail")
    assert report["valid"]["arrived"] == 700 and report["valid"]["missing"] == 0, log
    assert report["dlq"]["arrived"] == 0 and report["unknown"]["arrived"] == 0
    # the verdicts are still counted: the summary names every class
    assert "nonconformant=" in log and "unmatched=" in log


def test_reject_over_http_answers_422_with_the_violations(tmp_path: Path) -> None:
    world = prepare(PROFILES["HTTP"], tmp_path, policy="reject")
    url = world.config("in").uris[0]
    good, bad = message("HTTP", 1, "ok-structured"), message("HTTP", 2, "bad-structured")

    async def post(record: dict[str, object]) -> tuple[int, dict[str, object]]:
        envelope = envelope_from_record(record)
        async with aiohttp.ClientSession() as session:
            for _ in range(100):
                try:
                    async with session.post(url, data=envelope.body, headers=envelope.fields["headers"]) as response:
                        return response.status, json.loads(await response.read() or b"{}")
                except aiohttp.ClientConnectorError:
                    await asyncio.sleep(0.1)  # the gateway is still starting
        raise AssertionError("gateway never answered")

    async def scenario() -> tuple[tuple[int, dict[str, object]], tuple[int, dict[str, object]]]:
        from tests.integration.harness import Collector
        async with Collector(world):
            gateway = Gateway(world.config_dir)
            try:
                return await post(good), await post(bad)
            finally:
                assert gateway.stop() == 0
    (good_status, good_body), (bad_status, bad_body) = asyncio.run(scenario())
    assert good_status == 202 and good_body["verdict"] == "conformant"
    assert bad_status == 422 and bad_body["verdict"] == "nonconformant"
    assert bad_body["messageid"] == "reading"
    assert [v["rule"] for v in bad_body["violations"]] == ["schema"]  # type: ignore[union-attr]


def test_replay_then_capture_gives_back_the_recorded_messages(tmp_path: Path) -> None:
    world = prepare(PROFILES["NATS"], tmp_path)
    records = mixed("NATS", 60)
    recorded = tmp_path / "recorded.jsonl"
    recorded.write_text("".join(json.dumps(r) + "\n" for r in records))
    replay = subprocess.run([sys.executable, "-m", "gateway.cli", "replay", "--config", str(world.config_dir),
                             "--endpoint", "in", str(recorded)], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert replay.returncode == 0, replay.stderr
    assert "60 messages sent to in" in replay.stderr
    captured = tmp_path / "captured.jsonl"
    capture = subprocess.run([sys.executable, "-m", "gateway.cli", "capture", "--config", str(world.config_dir),
                              "--endpoint", "in", "--count", "60", "--timeout", "60", "-o", str(captured)],
                             capture_output=True, text=True, cwd=REPO, timeout=120)
    assert capture.returncode == 0, capture.stderr
    lines = [json.loads(line) for line in captured.read_text().splitlines()]
    assert len(lines) == 60
    sent = sorted((envelope_from_record(r).body, sorted(envelope_from_record(r).fields["headers"])) for r in records)
    got = sorted((envelope_from_record(r).body, sorted(envelope_from_record(r).fields["headers"])) for r in lines)
    assert got == sent
    # and the captured file is judged exactly like the original
    check = [subprocess.run([sys.executable, "-m", "gateway.cli", "check", "--registry", str(world.config_dir), str(f)],
                            capture_output=True, text=True, cwd=REPO, timeout=120) for f in (recorded, captured)]
    verdicts = [sorted(line for line in c.stdout.splitlines()) for c in check]
    assert verdicts[0] == verdicts[1]
