"""A real Prometheus scrapes a running gateway, and PromQL over xgate's metrics returns the expected rate."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import free_port
from tests.integration.harness import REPO, Collector, Gateway, prepare, publish, wait_until_live
from tests.integration.profiles import PROFILES
from tests.integration.traffic import message

pytestmark = pytest.mark.integration
RATE = 100  # messages per second
SECONDS = 14


def query(port: int, promql: str) -> list[dict[str, Any]]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=5) as response:
        body = json.loads(response.read())
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


@pytest.fixture(scope="module")
def prometheus_binary() -> str:
    installed = subprocess.run(["bash", str(REPO / "deploy" / "prometheus" / "install.sh")], capture_output=True,
                               text=True)
    if installed.returncode == 75:
        pytest.skip("no package registry reachable to install prometheus")
    assert installed.returncode == 0, installed.stderr
    return "prometheus"


def test_prometheus_scrapes_the_gateway_and_sees_the_rate(tmp_path: Path, prometheus_binary: str) -> None:
    world = prepare(PROFILES["NATS"], tmp_path)
    prometheus_port = free_port()

    async def scenario() -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
        async with Collector(world) as collector:
            gateway = Gateway(world.config_dir)
            config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                      "rule_files": [str(REPO / "deploy" / "prometheus" / "rules" / "xgate.rules.yml")],
                      "scrape_configs": [{"job_name": "xgate", "static_configs": [
                          {"targets": [f"127.0.0.1:{gateway.metrics_port}"]}]}]}
            (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
            prometheus = subprocess.Popen(
                [prometheus_binary, f"--config.file={tmp_path / 'prometheus.yml'}",
                 f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prometheus_port}"],
                stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prometheus.log", "w"))
            try:
                probes = await wait_until_live(world, collector)
                sent = 0
                started = time.monotonic()
                for second in range(SECONDS):  # a steady RATE of conformant messages
                    batch = [message("NATS", 100_000 + sent + i, "ok-binary") for i in range(RATE)]
                    await publish(world, batch)
                    sent += RATE
                    await asyncio.sleep(max(0.0, started + second + 1 - time.monotonic()))
                await asyncio.sleep(3)
                rate = query(prometheus_port, 'sum(rate(xgate_messages_total{job="xgate",endpoint="in",'
                                              'verdict="conformant"}[10s]))')
                total = query(prometheus_port, 'sum(xgate_messages_total{job="xgate",endpoint="in"})')
                return rate, total, sent + len(probes)
            finally:
                prometheus.terminate()
                prometheus.wait(30)
                assert gateway.stop() == 0
    rate, total, sent = asyncio.run(scenario())
    assert total and float(total[0]["value"][1]) == sent
    # the last 10 s window still holds the steady part (3 s idle at most): between half and 1.5x of RATE
    assert rate and RATE * 0.5 <= float(rate[0]["value"][1]) <= RATE * 1.5, rate
