"""The explaining pass: only for a message that failed, the closest candidate and its violations
(validation rule 6).

The closest candidate has the fewest violations; candidates come in rank order, so on a tie the earlier one
stays. A candidate's violations are counted only until it can no longer be closer than the best so far
(`violations(view, limit)`), so a failed message costs one full explanation plus a few checks of its
siblings, not every check of every candidate. Payload validators explain from their detailed pass, whose
result is shared by every candidate with the same schema (MessageView.payload_results).
"""

from __future__ import annotations

from gateway.compiler.definition import CompiledDefinition
from gateway.compiler.view import MessageView
from gateway.verdict import Outcome, Rule, Verdict, Violation


def explain_failure(candidates: tuple[CompiledDefinition, ...], view: MessageView, certain: bool = True,
                    payload_only: bool = False) -> Verdict:
    """The verdict of a message the accepting pass did not accept: the nonconformant verdict naming the closest
    candidate, or no candidate (`no-match`). `certain`: every candidate is known to fail. Otherwise a candidate
    may pass: the first in rank order without violations is the conformant verdict, exactly as the full
    judge's first passing candidate (every check of it runs; of the others, only until one violation).
    `payload_only`: the first candidate fails on its payload alone (every other check of it was seen to pass)."""
    if not candidates:
        return _unknown(view)
    best, fewest = candidates[0], candidates[0].violations(view, payload_only=payload_only)
    for definition in candidates[1:]:
        if not fewest or certain and len(fewest) <= 1:
            break  # one passes; or each failed candidate has a violation: none after it can be closer
        # past len(fewest) - 1 violations this candidate cannot be closer: stop counting there
        violations = definition.violations(view, len(fewest))
        if len(violations) < len(fewest):
            best, fewest = definition, violations
    if not fewest:  # the first candidate in rank order without violations passes: never hide it
        return Verdict(Outcome.CONFORMANT, best.groupid, best.messageid)
    return Verdict(Outcome.NONCONFORMANT, best.groupid, best.messageid, fewest)


def _unknown(view: MessageView) -> Verdict:
    event = view.event
    if event is not None and event.problem is not None:
        return Verdict(Outcome.NONCONFORMANT, None, None, (event.problem,))
    actual = event.attributes.get("type") if event is not None else None
    return Verdict(Outcome.NONCONFORMANT, None, None, (Violation(
        "envelopemetadata.type" if event is not None else "", Rule.NO_MATCH, "a declared message definition",
        actual, "no message definition of this endpoint applies to the message"),))
