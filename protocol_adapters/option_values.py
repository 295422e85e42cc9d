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


def user_info_refusal(uri: str) -> str | None:
    """Why a broker uri may not be used as written: it carries credentials (`scheme://user:secret@host`).

    Credentials come only from the settings (`username`, `password`, `password_file`), so that they are
    never written into a document or a uri that ends up in logs; the message shows the uri without them."""
    scheme, sep, rest = uri.partition("://")
    authority = rest.split("/", 1)[0] if sep else ""
    if "@" not in authority:
        return None
    hidden = f"{scheme}://***@{rest.split('@', 1)[1]}"
    return (f"uri {hidden!r} carries credentials: give them as username and password (or password_file) "
            "in gateway.yaml instead")
