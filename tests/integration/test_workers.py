"""`xgate run --workers 2` on real brokers: the workers share each source by the protocol's own means, so every
message is judged and delivered once (no worker sees another's share), and a worker killed mid-stream loses
nothing: its share goes to the other worker through the broker while the supervisor starts it again."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.harness import Collector, Gateway, Profile, World, account, prepare, publish, wait_until_live
from tests.integration.profiles import PROFILES
from tests.integration.traffic import mixed

pytestmark = pytest.mark.integration


def _children(pid: int) -> list[int]:
    """The worker processes of a supervisor, from /proc."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()] if path.exists() else []


def _wait_for_workers(gateway: Gateway, count: int, timeout: float = 60) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        children = _children(gateway.process.pid)
        if len(children) == count:
            return children
        time.sleep(0.2)
    raise AssertionError(f"the supervisor did not start {count} workers: {gateway.output()[-2000:]}")


async def _create_topic(world: World, partitions: int) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    config = world.config("in")
    admin = AIOKafkaAdminClient(bootstrap_servers=[u.split("://")[-1] for u in config.uris])
    await admin.start()
    try:
        await admin.create_topics([NewTopic(config.options["topic"], partitions, 1)])
    finally:
        await admin.close()


def _ready_within(gateway: Gateway, seconds: float) -> int:
    """The supervisor's /readyz once every worker has said ready, or its last answer at the deadline: a worker
    started on a loaded machine may answer its first probes late, and the supervisor probes once a second."""
    deadline = time.monotonic() + seconds
    while True:
        status, _ = gateway.scrape("/readyz")
        if status == 200 or time.monotonic() > deadline:
            return status
        time.sleep(0.5)


def _scenario(profile: Profile, tmp_path: Path, count: int, *, kill_after: int | None = None,
              partitions: int | None = None, rate: float = 800, console: bool = False) -> dict[str, Any]:
    world = prepare(profile, tmp_path)
    if console:  # the web console on every worker, reached through the supervisor's address
        path = world.config_dir / "gateway.yaml"
        path.write_text(path.read_text() + "console: {show_bodies: true}\n")
    records = mixed(profile.protocol, count)
    expected = world.expected(records)

    async def main() -> dict[str, Any]:
        if partitions:
            await _create_topic(world, partitions)
        async with Collector(world) as collector:
            gateway = Gateway(world.config_dir, "--workers", "2")
            killed: list[int] = []
            try:
                workers = await asyncio.to_thread(_wait_for_workers, gateway, 2)
                probes = await wait_until_live(world, collector)
                publishing = asyncio.create_task(publish(world, records, rate=rate))
                if kill_after is not None:
                    # mid-stream: once `kill_after` messages have come out, SIGKILL one worker
                    while sum(sum(c.values()) for c in collector.bodies.values()) < kill_after + len(probes):
                        await asyncio.sleep(0.05)
                    os.kill(workers[0], signal.SIGKILL)
                    killed.append(workers[0])
                    assert not publishing.done(), "the worker must die while traffic still flows"
                await publishing
                await collector.wait_for(expected, 180)
                status = await asyncio.to_thread(_ready_within, gateway, 30)
                console_page = gateway.scrape("/ui/routes") if console else None
            finally:
                code = gateway.stop()
            report = account(expected, collector, probes)
            report.update(exit=code, killed=killed, readyz=status, console=console_page, log=gateway.output()[-3000:],
                          restarted="exited with code -9; starting it again" in gateway.output())
            return report
    return asyncio.run(main())


def _assert_nothing_lost(report: dict[str, Any], *, duplicates_allowed: bool) -> None:
    for destination in ("valid", "dlq", "unknown"):
        numbers = report[destination]
        assert numbers["missing"] == 0, (destination, report)
        assert numbers["unexpected"] == 0, (destination, report)
        if not duplicates_allowed:
            assert numbers["duplicates"] == 0, (destination, report)
    assert report["exit"] == 0, report["log"]


def test_two_workers_share_a_kafka_group_and_lose_nothing_when_one_is_killed(tmp_path: Path) -> None:
    report = _scenario(PROFILES["KAFKA"], tmp_path, 6000, kill_after=1500, partitions=4)
    # the killed worker's unacknowledged messages come again from the broker: at least once, so some may twice
    _assert_nothing_lost(report, duplicates_allowed=True)
    assert report["killed"] and report["restarted"], report["log"]
    print("duplicates after the kill:", {d: report[d]["duplicates"] for d in ("valid", "dlq", "unknown")})


@pytest.mark.parametrize("protocol", ["MQTT/5.0", "NATS", "AMQP/1.0", "HTTP"])
def test_two_workers_share_each_source_once(protocol: str, tmp_path: Path) -> None:
    """Without sharing, two workers would each get every message and every destination would see it twice.
    With NATS, the console is on: the supervisor passes /ui to a worker, whose page shows its share."""
    report = _scenario(PROFILES[protocol], tmp_path, 1200, console=protocol == "NATS")
    _assert_nothing_lost(report, duplicates_allowed=False)
    assert report["readyz"] == 200, report["log"]  # the supervisor logs why a worker is not ready
    if report["console"] is not None:
        status, page = report["console"]
        assert status == 200 and "<h1>Routes</h1>" in page and 'data-route="in"' in page, report["log"]

