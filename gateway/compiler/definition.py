"""Compile one resolved message definition into a CompiledDefinition of ordered constraint closures."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gateway.compiler.constraints import (
    Check,
    Shortcut,
    attribute_shortcut,
    cloudevents_rules,
    compile_attribute,
    compile_content_type,
    compile_payload,
    compile_property,
    compile_raw_attributes,
    compile_repeated,
    media_type,
    resolve_type,
)
from gateway.compiler.fields import OptionConstraint, option_constraints
from gateway.compiler.payload import (
    SchemaFormat,
    compile_payload_validator,
    implied_content_types,
    normalize_schema_format,
)
from gateway.compiler.payload.confluent import compile_registry_payload
from gateway.compiler.templates import Template, compile_template, has_placeholders
from gateway.compiler.view import MessageView
from gateway.errors import Diagnostic, SchemaCompileError, Severity
from gateway.loader.names import CLOUDEVENTS, binding_of, protocol_family
from gateway.model.resolved import MessageDefinition
from gateway.schemaregistry.model import RegistryPayloadSchema
from gateway.verdict import Violation

CE_DEFAULT_TYPES = {"id": "string", "source": "urireference", "specversion": "string", "type": "string",
                    "datacontenttype": "string", "dataschema": "uri", "subject": "string", "time": "timestamp"}


@dataclass(frozen=True, slots=True)
class Discriminator:
    """What a definition is dispatched on: a fixed value (exact lookup) or a template (tried in turn)."""

    path: str
    read: Callable[[MessageView], Any]
    value: str
    template: Template | None

    def matches(self, view: MessageView) -> bool:
        actual = self.read(view)
        if not isinstance(actual, str):
            return False
        if self.template is not None:
            return self.template.match(actual) is not None
        return actual == self.value


@dataclass(frozen=True, slots=True)
class AttributeShortcuts:
    exact: dict[str, str]       # required attributes with one literal string value
    strings: tuple[str, ...]    # required string attributes, any value
    present: tuple[str, ...]    # required attributes whose type `cloudevents_rules` checks


@dataclass(slots=True)
class CompiledDefinition:
    groupid: str
    messageid: str
    family: str | None
    cloudevents: bool
    specificity: int
    discriminator: Discriminator | None
    checks: tuple[Check, ...]
    # the boolean pass: CloudEvents attribute rules decided without closures (see `attribute_shortcut`),
    # then the closures of every other check, in order
    shortcuts: AttributeShortcuts
    pass_checks: tuple[Check, ...]
    # what each check was compiled from, for the accepting pass (gateway/compiler/accepting.py):
    # ("cloudevents",) ("attribute", name, propdef, default type) ("raw", binary names)
    # ("content-type", media types, shown, path) ("payload", validator) ("option", closure, path, constraints)
    parts: tuple[tuple[Any, ...], ...] = ()
    # (-specificity, groupid, messageid): the first match in this order wins
    rank: tuple[int, str, str] = field(init=False)
    # the payload's checks alone, for `violations(payload_only=True)`
    payload_checks: tuple[Check, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.rank = (-self.specificity, self.groupid, self.messageid)
        self.payload_checks = tuple(check for part, check in zip(self.parts, self.checks) if part[0] == "payload")

    def passes(self, view: MessageView) -> bool:
        if self.cloudevents:
            event = view.event
            if event is None:
                return False
            attributes = event.attributes
            shortcuts = self.shortcuts
            # one C-level comparison for every exact value: dict items are compared, never hashed
            if not shortcuts.exact.items() <= attributes.items():
                return False
            for name in shortcuts.strings:
                if attributes.get(name).__class__ is not str:
                    return False
            for name in shortcuts.present:
                if name not in attributes:
                    return False
        bindings: dict[str, str] = {}
        for check in self.pass_checks:
            if check(view, bindings) is not None:
                return False
        return True

    def violations(self, view: MessageView, limit: int = 0, payload_only: bool = False) -> tuple[Violation, ...]:
        """Every violation, in check order (one per path and rule); with `limit`, at most that many.
        `payload_only`: the other checks are known to hold (the accepting pass saw them pass), so only the
        payload's run."""
        bindings: dict[str, str] = {}
        found: list[Violation] = []
        seen: set[tuple[str, str]] = set()
        for check in self.payload_checks if payload_only else self.checks:
            for violation in check(view, bindings) or ():
                key = (violation.path, violation.rule.value)
                if key not in seen:
                    seen.add(key)
                    found.append(violation)
            if limit and len(found) >= limit:
                return tuple(found[:limit])
        return tuple(found)


def read_ce_type(view: MessageView) -> Any:
    return view.event.attributes.get("type") if view.event is not None else None


def _field_reader(path: str) -> Callable[[MessageView], Any]:
    if path == "protocoloptions.properties.subject":
        return lambda view: (view.envelope.fields.get("properties") or {}).get("subject")
    name = path.rsplit(".", 1)[-1]
    return lambda view: view.envelope.fields.get(name)


def _discriminator(definition: MessageDefinition, cloudevents: bool) -> Discriminator | None:
    attrs = definition.attrs
    reader: Callable[[MessageView], Any]
    if cloudevents:
        spec = (attrs.get("envelopemetadata") or {}).get("type") or {}
        path, reader = "envelopemetadata.type", read_ce_type
        value = spec.get("value") if isinstance(spec, dict) else None
    else:
        binding = binding_of(attrs.get("protocol"))
        path = binding.discriminator if binding is not None else ""
        if not path:
            return None
        options = attrs.get("protocoloptions") or {}
        if path == "protocoloptions.properties.subject":
            raw = (options.get("properties") or {}).get("subject")
        else:
            raw = options.get(path.rsplit(".", 1)[-1])
        value = raw.get("value") if isinstance(raw, dict) else raw
        reader = _field_reader(path)
    if not isinstance(value, str) or not value:
        return None
    template = compile_template(value) if has_placeholders(value) else None
    return Discriminator(path, reader, value, template)


def _guess_format(schema: Any) -> str:
    if isinstance(schema, str):
        text = schema.lstrip()
        return "XSD/1.0" if text.startswith("<") else "Protobuf/3"
    if isinstance(schema, dict) and schema.get("type") in ("record", "enum", "fixed") or isinstance(schema, list):
        return "Avro/1.11"
    return "JSONSchema/draft-07"


class CompileCache:
    """Identical schemas and identical rules compile once per ruleset. Definitions repeat most of their
    attribute rules (specversion, id, time, ...) and often share a schema; the checks are stateless
    functions of their declaration, so one object serves them all (half the compiled size of the reference
    workload)."""

    def __init__(self) -> None:
        self._compiled: dict[str, Any] = {}
        self._checks: dict[tuple[Any, ...], Check] = {}

    def get(self, fmt: SchemaFormat, schema: Any, type_name: str | None, where: str) -> Any:
        key = json.dumps([fmt.kind, fmt.version, schema, type_name], sort_keys=True, default=str)
        if key not in self._compiled:
            self._compiled[key] = compile_payload_validator(fmt, schema, type_name=type_name, where=where)
        return self._compiled[key]

    def confluent(self, payload: RegistryPayloadSchema) -> Any:
        """The wire-format validator of a schema from a Confluent-compatible registry (one per set of ids)."""
        key = json.dumps(["confluent", payload.registry, payload.format, payload.type_name, payload.default_id,
                          [(s.id, s.schema_type, s.schema) for s in payload.allowed]], sort_keys=True)
        if key not in self._compiled:
            self._compiled[key] = compile_registry_payload(payload)
        return self._compiled[key]

    def attribute(self, name: str, propdef: dict[str, Any], default_type: str) -> Check:
        key = ("attribute", name, json.dumps(propdef, sort_keys=True, default=repr), default_type)
        if key not in self._checks:
            self._checks[key] = compile_attribute(name, propdef, default_type)
        return self._checks[key]

    def raw_attributes(self, binary: frozenset[str]) -> Check:
        key = ("raw-attributes", tuple(sorted(binary)))
        if key not in self._checks:
            self._checks[key] = compile_raw_attributes(binary)
        return self._checks[key]

    def payload(self, validator: Any, for_cloudevents: bool) -> Check:
        key = ("payload", id(validator), for_cloudevents)  # the validator itself lives in self._compiled
        if key not in self._checks:
            self._checks[key] = compile_payload(validator, for_cloudevents)
        return self._checks[key]

    def content_type(self, expected: tuple[str, ...], path: str, for_cloudevents: bool) -> Check:
        key = ("content-type", expected, path, for_cloudevents)
        if key not in self._checks:
            self._checks[key] = compile_content_type(expected, path, for_cloudevents)
        return self._checks[key]


@dataclass(frozen=True, slots=True)
class CompiledRule:
    """One rule of a definition as a value: its check, how the accepting pass reads it (`part`), whether it
    makes the definition more specific (`weight`: how many constraints it counts for toward the specificity
    validation rule 6 ranks by), and the attribute shortcut that lets the boolean pass skip the check."""

    check: Check
    part: tuple[Any, ...]
    weight: int = 0
    shortcut: tuple[str, tuple[Shortcut, Any]] | None = None  # (attribute, (kind, literal))


def compile_definition(definition: MessageDefinition, cache: CompileCache,
                       diagnostics: list[Diagnostic]) -> CompiledDefinition | None:
    attrs = definition.attrs
    cloudevents = attrs.get("envelope") == CLOUDEVENTS
    family = protocol_family(attrs.get("protocol"))
    metadata = attrs.get("envelopemetadata") or {}
    rules = _attribute_rules(metadata, cache) if cloudevents else []
    rules += _option_rules(attrs)
    payload_check, implied, compiled, validator = _payload(definition, cloudevents, cache, diagnostics)
    if not compiled:
        return None
    rules += _content_type_rules(attrs, metadata, implied, cloudevents, cache)
    if payload_check is not None:
        rules.append(CompiledRule(payload_check, ("payload", validator), weight=1))
    return _assemble(definition, cloudevents, family, rules)


def _attribute_rules(metadata: dict[str, Any], cache: CompileCache) -> list[CompiledRule]:
    """The CloudEvents rules: the implicit ones, one per declared attribute, the binary-attribute rule."""
    rules = [CompiledRule(cloudevents_rules, ("cloudevents",))]
    for name, propdef in metadata.items():
        if name == "datacontenttype" and isinstance(propdef.get("value"), str):
            # compared as a media type by the content-type rule, not as a string
            propdef = {k: v for k, v in propdef.items() if k != "value"}
        default_type = CE_DEFAULT_TYPES.get(name, "string")
        shortcut = attribute_shortcut(name, propdef, default_type)
        rules.append(CompiledRule(cache.attribute(name, propdef, default_type),
                                  ("attribute", name, propdef, default_type), weight=1,
                                  shortcut=(name, shortcut) if shortcut is not None else None))
    binary = frozenset(name for name, propdef in metadata.items()
                       if resolve_type(propdef, CE_DEFAULT_TYPES.get(name, "string")) == "binary")
    rules.append(CompiledRule(cache.raw_attributes(binary), ("raw", binary)))
    return rules


def _option_rules(attrs: dict[str, Any]) -> list[CompiledRule]:
    """Protocol options: one check per path (a repeated header's constraints together); every constraint
    counts toward specificity."""
    by_path: dict[str, list[OptionConstraint]] = {}
    for option in option_constraints(attrs.get("protocol"), attrs.get("protocoloptions") or {}):
        by_path.setdefault(option.path, []).append(option)
    rules = []
    for path, options in by_path.items():
        first = options[0]
        check = compile_property(path, first.getter, first.propdef, first.default_type) if len(options) == 1 \
            else compile_repeated(path, first.getter, [o.propdef for o in options], first.default_type)
        # each constraint counts; the part keeps what they read, for the native core's plan (lower.py)
        rules.append(CompiledRule(check, ("option", check, path, tuple(options)), weight=len(options)))
    return rules


def _content_type_rules(attrs: dict[str, Any], metadata: dict[str, Any], implied: tuple[str, ...],
                        cloudevents: bool, cache: CompileCache) -> list[CompiledRule]:
    """The content-type rule: a declared content type (specific), else the one the payload format implies."""
    declared: str | None = None
    if cloudevents and isinstance((metadata.get("datacontenttype") or {}).get("value"), str):
        declared = metadata["datacontenttype"]["value"]
    if isinstance(attrs.get("datacontenttype"), str):
        declared = attrs["datacontenttype"]
    expected = (declared,) if declared else implied
    if not expected:
        return []
    path = "envelopemetadata.datacontenttype" if cloudevents else "datacontenttype"
    return [CompiledRule(cache.content_type(expected, path, cloudevents),
                         ("content-type", tuple(media_type(e) for e in expected), " or ".join(expected), path),
                         weight=1 if declared else 0)]


def _assemble(definition: MessageDefinition, cloudevents: bool, family: str | None,
              rules: list[CompiledRule]) -> CompiledDefinition:
    """Everything a CompiledDefinition holds, derived from its rules in one place."""
    shortcuts = [rule.shortcut for rule in rules if rule.shortcut is not None]
    return CompiledDefinition(
        definition.groupid, definition.messageid, family, cloudevents, sum(rule.weight for rule in rules),
        _discriminator(definition, cloudevents), tuple(rule.check for rule in rules),
        AttributeShortcuts({name: value for name, (kind, value) in shortcuts if kind is Shortcut.EXACT},
                           tuple(name for name, (kind, _) in shortcuts if kind is Shortcut.STRING),
                           tuple(name for name, (kind, _) in shortcuts if kind is Shortcut.PRESENT)),
        tuple(rule.check for rule in rules if rule.shortcut is None),
        tuple(rule.part for rule in rules))


def _payload(definition: MessageDefinition, cloudevents: bool, cache: CompileCache,
             diagnostics: list[Diagnostic]) -> tuple[Check | None, tuple[str, ...], bool, Any]:
    """(check, implied content types, compiled, validator); compiled is False when the schema does not
    compile."""
    payload = definition.payload
    if payload is None:
        return None, (), True, None
    where = payload.origin
    if isinstance(payload, RegistryPayloadSchema):
        try:
            validator = cache.confluent(payload)
        except SchemaCompileError as exc:
            origin = definition.origin  # the document naming the registry: a reload keeps its last good copy
            diagnostics.append(Diagnostic(Severity.ERROR, origin.file, f"schema of message {definition.messageid!r} "
                                          f"({payload.reference}) does not compile: {exc}", pointer=origin.pointer,
                                          code="schema-compile"))
            return None, (), False, None
        return cache.payload(validator, cloudevents), implied_content_types(validator.kind), True, validator
    text = payload.format if isinstance(payload.format, str) else None
    if text is None:
        text = _guess_format(payload.schema)
        diagnostics.append(Diagnostic(Severity.WARNING, where.file,
                                      f"message {definition.messageid!r} names no dataschemaformat; "
                                      f"the schema is read as {text}", pointer=where.pointer, code="schema-format"))
    fmt = normalize_schema_format(text)
    if fmt is None:
        diagnostics.append(Diagnostic(Severity.WARNING, where.file,
                                      f"schema format {text!r} is not supported; the payload of "
                                      f"{definition.messageid!r} is not validated", pointer=where.pointer,
                                      code="schema-format"))
        return None, (), True, None
    try:
        validator = cache.get(fmt, payload.schema, payload.type_name, "")
    except SchemaCompileError as exc:
        pointer = where.pointer + (exc.pointer if exc.pointer.startswith("/") or not exc.pointer else "/" + exc.pointer)
        diagnostics.append(Diagnostic(Severity.ERROR, where.file,
                                      f"schema of message {definition.messageid!r} does not compile: {exc}",
                                      pointer=pointer, code="schema-compile"))
        return None, (), False, None
    return cache.payload(validator, cloudevents), implied_content_types(fmt.kind), True, validator
