"""`xgate infer`: draft contracts from recorded traffic (draft.py), with payload schemas (schema.py) and
placeholder templates (templates.py) proposed from what the samples show."""

from __future__ import annotations

from gateway.infer.draft import Inference, infer

__all__ = ["Inference", "infer"]
