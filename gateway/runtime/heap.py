"""Keep the cyclic garbage collector's full passes off what lives as long as the process.

Messages in flight make the collector run a full pass every few seconds under load, and a full pass walks
every tracked object: the imported modules, the loaded documents and the compiled ruleset, ~55,000 objects
for the reference workload, ~27 ms in which the event loop judges and acknowledges nothing (the tail of the
added latency). Moving them to the permanent generation (`gc.freeze`) once they exist leaves the passes with
what messages allocate.
"""

from __future__ import annotations

import gc


def settle() -> None:
    """After startup: collect what loading left behind, then exempt the rest from later passes."""
    gc.collect()
    gc.freeze()


def resettle() -> None:
    """After a reload: the replaced ruleset was frozen too, and frozen objects in reference cycles are never
    collected, so thaw, collect it, and freeze what is current."""
    gc.unfreeze()
    settle()
