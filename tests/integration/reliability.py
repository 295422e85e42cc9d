"""The Reliability table of docs/reliability.md: each fault test leaves its accounting in build/reliability/<test>.json,
and `python -m tests.integration.reliability` prints them as one Markdown table."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "build" / "reliability"
DESTINATIONS = ("valid", "dlq", "unknown")


def record(test: str, fault: str, report: dict[str, Any], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write one fault test's figures: sent, delivered (first copies), duplicated, lost, recovery time."""
    row = {
        "fault": fault,
        "sent": sum(report[d]["expected"] for d in DESTINATIONS),
        "delivered": sum(report[d]["arrived"] - report[d]["duplicates"] - report[d]["unexpected"]
                         for d in DESTINATIONS),
        "duplicated": sum(report[d]["duplicates"] for d in DESTINATIONS),
        "lost": sum(report[d]["missing"] for d in DESTINATIONS),
        "recovery_seconds": report.get("recovery_seconds"),
        **(extra or {}),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{test}.json").write_text(json.dumps(row, indent=1) + "\n")
    return row


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| fault | sent | delivered | duplicated | lost | recovery |", "|---|---:|---:|---:|---:|---:|"]
    for row in rows:
        recovery = "-" if row["recovery_seconds"] is None else f"{row['recovery_seconds']:.1f} s"
        lines.append(f"| {row['fault']} | {row['sent']} | {row['delivered']} | {row['duplicated']} | "
                     f"{row['lost']} | {recovery} |")
    return "\n".join(lines)


def main() -> int:
    files = sorted(RESULTS.glob("*.json"))
    if not files:
        print(f"no results in {RESULTS}: run `pytest tests/integration/test_faults.py` first", file=sys.stderr)
        return 1
    print(table([json.loads(f.read_text()) for f in files]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
