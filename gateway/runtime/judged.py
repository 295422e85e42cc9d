"""One message of a batch on its way through a route (gateway/runtime/pipeline.py, record_lane.py): its
verdict and decision, its dead-letter headers, and where it landed."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from gateway.envelope import Envelope
from gateway.runtime.router import Decision
from gateway.verdict import Verdict


class Landing(Enum):
    """Where one message ended up after its delivery (Pipeline `deliver`)."""

    SENT = "sent"  # its destination confirmed it
    DEAD_LETTERED = "dead-lettered"  # its destination refused it for good; the dead-letter destination took it
    DROPPED = "dropped"  # refused everywhere it could go: counted, logged and acknowledged
    KEPT = "kept"  # not delivered: released at the source


@dataclass(slots=True)
class Judged:
    """One message of a batch on its way: what was decided, and whether its destination confirmed it."""

    envelope: Envelope
    verdict: Verdict | None = None
    decision: Decision | None = None
    headers: list[tuple[str, str]] | None = None
    delivered: bool = True
    landing: Landing = Landing.SENT
    settled: bool = False  # acknowledged or released at the source
    # the Kafka record as the consumer gave it, when a record lane (record_lane.py) judged it: a sink that takes
    # records (KafkaSink `send_records`) sends it with its `headers` added, no Envelope re-mapped for it
    record: Any = None
