"""Issue 17, defect 7: the demo starts every broker through deploy/brokers/*.sh, so a RabbitMQ that listens on its
port without the AMQP 1.0 plugin (as one started at boot) gets the plugin enabled and the AMQP route flows.

The RabbitMQ here is a private node on free ports (its own node name, mnesia, config and enabled-plugins file),
started without the plugin: the shared broker on 5672 is never touched.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.rabbitmq_node import private_rabbitmq

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
ROUTES = ("telemetry.in", "orders.http", "orders.queue", "facility.mqtt", "facility.nats")


def _open(port: int) -> bool:
    import socket
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def rabbitmq_without_plugin() -> Iterator[dict[str, str]]:
    with private_rabbitmq(amqp10=False) as env:
        port = int(env["XGATE_RABBITMQ_PORT"])
        deadline = time.monotonic() + 120
        while not _open(port):
            assert time.monotonic() < deadline, f"private RabbitMQ did not open {port}"
            time.sleep(0.5)
        status = subprocess.run(["bash", str(REPO / "deploy" / "brokers" / "rabbitmq.sh"), "status"],
                                env={**os.environ, **env}, check=False)
        assert status.returncode == 1, "the private node answers AMQP 1.0 already: the test would prove nothing"
        yield env


def test_demo_enables_the_amqp_plugin_and_every_route_flows(rabbitmq_without_plugin: dict[str, str],
                                                            tmp_path: Path) -> None:
    env = rabbitmq_without_plugin
    config = tmp_path / "demo"
    shutil.copytree(REPO / "config" / "demo", config)
    webhook = free_port()
    for document in config.glob("*.json"):
        document.write_text(document.read_text().replace("127.0.0.1:5672", f"127.0.0.1:{env['XGATE_RABBITMQ_PORT']}")
                            .replace("127.0.0.1:8088", f"127.0.0.1:{webhook}"))
    done = subprocess.run([sys.executable, "-m", "gateway.testing.demo", "--config", str(config), "--duration", "8",
                           "--rate", "100", "--metrics-address", f"127.0.0.1:{free_port()}"],
                          cwd=REPO, env={**os.environ, **env}, capture_output=True, text=True, timeout=600, check=False)
    output = done.stdout + done.stderr
    assert "enabling it" in done.stderr, output[-3000:]  # rabbitmq.sh saw the port open without AMQP 1.0
    assert done.returncode == 0, output[-4000:]
    for route in ROUTES:
        assert re.search(rf"^{re.escape(route)}\s+\d+\s+[1-9]", done.stdout, re.MULTILINE), (route, output[-3000:])
    assert "judged nothing" not in done.stderr


def test_an_unreachable_destination_is_shown_while_the_other_routes_flow_and_the_run_fails(tmp_path: Path) -> None:
    """AMQP endpoints on a port nothing listens on (the broker script itself checks the real 5672): the summary
    names the destination that is down with its error, the routes without AMQP keep judging, and the demo exits
    non-zero because the AMQP route judged nothing."""
    config = tmp_path / "demo"
    shutil.copytree(REPO / "config" / "demo", config)
    dead, webhook = free_port(), free_port()
    for document in config.glob("*.json"):
        document.write_text(document.read_text().replace("127.0.0.1:5672", f"127.0.0.1:{dead}")
                            .replace("127.0.0.1:8088", f"127.0.0.1:{webhook}"))
    # what the dead destination holds never settles: the demo's drain waits drain_timeout for it (twice), 15 s in
    # config/demo; a short one here, as judging is what is shown, not draining
    settings = config / "gateway.yaml"
    settings.write_text(settings.read_text().replace("drain_timeout: 15", "drain_timeout: 2"))
    assert "drain_timeout: 2\n" in settings.read_text()
    done = subprocess.run([sys.executable, "-m", "gateway.testing.demo", "--config", str(config), "--duration", "8",
                           "--rate", "100", "--metrics-address", f"127.0.0.1:{free_port()}"],
                          cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-4000:]
    assert "demo: route orders.queue judged nothing" in done.stderr, output[-4000:]
    final = done.stdout[done.stdout.rindex("xgate demo "):]
    assert re.search(rf"route orders.http: destination orders.accepted down: .*127.0.0.1:{dead}", final), final
    for route in ("telemetry.in", "facility.mqtt", "facility.nats"):
        assert re.search(rf"^{re.escape(route)}\s+\d+\s+[1-9]", final, re.MULTILINE), (route, final)
