"""Where one verdict goes under a route's policy (forward | observe | reject | drop)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from gateway.bindings import BINDINGS
from gateway.routes.resolve import Route
from gateway.verdict import Verdict
from protocol_adapters.base import EndpointConfig

# protocols whose sources can refuse a message to its sender (HTTP 4xx, MQTT 5 PUBACK reason code)
REJECTING_PROTOCOLS = frozenset(protocol for protocol, binding in BINDINGS.items() if binding.rejects)


class Kind(str, Enum):
    CONFORMANT = "conformant"
    NONCONFORMANT = "nonconformant"
    UNMATCHED = "unmatched"


class Action(str, Enum):
    FORWARD = "forwarded"
    DEAD_LETTER = "deadlettered"
    REJECT = "rejected"
    DROP = "dropped"


@dataclass(frozen=True, slots=True)
class Decision:
    kind: Kind
    action: Action
    destination: EndpointConfig | None


def kind_of(verdict: Verdict) -> Kind:
    if verdict.conformant:
        return Kind.CONFORMANT
    # no definition named: the message is unknown on this endpoint, not an invalid instance of one
    return Kind.NONCONFORMANT if verdict.messageid is not None else Kind.UNMATCHED


def decide(route: Route, verdict: Verdict) -> Decision:
    return decide_kind(route, kind_of(verdict))


def decide_kind(route: Route, kind: Kind) -> Decision:
    """The decision for every verdict of this kind on this route (the pipeline decides once per route)."""
    if kind is Kind.CONFORMANT or route.policy == "observe":
        destination = route.conformant
        return Decision(kind, Action.FORWARD if destination else Action.DROP, destination)
    if route.policy == "drop":
        return Decision(kind, Action.DROP, None)
    if route.policy == "reject" and route.source.protocol in REJECTING_PROTOCOLS:
        return Decision(kind, Action.REJECT, None)
    destination = route.nonconformant if kind is Kind.NONCONFORMANT else route.unmatched
    return Decision(kind, Action.DEAD_LETTER if destination else Action.DROP, destination)
