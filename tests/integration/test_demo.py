"""`make demo` as a newcomer runs it, bounded in time: traffic flows through every route and every verdict shows."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration


def test_make_demo_runs_for_a_bounded_time_and_shows_every_verdict() -> None:
    done = subprocess.run(["make", "-s", "demo", "DEMO_ARGS=--duration 12 --rate 150"], cwd=REPO,
                          capture_output=True, text=True, timeout=600, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    totals = re.search(r"^demo: published ([\d,]+), judged ([\d,]+): conformant=(\d+) nonconformant=(\d+) "
                       r"unmatched=(\d+); dead-lettered ([\d,]+)$", done.stdout, re.MULTILINE)
    assert totals, output[-4000:]
    published, judged, conformant, nonconformant, unmatched, dead = (int(g.replace(",", "")) for g in totals.groups())
    refused = re.findall(r"\(([\d,]+) refused: HTTP 422", done.stdout)  # the final summary's figure is the last
    refused_count = int(refused[-1].replace(",", "")) if refused else 0
    assert published > 500 and conformant and nonconformant and unmatched and dead, totals.group(0)
    # at least once: a Kafka offset not yet committed when an earlier run stopped is judged again in this one
    assert judged == conformant + nonconformant + unmatched >= published + refused_count, totals.group(0)
    # every route of config/demo took traffic, and a dead-lettered message was shown with its reason
    for route in ("telemetry.in", "orders.http", "orders.queue", "facility.mqtt", "facility.nats"):
        assert re.search(rf"^{re.escape(route)}\s+\d+\s+[1-9]", done.stdout, re.MULTILINE), route
    final = done.stdout[done.stdout.rindex("xgate demo "):done.stdout.rindex("\ndemo: published")]
    assert "latest dead-lettered message" in final and "(none yet)" not in final, final
