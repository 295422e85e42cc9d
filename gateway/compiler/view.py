"""MessageView: what the constraints of one definition read from one message (or one batch event)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.cloudevents import CloudEventReading
from gateway.envelope import Envelope


@dataclass(slots=True)
class MessageView:
    envelope: Envelope
    # None when the endpoint has no CloudEvents definitions and nothing was read
    event: CloudEventReading | None
    protocol_content_type: str | None
    # payload results by (validator, reading): sibling definitions often share one compiled schema, and a
    # failed message is judged twice (the boolean pass, then the explanation), so each schema reads it once
    payload_results: dict[object, Any] = field(default_factory=dict)
    # validation rule 5.7: a JSON payload naming one member twice is `decode` (Limits.reject_duplicate_keys)
    unique_keys: bool = True
    # validators (by id) the accepting pass found this payload to fail: they explain in one detailed pass
    failing_payloads: frozenset[int] = frozenset()
    # the body as JSON, when the accepting pass already parsed it (binary mode, `unique_keys` as above):
    # a failing payload is then explained without parsing it again
    parsed_body: Any = None

    @property
    def fields(self) -> dict[str, Any]:
        return self.envelope.fields
