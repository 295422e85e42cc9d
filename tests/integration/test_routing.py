"""Per protocol: 10,000 mixed messages through `xgate run` on real brokers arrive exactly where `xgate check` says."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.integration.harness import run_scenario
from tests.integration.profiles import PROFILES

COUNT = int(os.environ.get("XGATE_IT_COUNT", "10000"))

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("protocol", list(PROFILES))
def test_every_message_arrives_where_check_says(protocol: str, tmp_path: Path) -> None:
    report = run_scenario(PROFILES[protocol], tmp_path, COUNT)
    log = report.pop("gateway_log_tail")
    summary = json.dumps(report, indent=1)
    assert report["gateway_exit"] == 0, f"{summary}\n{log}"
    for destination in ("valid", "dlq", "unknown"):
        counts = report[destination]
        assert counts["expected"] > 0, summary
        assert counts["missing"] == 0 and counts["unexpected"] == 0 and counts["duplicates"] == 0, f"{summary}\n{log}"
    assert sum(report[d]["arrived"] for d in ("valid", "dlq", "unknown")) == COUNT
