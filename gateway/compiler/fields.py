"""Protocol option constraints: which message field each declared option reads (CONFORMANCE.md section 4).

A getter returns `(values, text)`: every occurrence of the field (empty when
absent; headers may repeat) and whether the values are header text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gateway.bindings import AMQP_SECTIONS
from gateway.cloudevents import header_text
from gateway.compiler.view import MessageView
from gateway.loader.messages import normalize_propdef
from gateway.loader.names import protocol_family

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
        # an AMQP property arrives with its native type or as text (CONFORMANCE.md 5.7): text is read in its
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


_SCALARS: dict[str, tuple[tuple[str, str | None], ...]] = {
    # a Kafka timestamp is int64 milliseconds: far beyond the 32-bit `integer` range of section 5.3
    "KAFKA": (("topic", "string"), ("partition", "integer"), ("timestamp", "number")),
    "MQTT": (("topic_name", "string"), ("qos", "integer"), ("retain", "boolean"), ("payload_format", "integer"),
             ("message_expiry_interval", "integer"), ("response_topic", "string"), ("content_type", "string")),
    "NATS": (("subject", "string"), ("reply-to", "string")),
    "HTTP": (("method", "string"), ("path", "string")),
}
# the field a non-CloudEvents definition is dispatched on (CONFORMANCE.md section 6)
DISCRIMINATOR_FIELDS = {"AMQP/1.0": "protocoloptions.properties.subject", "MQTT": "protocoloptions.topic_name",
                        "KAFKA": "protocoloptions.topic", "NATS": "protocoloptions.subject",
                        "HTTP": "protocoloptions.path"}


def option_constraints(protocol: str | None, options: dict[str, Any]) -> list[OptionConstraint]:
    family = protocol_family(protocol)
    out: list[OptionConstraint] = []
    if family is None or not isinstance(options, dict):
        return out
    kafka = family == "KAFKA"
    for name, default_type in _SCALARS.get(family, ()):
        if name in options:
            out.append(OptionConstraint(f"protocoloptions.{name}", _field(name), normalize_propdef(options[name]),
                                        default_type, reads=name if kafka else ""))
    if kafka:
        for name, key_base64 in (("key", False), ("key_base64", True)):
            if name in options:
                out.append(OptionConstraint(f"protocoloptions.{name}", _kafka_key(key_base64),
                                            normalize_propdef(options[name]), "binary" if key_base64 else "string",
                                            reads=name, text=True))
        for header, propdef in _entries(options.get("headers")):
            out.append(OptionConstraint(f"protocoloptions.headers.{header}",
                                        _pairs("headers", header, casefold=False, decode=True), propdef, None,
                                        reads="header", text=True))
    elif family == "MQTT":
        if "correlation_data" in options:
            out.append(OptionConstraint("protocoloptions.correlation_data", _field("correlation_data"),
                                        normalize_propdef(options["correlation_data"]), "binary"))
        for prop, propdef in _entries(options.get("user_properties")):
            out.append(OptionConstraint(f"protocoloptions.user_properties.{prop}",
                                        _pairs("user_properties", prop, casefold=False), propdef, None))
    elif family == "AMQP/1.0":
        for section in AMQP_SECTIONS:
            for prop, propdef in _entries(options.get(section)):
                out.append(OptionConstraint(f"protocoloptions.{section}.{prop}", _section(section, prop), propdef,
                                            None))
    elif family in ("NATS", "HTTP"):
        for header, propdef in _entries(options.get("headers")):
            out.append(OptionConstraint(f"protocoloptions.headers.{header}",
                                        _pairs("headers", header, casefold=True), propdef, None))
        if family == "HTTP":
            for param, propdef in _entries(options.get("query")):
                out.append(OptionConstraint(f"protocoloptions.query.{param}",
                                            _pairs("query", param, casefold=False), propdef, None))
    return out
