"""What the collector walks around a reload (gateway/collector.py, gateway/runtime/heap.py): what a paused
section built is frozen as the pause ends, so no collection walks a new ruleset; reloads freeze without a
pass, and every FULL_PASS_EVERY-th thaws and collects, so what reloads leave in reference cycles is reclaimed."""

from __future__ import annotations

import gc
from typing import Any

from gateway import collector
from gateway.runtime import heap


class _Cycle:
    def __init__(self) -> None:
        self.me: Any = self


def test_what_a_pause_built_is_frozen_when_it_ends() -> None:
    gc.collect()
    before = gc.get_freeze_count()
    try:
        with collector.paused():
            assert not gc.isenabled()
            built = [[n] for n in range(1000)]  # lists: always tracked (a dict of plain values may not be)
        assert gc.isenabled() and gc.get_freeze_count() >= before + 1000
        young = gc.get_objects(generation=0) + gc.get_objects(generation=1) + gc.get_objects(generation=2)
        assert all(item is not built for item in young)
    finally:
        gc.unfreeze()


def test_every_tenth_reload_collects_what_earlier_ones_froze_in_cycles() -> None:
    gc.collect()
    heap._reloads = 0
    try:
        with collector.paused():
            cycle = _Cycle()  # what a compile leaves in a cycle, frozen as the pause ends
        del cycle  # garbage now, but frozen: no ordinary pass reaches it
        for _ in range(heap.FULL_PASS_EVERY - 1):
            heap.resettle()
            assert _cycles() == 1
        heap.resettle()  # the tenth: thawed and collected
        assert _cycles() == 0
    finally:
        gc.unfreeze()
        heap._reloads = 0


def _cycles() -> int:
    """_Cycle objects alive or uncollected, frozen ones included (gc lists the permanent generation only once
    it is thawed)."""
    gc.unfreeze()
    found = sum(1 for o in gc.get_objects() if isinstance(o, _Cycle))
    gc.freeze()
    return found


def test_settling_raises_the_young_generations_threshold() -> None:
    before = gc.get_threshold()
    try:
        heap.settle()
        assert gc.get_threshold() == heap.THRESHOLDS and heap.THRESHOLDS[0] >= 10_000
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
