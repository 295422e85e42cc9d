"""Issue 17, defect 6: a queue another client declared with other properties (RabbitMQ PRECONDITION_FAILED,
"inequivalent arg 'durable'") stops `xgate run` at startup with exit 2 and one line naming the endpoint, the queue,
the mismatch and the option that fixes it; `xgate capture` prints the same line; no traceback anywhere."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from gateway.envelope import Envelope
from protocol_adapters import registry
from protocol_adapters.base import EndpointConfig

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
URI = "amqp://127.0.0.1:5672"


def xgate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway.cli", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=120, check=False)


async def declare_transient(queue: str) -> None:
    """Another client's queue: declared non-durable (RabbitMQ declares a missing /queue/NAME on attach)."""
    config = EndpointConfig("other", "AMQP/1.0", (URI,), {"node": f"/queue/{queue}", "terminusdurable": False},
                            username="guest", password="guest")
    async with registry.create_sink(config) as sink:
        await sink.send(Envelope("AMQP/1.0", {}, b"{}"))


def test_a_queue_declared_with_other_properties_is_one_line_and_exit_2(tmp_path: Path) -> None:
    subprocess.run(["bash", str(REPO / "deploy" / "brokers" / "rabbitmq.sh"), "start"], check=True, timeout=300)
    queue = f"xgate-test-mismatch-{uuid.uuid4().hex[:8]}"
    asyncio.run(declare_transient(queue))
    config = tmp_path / "cfg"
    assert xgate("init", str(config), "amqp").returncode == 0
    document = config / "amqp.xreg.yaml"
    document.write_text(document.read_text().replace("node: /queue/events ", f"node: /queue/{queue} ")
                        .replace("/queue/events-", f"/queue/{queue}-"))
    run = xgate("run", "--config", str(config), "--metrics-address", "", "--duration", "60")
    assert run.returncode == 2, run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    lines = [line for line in run.stderr.splitlines() if line.startswith("xgate run:")]
    assert len(lines) == 1, run.stderr[-2000:]
    assert f"'amqp.in': queue '{queue}'" in lines[0] and "durable=false" in lines[0]
    assert "protocoloptions.terminusdurable: false" in lines[0]
    capture = xgate("capture", "--config", str(config), "--endpoint", "amqp.in", "--destructive", "--timeout", "30")
    assert capture.returncode == 1 and "Traceback" not in capture.stderr
    assert any(f"queue '{queue}'" in line and "terminusdurable" in line for line in capture.stderr.splitlines()
               if line.startswith("xgate capture:"))
