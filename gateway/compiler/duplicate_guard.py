"""The duplicate-member guard of the native accepting pass (validation rule 5.7: a member named twice is `decode`).

msgspec, like orjson, keeps the last of two members of one name silently, so a decoded value cannot show a
duplicate; the text has to. Two exact tests, the cheap one first:

- Text without a backslash has no escapes, so each `"` opens or closes a string: member names and string
  values. A member that was dropped took at least its name's two quotes with it, so the text holds no
  duplicate exactly when its quotes are twice the strings of the decoded value. Those are counted from the
  Struct's types (`quotes_of`), mostly fixed at compile time: present optional members and list lengths
  are all that vary. No float is formatted (a re-encoding spends most of its time there).
- Otherwise (escapes), without a `\\u` escape (the only way to write a colon that is not one), each member
  has one `:` outside strings, and the colons inside strings are the same in the text and in the value's
  re-encoding: equal counts mean no member was dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

import msgspec
import msgspec.inspect as mi

from gateway.errors import GatewayError

_UNSET = msgspec.UNSET
_encode = msgspec.json.encode
_SCALARS = (mi.IntType, mi.FloatType, mi.BoolType)
Counter = Callable[[Any], int]


def no_duplicates(body: bytes, value: Any, quotes_of: Counter | None) -> bool:
    """Whether the JSON text `body`, which msgspec decoded as `value`, names no member twice in one object."""
    if quotes_of is not None and b"\\" not in body:
        return body.count(b'"') == quotes_of(value)
    if b"\\u" in body:
        return False  # not decided here: the caller reads the text the full judge's way
    return body.count(b":") == _encode(value).count(b":")


def _is_text(kind: Any) -> bool:
    return isinstance(kind, mi.StrType) or isinstance(kind, mi.LiteralType) and \
        all(isinstance(v, str) for v in kind.values)


def _several(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    # attrgetter of one name answers the value, not a tuple of one: ask for it twice and count half
    return attrgetter(*names) if len(names) > 1 else attrgetter(names[0], names[0])


def quote_counter(struct: Any) -> Counter | None:
    """The number of quotes the JSON text of a decoded `struct` value has (tag included), or None when a member's
    type is not one this counts (then `no_duplicates` compares colons)."""
    info = mi.type_info(struct)
    if not isinstance(info, mi.StructType):
        return None
    try:
        return _struct_counter(info)
    except _Uncountable:
        return None


class _Uncountable(GatewayError):
    pass


def _dynamic(kind: Any) -> tuple[str, Counter | None]:
    if isinstance(kind, mi.ListType):
        item = kind.item_type
        if _is_text(item):
            return "texts", None
        if isinstance(item, _SCALARS):
            return "scalars", None
        if isinstance(item, mi.StructType):
            return "structs", _struct_counter(item)
    elif isinstance(kind, mi.StructType):
        return "struct", _struct_counter(kind)
    elif isinstance(kind, mi.RawType):
        return "raw", None
    raise _Uncountable(repr(kind))


def _struct_counter(info: Any) -> Counter:
    fixed = 4 if info.tag_field is not None else 0  # "type": "value"
    optional_texts: list[str] = []
    optional_scalars: list[str] = []
    dynamic: list[tuple[Callable[[Any], Any], bool, str, Counter | None]] = []
    for field in info.fields:
        kind = field.type
        if _is_text(kind) or isinstance(kind, _SCALARS):
            quotes = 4 if _is_text(kind) else 2
            if field.required:
                fixed += quotes
            else:
                (optional_texts if quotes == 4 else optional_scalars).append(field.name)
        else:
            shape, inner = _dynamic(kind)
            fixed += 2 if field.required else 0
            dynamic.append((attrgetter(field.name), field.required, shape, inner))
    texts = _several(optional_texts) if optional_texts else None
    scalars = _several(optional_scalars) if optional_scalars else None
    text_slots, scalar_slots = len(optional_texts), len(optional_scalars)
    members = tuple(dynamic)

    def count(value: Any) -> int:
        total = fixed
        if texts is not None:
            found = texts(value)
            total += 4 * (text_slots - found.count(_UNSET) // (2 if text_slots == 1 else 1))
        if scalars is not None:
            found = scalars(value)
            total += 2 * (scalar_slots - found.count(_UNSET) // (2 if scalar_slots == 1 else 1))
        for get, required, shape, inner in members:
            member = get(value)
            if member is _UNSET:
                continue
            if not required:
                total += 2
            if shape == "texts":
                total += 2 * len(member)
            elif shape == "struct":
                total += inner(member)  # type: ignore[misc]
            elif shape == "structs":
                total += sum(map(inner, member))  # type: ignore[arg-type]
            elif shape == "raw":
                total += bytes(member).count(b'"')
        return total

    return count
