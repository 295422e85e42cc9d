"""The exit codes of every `xgate` command (validation rule 7 fixes those of `check`)."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    # the command did its work and the answer is no: a message is not conformant (check, explain, spark --batch),
    # a contract tightens (diff), a document has an error (lint); or the work failed on the way (run, capture,
    # replay, spark: a broker refused, a query died)
    FAILED = 1
    NONCONFORMANT = 1  # the same code, named as the judging commands mean it
    # refused before any work: bad arguments, settings or routes, nothing compiled, an endpoint that contradicts
    # its broker; `run --workers N` reads a worker's exit 2 at startup as this
    USAGE = 2
