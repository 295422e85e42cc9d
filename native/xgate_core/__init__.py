"""xgate's native judging core (native/src): `Core` judges a batch of Kafka records against a lowered plan
(gateway/compiler/lower.py writes it; gateway/compiler/core.py is the Python face that uses it)."""

from xgate_core._core import PLAN_VERSION, Core

__all__ = ["PLAN_VERSION", "Core"]
