"""The README names the two set-up commands; docs/operations.md lists every metric."""

from __future__ import annotations

from pathlib import Path

from gateway.metrics import names

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
OPERATIONS = (ROOT / "docs" / "operations.md").read_text()


def test_every_metric_is_listed_with_its_labels() -> None:
    for metric in names.ALL:
        row = next((line for line in OPERATIONS.splitlines() if line.startswith(f"| `{metric.name}` |")), None)
        assert row is not None, metric.name
        assert all(label in row for label in metric.labels), metric.name


def test_set_up_is_exactly_make_demo_and_make_test() -> None:
    block = README.split("## Set up", 1)[1].split("```", 2)[1]
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["make demo", "make test"]
