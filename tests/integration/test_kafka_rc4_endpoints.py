"""KAFKA endpoints in the 1.0-rc4 form (`{"bootstrap.servers": [...]}`) on a real broker: `xgate replay` produces
through one and `xgate capture` consumes through another, with no `uri` anywhere (issue 19 item 1)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from gateway.cli import main
from tests.kafka_broker import PORT, shared_kafka

pytestmark = pytest.mark.integration


def test_replay_and_capture_through_rc4_bootstrap_servers(tmp_path: Path) -> None:
    shared_kafka()  # reuses the broker that answers already
    topic = f"xgate-rc4-{uuid.uuid4().hex[:10]}"
    servers = {"bootstrap.servers": [f"127.0.0.1:{PORT}"]}
    (tmp_path / "kafka.xreg.json").write_text(json.dumps({"endpoints": {
        "rc4.out": {"usage": ["producer"], "protocol": "KAFKA",
                    "protocoloptions": {"endpoints": [servers], "topic": topic}},
        "rc4.in": {"usage": ["consumer"], "protocol": "KAFKA",
                   "protocoloptions": {"endpoints": [servers], "topic": topic, "consumergroup": f"{topic}-g",
                                       "session_timeout_ms": 6000, "rebalance_timeout_ms": 6000}}}}))
    records = [{"protocol": "KAFKA", "topic": topic, "key": f"k-{i}", "headers": {"n": str(i)},
                "body": json.dumps({"i": i})} for i in range(3)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["replay", "--config", str(tmp_path), "--endpoint", "rc4.out", str(tmp_path / "in.jsonl")]) == 0
    out = tmp_path / "out.jsonl"
    assert main(["capture", "--config", str(tmp_path), "--endpoint", "rc4.in", "--count", "3", "--timeout", "90",
                 "-o", str(out)]) == 0
    captured = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted((c["key"], c["body"]) for c in captured) == [(r["key"], r["body"]) for r in records]
