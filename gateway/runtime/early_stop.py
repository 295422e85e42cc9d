"""A SIGTERM that arrives while a long-running command is still starting.

Loading, compiling and connecting take a second or more before the service puts its own signal handlers in
place (gateway/runtime/service.py, gateway/commands/proxy.py). Without this, a SIGTERM in that window ends
the process with 143 and nothing logged (issue 35). `catch` is called first thing (gateway/cli.py, before
the commands are imported, and again by the command): the signal is remembered, and the service, once it
runs, stops at once (draining nothing: nothing was taken yet) and exits 0 with a log line.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from types import FrameType

# the commands that run until stopped; every other one keeps SIGTERM's default (it ends the process)
LONG_RUNNING = ("run", "proxy")
_received: list[int] = []


def catch_for(argv: Sequence[str]) -> None:
    """`catch` when the command line runs a long-running command (called before the commands are imported,
    which alone takes half a second)."""
    if len(argv) > 1 and argv[1] in LONG_RUNNING:
        catch()


def catch() -> None:
    signal.signal(signal.SIGTERM, _remember)


def _remember(signum: int, _frame: FrameType | None) -> None:
    _received.append(signum)


def requested() -> bool:
    """Whether a SIGTERM came before the service's own handlers took over."""
    return bool(_received)
