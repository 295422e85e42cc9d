"""A second `xgate run` follows the first one's /registry (gateway.yaml `sources:`) and judges by it.

Both gateways are real processes on HTTP endpoints (no broker needed). The follower's own documents hold only
its HTTP ingress endpoint, which names the message group by xid; the definitions come from the first gateway.
Its route rejects nonconformant messages, so each POST answers with the verdict: 202 conformant, 422 not.
What is proved: the follower judges by the followed registry from its start, and an edit in the first
gateway's directory changes the follower's verdict within its poll interval plus a small margin (the delay,
measured from the first gateway serving the edit, is printed).
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import free_port
from tests.integration.harness import Gateway, prepare
from tests.integration.profiles import PROFILES
from tests.integration.test_registry_api import get
from tests.integration.test_reload import until

pytestmark = pytest.mark.integration
CE = "CloudEvents/1.0"
TYPE = "com.example.it.follow"
INTERVAL = 1.0
# the follower's verdict must change while the gateways run; a loaded 2-core machine can stall a process for
# many seconds, so the test polls for it with a generous bound and reports how long it took
BOUND = 90.0


def group(source_template: str) -> dict[str, Any]:
    return {"messagegroups": {"it.follow": {"envelope": CE, "messages": {"reading": {
        "envelope": CE, "envelopemetadata": {"type": {"value": TYPE, "required": True},
                                             "source": {"type": "uritemplate", "value": source_template}}}}}}}


def follower_config(directory: Path, upstream: Gateway, port: int) -> Path:
    config = directory / "config"
    config.mkdir(parents=True)
    (config / "local.xreg.json").write_text(json.dumps({"endpoints": {"follow.in": {
        "usage": ["consumer"], "protocol": "HTTP", "envelope": CE,
        "protocoloptions": {"endpoints": [{"uri": f"http://127.0.0.1:{port}/follow"}]},
        "messagegroups": ["/messagegroups/it.follow"]}}}))
    (config / "gateway.yaml").write_text(yaml.safe_dump({
        "routes": [{"source": "follow.in", "policy": "reject"}],
        "remote": {"allow": ["127.0.0.1"], "timeout": 2},
        "sources": [{"url": f"http://127.0.0.1:{upstream.metrics_port}/registry", "interval": INTERVAL}]}))
    return config


def post(port: int, source: str) -> int:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/follow", data=b'{"v": 1}', method="POST", headers={
        "ce-specversion": "1.0", "ce-id": "1", "ce-type": TYPE, "ce-source": source,
        "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return 0


def test_a_gateway_follows_another_gateways_registry(tmp_path: Path) -> None:
    (tmp_path / "upstream").mkdir()
    world = prepare(PROFILES["HTTP"], tmp_path / "upstream")
    (world.config_dir / "follow.xreg.json").write_text(json.dumps(group("/first/{shard}")))
    upstream = Gateway(world.config_dir)
    follower: Gateway | None = None
    port = free_port()
    message = "/registry/messagegroups/it.follow/messages/reading"

    async def scenario() -> None:
        nonlocal follower
        await until(lambda: get(upstream, message)[0] == 200, 60, "the first gateway serving /registry")
        follower = Gateway(follower_config(tmp_path / "follower", upstream, port))
        await until(lambda: post(port, "/first/1") == 202, 60, "the follower accepting a conformant message")
        assert post(port, "/second/1") == 422  # judged by the followed definition

        (world.config_dir / "follow.xreg.json").write_text(json.dumps(group("/second/{shard}")))
        await until(lambda: get(upstream, message)[1]["envelopemetadata"]["source"]["value"] == "/second/{shard}",
                    30, "the first gateway reloading the edit")
        delay = await until(lambda: post(port, "/first/1") == 422, BOUND, "the follower's verdict changing")
        print(f"\nfollower verdict changed {delay:.2f} s after the first gateway served the edit "
              f"(poll interval {INTERVAL:g} s)")
        assert post(port, "/second/1") == 202
        # the reload's log line comes after its new rules take over (and after the registry API took the new
        # snapshot): the verdict can change before it is written
        assert follower is not None
        await until(lambda: '"reason": "source changed: ' in follower.output(), 30,
                    "the follower logging the reload with its reason")

    try:
        asyncio.run(scenario())
    finally:
        codes = [upstream.stop()] + ([follower.stop()] if follower is not None else [])
        assert codes == [0] * len(codes), upstream.output()[-3000:] + (follower.output()[-3000:] if follower else "")
