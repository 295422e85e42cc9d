"""Keep the cyclic garbage collector's full passes off what lives as long as the process.

Messages in flight make the collector run a full pass every few seconds under load, and a full pass walks
every tracked object: the imported modules, the loaded documents and the compiled ruleset, ~55,000 objects
for the reference workload, ~27 ms in which the event loop judges and acknowledges nothing (the tail of the
added latency). Moving them to the permanent generation (`gc.freeze`) once they exist leaves the passes with
what messages allocate.

What loading and compiling build is frozen as the collector's pause around them ends (gateway/collector.py),
so no pass walks a new ruleset; a reload thaws and collects only every FULL_PASS_EVERY-th time (resettle).

Settling also hands the C heap's free pages back to the system (glibc's `malloc_trim`). Compiling builds
a jsonschema-rs validator per schema to report a bad one at load time and drops it: 1,000 schemas left
2.3 MiB of freed pages in the process's RSS, 30% of what the compiled definitions hold, and a reload that
replaced a large registry kept the old one's pages (issue 35, item 10).
"""

from __future__ import annotations

import ctypes
import gc
import sys

FULL_PASS_EVERY = 10
_reloads = 0
# Python's default (700, 10, 10) collects the young generation every 700 net container allocations: a route's
# batches in flight (their records, verdicts, envelopes) went through 2,200 young, 200 middle and 20 full passes
# in 200,000 messages, 7.7% of the route's CPU, and the route ran 10% faster per message at 50,000 (CPU per
# message over 6 alternated rounds on in-memory adapters, bench.console's loop). Messages are freed as they
# settle, so the net count rarely reaches 50,000: young passes become rare and walk at most that many objects
# (a few milliseconds), and what little garbage sits in reference cycles waits at most that long.
THRESHOLDS = (50_000, 20, 100)


def settle() -> None:
    """After startup: collect what loading left behind, exempt the rest from later passes, and let the young
    generation grow to THRESHOLDS[0] net allocations before it is collected."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
    _return_free_pages()


def _return_free_pages() -> None:
    """glibc's malloc_trim(0), looked up among the symbols the process already has (as workers.py looks up
    prctl): `ctypes.util.find_library` would run ldconfig in a subprocess on every reload. Nothing where the
    C library has no malloc_trim (musl, macOS)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)


def resettle() -> None:
    """After a reload: freeze what is current (the new ruleset is frozen already, collector.py), and every
    FULL_PASS_EVERY reloads thaw and collect first.

    The replaced ruleset is freed as its last reference goes: measured, loading, compiling and lowering leave
    no reference cycles but a few dozen objects per compile (classes Protobuf and msgspec make, a recursive
    closure), and frozen objects in cycles are never collected. The full pass that reclaims those walks every
    object the new ruleset holds, 0.26 s with the event loop held for 5,000 definitions: once in
    FULL_PASS_EVERY reloads, what they leave behind stays bounded and the other reloads pause nothing."""
    global _reloads
    _reloads += 1
    if _reloads % FULL_PASS_EVERY == 0:
        gc.unfreeze()
        gc.collect()
    gc.freeze()
    _return_free_pages()
