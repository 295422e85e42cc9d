"""Protocol option constraints: which message field each declared option reads (validation rule 4).

A getter returns `(values, text)`: every occurrence of the field (empty when
absent; headers may repeat) and whether the values are header text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gateway.bindings import OptionKind
from gateway.cloudevents import header_text
from gateway.compiler.view import MessageView
from gateway.loader.messages import normalize_propdef
from gateway.loader.names import binding_of

Getter = Callable[[MessageView], tuple[tuple[Any, ...], bool]]
NONE: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True)
class OptionConstraint:
    path: str
    getter: Getter
    propdef: dict[str, Any]
    # the type the protocol gives the field when the document names none
    default_type: str | None
    # what the getter reads, for the native core's plan (gateway/compiler/lower.py): a Kafka field (`topic`,
    # `partition`, `timestamp`, `key`, `key_base64`, `header`) or "" for another protocol's, and whether it
    # is read as header text
    reads: str = ""
    text: bool = False


def _field(name: str, text: bool = False) -> Getter:
    def get(view: MessageView) -> tuple[tuple[Any, ...], bool]:
        value = view.envelope.fields.get(name)
        return ((value,) if value is not None else NONE), text
    return get


def _pairs(field: str, name: str, casefold: bool, decode: bool = False) -> Getter:
    wanted = name.lower() if casefold else name

    def get(view: MessageView) -> tuple[tuple[Any, ...], bool]:
        pairs = view.envelope.fields.get(field) or ()
        if casefold:
            values = tuple(header_text(v) if decode else v for k, v in pairs if k.lower() == wanted and v is not None)
        else:
            values = tuple(header_text(v) if decode else v for k, v in pairs if k == wanted and v is not None)
        return values, True
    return get


def _section(section: str, name: str) -> Getter:
    def get(view: MessageView) -> tuple[tuple[Any, ...], bool]:
        value = (view.envelope.fields.get(section) or {}).get(name)
        if value is None:
            return NONE, False
        # an AMQP property arrives with its native type or as text (validation rule 5.7): text is read in its
        # canonical string form, so "2" is an integer and "true" a boolean, as 2 and true are
        return (value,), value.__class__ is str
    return get


def _kafka_key(as_base64: bool) -> Getter:
    import base64

    def get(view: MessageView) -> tuple[tuple[Any, ...], bool]:
        key = view.envelope.fields.get("key")
        if key is None:
            return NONE, True
        return ((base64.b64encode(key).decode("ascii") if as_base64 else header_text(key)),), True
    return get


def _entries(spec: Any) -> list[tuple[str, dict[str, Any]]]:
    """Headers/properties written as a map `{name: spec}` or a list of `{name, value, ...}`.

    An entry that carries `name` and `value` but no `required` is the 1.0 plain form: required.
    """
    out: list[tuple[str, dict[str, Any]]] = []
    items: list[tuple[str, Any]] = []
    if isinstance(spec, dict):
        items = list(spec.items())
    elif isinstance(spec, list):
        items = [(str(item.get("name")), item) for item in spec if isinstance(item, dict) and "name" in item]
    for name, entry in items:
        if isinstance(entry, dict) and "name" in entry:
            name = str(entry["name"])
        propdef = normalize_propdef(entry)
        if isinstance(entry, dict) and "name" in entry and "value" in entry and "required" not in entry:
            propdef["required"] = True
        out.append((name, propdef))
    return out


def option_constraints(protocol: str | None, options: dict[str, Any]) -> list[OptionConstraint]:
    """The constraints a definition's `protocoloptions` declare, in the binding's order (gateway/bindings.py
    `Binding.options`): each option the protocol knows and the document declares."""
    binding = binding_of(protocol)
    out: list[OptionConstraint] = []
    if binding is None or not isinstance(options, dict):
        return out
    for field in binding.options:
        name = field.name
        if field.kind is OptionKind.FIELD or field.kind is OptionKind.KEY:
            if name in options:
                getter = _field(name) if field.kind is OptionKind.FIELD else _kafka_key(name == "key_base64")
                out.append(OptionConstraint(f"protocoloptions.{name}", getter, normalize_propdef(options[name]),
                                            field.default_type, reads=field.reads, text=field.text))
            continue
        for entry, propdef in _entries(options.get(name)):
            getter = _section(name, entry) if field.kind is OptionKind.SECTION else \
                _pairs(name, entry, casefold=field.casefold, decode=field.decode)
            out.append(OptionConstraint(f"protocoloptions.{name}.{entry}", getter, propdef, None,
                                        reads=field.reads, text=field.text))
    return out
