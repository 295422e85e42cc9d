"""The method every bench keeps (docs/performance.md): every candidate runs once a round, the order rotated by
one each round (so that none always runs first, on a cold cache, or last, after the others' garbage); a ratio
is taken within each round, between candidates that ran back to back; figures are the median over the rounds
with their range, and a target counts as met only when the median meets it."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import TypeVar

Name = TypeVar("Name")


def rotated(names: Sequence[Name], round_index: int) -> list[Name]:
    """`names` in the order of round `round_index`: shifted by one each round."""
    shift = round_index % len(names) if names else 0
    return [*names[shift:], *names[:shift]]


def per_round(numerators: Sequence[float], denominators: Sequence[float]) -> list[float]:
    """Each round's ratio (the two lists hold one figure per round, in round order)."""
    return [a / b for a, b in zip(numerators, denominators, strict=True)]


def summary(values: Sequence[float]) -> dict[str, float]:
    """Median and range over the rounds."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}
