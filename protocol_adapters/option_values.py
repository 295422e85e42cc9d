"""Reading option values the way documents and gateway.yaml write them, shared by the adapters' options."""

from __future__ import annotations

from typing import Any

_TRUE = ("true", "1", "yes")
_FALSE = ("false", "0", "no")


def read_flag(value: Any) -> bool | None:
    """A boolean written as true/false, or as the text true/false, 1/0, yes/no; None when it is none of those."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    return None
