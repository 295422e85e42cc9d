"""`xgate diff --capture ENDPOINT --count N` on a real NATS JetStream: live messages judged under both registries,
read beside the gateway (an ephemeral consumer), so the gateway's durable consumer keeps every message."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from gateway.envelope import Envelope
from gateway.loader import load_snapshot
from gateway.routes.resolve import endpoint_config
from gateway.settings import load_settings
from protocol_adapters import registry
from tests.integration.harness import REPO, start_broker

pytestmark = pytest.mark.integration
COUNT = 40


def _event(number: int) -> Envelope:
    """Readings 0..39; the candidate lowers the maximum to 100, so values over 100 (every fourth) newly fail."""
    value = 120 if number % 4 == 0 else 20
    headers = [("ce-specversion", "1.0"), ("ce-type", "com.example.reading"), ("ce-id", str(number)),
               ("ce-source", f"/sites/s{number % 3}/sensors/t{number}"), ("ce-time", "2026-11-26T10:00:00Z"),
               ("Content-Type", "application/json")]
    return Envelope("NATS", {"subject": "events.reading", "headers": headers},
                    json.dumps({"value": value, "unit": "C"}).encode())


def test_diff_judges_live_messages_without_taking_them_from_the_gateway(tmp_path: Path) -> None:
    start_broker("nats")
    config = tmp_path / "cfg"
    subprocess.run([sys.executable, "-m", "gateway.cli", "init", str(config), "nats"], check=True, cwd=REPO,
                   capture_output=True)
    run = uuid.uuid4().hex[:8]
    endpoint = yaml.safe_load((config / "nats.xreg.yaml").read_text())
    for document_endpoint in endpoint["endpoints"].values():  # a stream and subjects of this run only
        options = document_endpoint["protocoloptions"]
        options["subject"] = options["subject"].replace("events", f"events{run}")
        options["stream"] = f"EV{run}".upper()
    (config / "nats.xreg.yaml").write_text(yaml.safe_dump(endpoint))
    candidate = tmp_path / "candidate"
    candidate.mkdir()
    for path in config.glob("*.xreg.yaml"):
        (candidate / path.name).write_text(path.read_text().replace("maximum: 150", "maximum: 100"))
    snapshot = load_snapshot([config])
    settings, _ = load_settings(config)
    source = endpoint_config(snapshot.registry, "nats.in", settings)

    target = replace(source, options={**source.options, "subject": f"events{run}.reading"})

    async def publish() -> None:
        async with registry.create_sink(target) as sink:
            for number in range(COUNT):
                event = _event(number)
                event.fields["subject"] = f"events{run}.reading"
                await sink.send(event)
    asyncio.run(publish())

    result = subprocess.run([sys.executable, "-m", "gateway.cli", "diff", "--registry", str(config), "--against",
                             str(candidate), "--capture", "nats.in", "--count", str(COUNT), "--timeout", "60",
                             "--format", "json"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr  # some messages would newly fail
    report = json.loads(result.stdout)
    assert report["messages"] == COUNT
    assert report["changed"] == {"tightened": COUNT // 4, "loosened": 0, "renamed": 0}

    async def still_there() -> int:  # the gateway's durable consumer was not touched: all of them wait for it
        got = 0
        async with registry.create_source(source) as reader:
            iterator = reader.__aiter__()
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(10):
                    while True:
                        await iterator.__anext__()
                        got += 1
        return got
    assert asyncio.run(still_there()) == COUNT
