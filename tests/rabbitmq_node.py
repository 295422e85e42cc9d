"""A RabbitMQ node of a test's own, on free ports (its own node name, mnesia, config and enabled-plugins file),
which deploy/brokers/rabbitmq.sh starts, restarts and checks when given its environment: a test may restart it, or
start it without the AMQP 1.0 plugin, while other tests use the shared node on 5672 beside it."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import free_port

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "deploy" / "brokers" / "rabbitmq.sh"


@contextmanager
def private_rabbitmq(*, amqp10: bool) -> Iterator[dict[str, str]]:
    """The node's environment for rabbitmq.sh and its CLI (XGATE_RABBITMQ_PORT: its AMQP port). With `amqp10`
    it is started by rabbitmq.sh (which waits for the AMQP 1.0 handshake); without, by rabbitmq-server alone,
    so that only AMQP 0-9-1 answers: the caller waits for its port."""
    if shutil.which("rabbitmq-server") is None:
        pytest.skip("rabbitmq-server not installed (make brokers)")
    name = f"xgate-test-{uuid.uuid4().hex[:8]}"
    home = Path("/tmp") / name  # the rabbitmq user must reach it: not a pytest tmp_path under /root
    (home / "mnesia").mkdir(parents=True)
    (home / "log").mkdir()
    port = free_port()
    (home / "rabbitmq.conf").write_text(f"listeners.tcp.local = 127.0.0.1:{port}\n")
    (home / "enabled_plugins").write_text("[rabbitmq_amqp1_0].\n" if amqp10 else "[].\n")
    subprocess.run(["chown", "-R", "rabbitmq:rabbitmq", str(home)], check=False)
    env = {"RABBITMQ_NODENAME": f"{name}@localhost", "RABBITMQ_NODE_PORT": str(port),
           "RABBITMQ_DIST_PORT": str(free_port()), "RABBITMQ_MNESIA_BASE": str(home / "mnesia"),
           "RABBITMQ_LOG_BASE": str(home / "log"), "RABBITMQ_CONFIG_FILE": str(home / "rabbitmq"),
           "RABBITMQ_ENABLED_PLUGINS_FILE": str(home / "enabled_plugins"), "RABBITMQ_PID_FILE": str(home / "pid"),
           "XGATE_RABBITMQ_PORT": str(port)}
    try:
        command = ["bash", str(SCRIPT), "start"] if amqp10 else ["rabbitmq-server", "-detached"]
        subprocess.run(command, env={**os.environ, **env}, check=True, timeout=180)
        yield env
    finally:
        subprocess.run(["rabbitmqctl", "-n", env["RABBITMQ_NODENAME"], "stop"], env={**os.environ, **env},
                       capture_output=True, check=False, timeout=120)
        shutil.rmtree(home, ignore_errors=True)
