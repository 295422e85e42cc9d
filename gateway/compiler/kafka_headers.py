"""Kafka binary-mode CloudEvents attributes, read the way gateway/cloudevents.py `read_binary` reads them,
at the cost of one dict and one comprehension per message (the accepting pass's reader).

A message's header names repeat from message to message: what they say (which headers are `ce_`
attributes, which one carries the content type) is worked out once per tuple of names and remembered in a
bounded memo. Whatever this reader cannot read exactly as `read_binary` does (a name repeated, two spellings
of `content-type`, a null or non-UTF-8 value, a header that is not a string name) answers None: the caller
reads the message the full judge's way.
"""

from __future__ import annotations

from typing import Any

_MEMO_LIMIT = 1024


class _Layout:
    __slots__ = ("attributes", "content_type")

    def __init__(self, names: tuple[Any, ...]) -> None:
        # (header, attribute) of every `ce_` header, in header order (Kafka names are case-sensitive)
        self.attributes = tuple((name, name[3:]) for name in names if name[:3] == "ce_")
        spelled = [name for name in names if len(name) == 12 and name.lower() == "content-type"]
        self.content_type: str | None = spelled[0] if spelled else None


_LAYOUTS: dict[tuple[Any, ...], _Layout | None] = {}
_EMPTY = _Layout(())


def _layout(names: tuple[Any, ...]) -> _Layout | None:
    known = _LAYOUTS.get(names, False)
    if known is not False:
        return known  # type: ignore[return-value]
    layout = None
    if all(name.__class__ is str for name in names) and \
            sum(1 for name in names if len(name) == 12 and name.lower() == "content-type") <= 1:
        layout = _Layout(names)
    if len(_LAYOUTS) >= _MEMO_LIMIT:
        _LAYOUTS.clear()
    _LAYOUTS[names] = layout
    return layout


_NOT_READ: Any = object()


def read_kafka(headers: Any) -> tuple[dict[str, Any], _Layout | None, Any]:
    """(headers by name, their layout, the protocol content type or None); the layout is None, and the
    content type _NOT_READ, when the headers are not plain and distinct: read them the full judge's way."""
    if not headers:
        return {}, _EMPTY, None
    try:
        by_name = dict(headers)
    except (TypeError, ValueError):
        return {}, None, _NOT_READ
    layout = _layout(tuple(by_name)) if len(by_name) == len(headers) else None
    if layout is None:
        return by_name, None, _NOT_READ
    name = layout.content_type
    if name is None:
        return by_name, layout, None
    value = by_name[name]
    if value.__class__ is bytes:
        try:
            return by_name, layout, value.decode()
        except UnicodeDecodeError:
            return by_name, layout, None  # not text: no content type, as protocol_content_type reads it
    if value is None or value.__class__ is str:
        return by_name, layout, value
    return by_name, None, _NOT_READ


def kafka_attributes(by_name: dict[str, Any], layout: _Layout, content_type: str | None) -> dict[str, str] | None:
    """The `ce_` headers as attributes (text), or None when one is null, not UTF-8 or not bytes."""
    try:
        attributes = {attribute: by_name[name].decode() for name, attribute in layout.attributes}
    except (AttributeError, UnicodeDecodeError):
        return None
    if content_type is not None and "datacontenttype" not in attributes:
        attributes["datacontenttype"] = content_type
    return attributes
