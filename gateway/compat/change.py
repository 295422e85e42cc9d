"""One difference between two contracts, whom it breaks, and the compatibility modes that refuse it.

Whom a change breaks, in a gateway's terms: **producers** when the new contract refuses a message the old one
accepted (it tightens: what producers send today is dead-lettered tomorrow), **consumers** when it accepts a
message the old one refused (it loosens: consumers meet what they were promised they would not), **both** when
it does both or keeps bytes valid but changes what they mean (an Avro enum symbol removed, so the symbols after
it shift), **nobody** when no verdict can change (a description, a `format`, which xgate reads as an annotation).

The modes are Confluent Schema Registry's, read for a contract: `backward` (the new contract accepts what the
old one did: consumers on the new contract read everything already produced) refuses changes that break
producers; `forward` (the old contract accepts what the new one admits: consumers not yet upgraded read what
is produced under the new one) refuses changes that break consumers; `full` refuses both; `none` nothing.
Each `-transitive` form also compares the new payload schema with every earlier version the registry holds.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any

import orjson


class Breaks(enum.Enum):
    PRODUCERS = "producers"
    CONSUMERS = "consumers"
    BOTH = "both"
    NOBODY = "nobody"

    @staticmethod
    def of(tightens: bool, loosens: bool) -> Breaks:
        if tightens and loosens:
            return Breaks.BOTH
        if tightens:
            return Breaks.PRODUCERS
        return Breaks.CONSUMERS if loosens else Breaks.NOBODY


class Mode(enum.Enum):
    BACKWARD = "backward"
    FORWARD = "forward"
    FULL = "full"
    NONE = "none"
    BACKWARD_TRANSITIVE = "backward-transitive"
    FORWARD_TRANSITIVE = "forward-transitive"
    FULL_TRANSITIVE = "full-transitive"

    @property
    def transitive(self) -> bool:
        """Compared with every earlier version of a payload schema the registry holds, not only the last."""
        return self.value.endswith("-transitive")

    def refuses(self, breaks: Breaks) -> bool:
        base = self.value.removesuffix("-transitive")
        if breaks is Breaks.NOBODY or base == "none":
            return False
        if base == "full" or breaks is Breaks.BOTH:
            return True
        return breaks is (Breaks.PRODUCERS if base == "backward" else Breaks.CONSUMERS)


@dataclass(frozen=True)
class Change:
    """`definition` is `group/message`; `path` where in it (`envelopemetadata.type`, `dataschema:/currency`)."""

    definition: str
    path: str
    kind: str  # what changed, one word a report can group by: required, type, enum, removed, ...
    breaks: Breaks
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"definition": self.definition, "path": self.path, "kind": self.kind, "breaks": self.breaks.value,
                "reason": self.reason}


def canonical(value: Any) -> str:
    """A document value as text that compares equal exactly when the values do (keys sorted); integers past
    64 bits or values YAML reads beyond JSON, which orjson refuses, through json."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return json.dumps(value, sort_keys=True, default=str)
