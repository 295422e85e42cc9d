"""The cyclic garbage collector paused while documents are loaded and compiled.

Loading builds hundreds of thousands of containers that all live on (the documents, then the compiled
rules), so every collection the allocations trigger walks a growing heap and frees nothing: for 5,000
definitions (11 MB of documents) collections took 40% of loading and compiling (1.9 s, 1.2 s paused).
The pause is process-wide and nests across threads (a reload compiles in a thread while the event loop runs):
the collector is set back as it was when the last pause ends, and what exists then is frozen first
(`gc.freeze`): otherwise the first collections after the pause walk everything it built, the young ones and
then the full one, 0.07-0.26 s each with every thread held for a 5,000-definition reload. What is frozen is
collected again at the next full pass over thawed objects (gateway/runtime/heap.py).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextlib.contextmanager
def paused() -> Iterator[None]:
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.freeze()
                gc.enable()
