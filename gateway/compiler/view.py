"""MessageView: what the constraints of one definition read from one message (or one batch event)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.cloudevents import CloudEventReading
from gateway.envelope import Envelope


@dataclass(slots=True)
class MessageView:
    envelope: Envelope
    # None when the endpoint has no CloudEvents definitions and nothing was read
    event: CloudEventReading | None
    protocol_content_type: str | None

    @property
    def fields(self) -> dict[str, Any]:
        return self.envelope.fields
