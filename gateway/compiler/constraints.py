"""Constraint closures: `check(view, bindings) -> tuple[Violation, ...] | None`.

None means the constraint holds; the tuple is only built on failure. Values
are bound into locals when the closure is made, so the per-message work is a
getter call and a few comparisons. `bindings` carries placeholder texts
across all constraints of one definition (validation rule 5.4).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import Enum
from typing import Any

from gateway.cloudevents import MISSING, STRUCTURED
from gateway.compiler.fields import Getter
from gateway.compiler.payload import PayloadValidator
from gateway.compiler.payload.base import load_json_payload
from gateway.compiler.payload.jsonschema import JsonSchemaValidator
from gateway.compiler.templates import compile_template, has_placeholders
from gateway.compiler.types import ANY_TIMESTAMPS, STRING_LIKE, canonical_type, checker, coerce, infer_type
from gateway.compiler.view import MessageView
from gateway.verdict import Rule, Violation

Check = Callable[[MessageView, dict[str, str]], "tuple[Violation, ...] | None"]
_ATTRIBUTE_NAME = re.compile(r"[a-z0-9]+")


def resolve_type(propdef: dict[str, Any], default_type: str | None) -> str:
    declared = canonical_type(propdef.get("type"))
    if declared:
        return declared
    value = propdef.get("value")
    if value is not None:
        # placeholders need a string-like type; a literal of the field's own type (CloudEvents `time` is a
        # timestamp, "any timestamp" included) keeps that type; other literals imply their JSON type
        if default_type in STRING_LIKE:
            return default_type
        if default_type == "timestamp" and value in ANY_TIMESTAMPS:
            return default_type
        if default_type is not None and checker(default_type)(value, isinstance(value, str)):
            return default_type
        return infer_type(value)
    return default_type or "any"


ValueCheck = Callable[[Any, bool, dict[str, str]], "tuple[Violation, ...] | None"]


def compile_value(path: str, propdef: dict[str, Any], default_type: str | None) -> tuple[ValueCheck, bool]:
    """The check of one present value (type, template with bindings, exact value), and whether it is required."""
    required = propdef.get("required") is True
    type_name = resolve_type(propdef, default_type)
    is_type = checker(type_name)
    value = propdef.get("value")
    template = None
    expected: Any = MISSING
    if isinstance(value, str) and (type_name in STRING_LIKE or type_name == "any") and has_placeholders(value):
        template = compile_template(value)
    elif value is not None and not (type_name == "timestamp" and value in ANY_TIMESTAMPS):
        expected = coerce(value, type_name, isinstance(value, str))
    plain_string = type_name == "string"
    is_binary = type_name == "binary"
    # a literal that is itself a valid value of its string-like type: the same text passes without a type check
    valid_literal = expected if isinstance(expected, str) and type_name in STRING_LIKE and \
        is_type(expected, True) else MISSING

    def check(actual: Any, text: bool, bindings: dict[str, str]) -> tuple[Violation, ...] | None:
        if actual == valid_literal:
            return None
        if text and actual.__class__ is bytes and not is_binary:
            return (_not_utf8(path, actual),)
        if plain_string and actual.__class__ is str and template is None:
            # the common case, decided without coercion: a string-typed value, exact or free
            if expected is MISSING or actual == expected:
                return None
            return (Violation(path, Rule.VALUE, value, actual, f"{path} must be {value!r}"),)
        if not is_type(actual, text):
            return (Violation(path, Rule.TYPE, type_name, actual, f"{path} is not a valid {type_name}"),)
        if template is not None:
            found = template.match(actual) if isinstance(actual, str) else None
            if found is None and isinstance(actual, str) and template.conflicts(actual):
                return (Violation(path, Rule.PLACEHOLDER, template.text, actual,
                                  f"{path} binds one placeholder of {template.text} to two different texts"),)
            if found is None:
                return (Violation(path, Rule.TEMPLATE, template.text, actual,
                                  f"{path} does not fit the template {template.text}"),)
            for name, bound_text in found.items():
                bound = bindings.setdefault(name, bound_text)
                if bound != bound_text:
                    return (Violation(path, Rule.PLACEHOLDER, f"{{{name}}} = {bound}", bound_text,
                                      f"placeholder {{{name}}} is {bound_text!r} here but {bound!r} elsewhere"),)
        elif expected is not MISSING and coerce(actual, type_name, text) != expected:
            return (Violation(path, Rule.VALUE, value, actual, f"{path} must be {value!r}"),)
        return None

    return check, required


def _not_utf8(path: str, actual: bytes) -> Violation:
    return Violation(path, Rule.DECODE, "UTF-8 text", actual,
                     f"{path} is not UTF-8 text (validation rule 5.7: only a binary-typed value may carry such bytes)")


def compile_raw_attributes(binary: frozenset[str]) -> Check:
    """Binary-mode attributes whose header bytes are not UTF-8: `decode` unless the definition declares the
    attribute `binary` (validation rule 5.7); declared ones are judged by their own rule as well."""

    def check(view: MessageView, bindings: dict[str, str]) -> tuple[Violation, ...] | None:
        event = view.event
        if event is None or not event.raw_names:
            return None
        found = tuple(_not_utf8(f"envelopemetadata.{name}", event.attributes[name])
                      for name in event.raw_names if name not in binary)
        return found or None

    return check


def _absent(path: str) -> tuple[Violation, ...]:
    return (Violation(path, Rule.REQUIRED, "present", None, f"{path} is required but absent"),)


def compile_property(path: str, getter: Getter, propdef: dict[str, Any], default_type: str | None) -> Check:
    check_value, required = compile_value(path, propdef, default_type)

    def check(view: MessageView, bindings: dict[str, str]) -> tuple[Violation, ...] | None:
        values, text = getter(view)
        if not values:
            return _absent(path) if required else None
        for actual in values:
            found = check_value(actual, text, bindings)
            if found is not None:
                return found
        return None

    return check


# the types `cloudevents_rules` already enforces for these attributes whenever they are present
IMPLICIT_CE_TYPES = {"source": "urireference", "time": "timestamp", "dataschema": "uri"}


class Shortcut(Enum):
    """How the boolean pass may decide a CloudEvents attribute rule without its closure."""

    EXACT = "exact"      # required, string-typed, one literal value (the shortcut's value)
    STRING = "string"    # required string, any value
    PRESENT = "present"  # required, and its type is one `cloudevents_rules` checks
    FREE = "free"        # optional, no value, its type one `cloudevents_rules` checks: nothing left to check


def attribute_shortcut(name: str, propdef: dict[str, Any],
                       default_type: str | None) -> tuple[Shortcut, Any] | None:
    """(kind, literal) when `passes` may decide a CloudEvents attribute rule without its closure, or None when
    it may not. Only for the boolean pass: `cloudevents_rules` runs in the same pass, and violations are still
    found by the closures."""
    required = propdef.get("required") is True
    type_name = resolve_type(propdef, default_type)
    value = propdef.get("value")
    if type_name == "string":
        if value is None:
            return (Shortcut.STRING, None) if required else None
        if isinstance(value, str) and not has_placeholders(value) and required:
            return (Shortcut.EXACT, value)
        return None
    if value is None and IMPLICIT_CE_TYPES.get(name) == type_name:
        return (Shortcut.PRESENT, None) if required else (Shortcut.FREE, None)
    return None


def compile_attribute(name: str, propdef: dict[str, Any], default_type: str | None) -> Check:
    """A CloudEvents attribute: read straight from the event (one value, never repeated)."""
    path = f"envelopemetadata.{name}"
    check_value, required = compile_value(path, propdef, default_type)

    def check(view: MessageView, bindings: dict[str, str]) -> tuple[Violation, ...] | None:
        event = view.event
        actual = event.attributes.get(name) if event is not None else None
        if actual is None:
            return _absent(path) if required else None
        return check_value(actual, event.text, bindings)  # type: ignore[union-attr]

    return check


class _Occurrence:
    """One occurrence of a repeated field, shaped like a view for the per-declaration checks."""

    __slots__ = ("text", "values")

    def __init__(self, value: Any, text: bool) -> None:
        self.values = (value,)
        self.text = text


def _read_occurrence(view: Any) -> tuple[tuple[Any, ...], bool]:
    return view.values, view.text


def compile_repeated(path: str, getter: Getter, propdefs: list[dict[str, Any]], default_type: str | None) -> Check:
    """A name declared several times (user properties, HTTP/NATS headers may repeat).

    Every occurrence must fit one of the declarations, and every required declaration must be met by one
    occurrence; placeholder bindings of the fitting declaration are kept.
    """
    entries = [(compile_property(path, _read_occurrence, p, default_type), p.get("required") is True, p.get("value"))
               for p in propdefs]
    shown = [p.get("value") for p in propdefs]

    def check(view: MessageView, bindings: dict[str, str]) -> tuple[Violation, ...] | None:
        values, text = getter(view)
        met = [False] * len(entries)
        for actual in values:
            occurrence = _Occurrence(actual, text)
            for number, (entry, _, _) in enumerate(entries):
                trial = dict(bindings)
                if entry(occurrence, trial) is None:  # type: ignore[arg-type]
                    bindings.update(trial)
                    met[number] = True
                    break
            else:
                return (Violation(path, Rule.VALUE, shown, actual, f"{path} {actual!r} fits none of its declarations"),)
        for number, (_, required, value) in enumerate(entries):
            if required and not met[number]:
                return (Violation(path, Rule.REQUIRED, value, None, f"{path} with value {value!r} is required but absent"),)
        return None

    return check


def _ce_violation(name: str, rule: Rule, expected: Any, actual: Any, message: str) -> Violation:
    return Violation(f"envelopemetadata.{name}", rule, expected, actual, message)


_URIREF = checker("urireference")
_URI = checker("uri")
_TIMESTAMP = checker("timestamp")

# `source` and `dataschema` values recur (a few producers, a few schemas): their verdicts are remembered in
# bounded dicts, emptied when full, so hostile traffic with ever-new values costs a check, never memory
_MEMO_LIMIT = 4096
_SOURCE_OK: dict[str, bool] = {}
_DATASCHEMA_OK: dict[str, bool] = {}


def _remembered(memo: dict[str, bool], check: Callable[[Any, bool], bool], value: Any, text: bool) -> bool:
    if value.__class__ is not str:
        return check(value, text)
    known = memo.get(value)
    if known is None:
        if len(memo) >= _MEMO_LIMIT:
            memo.clear()
        known = memo[value] = check(value, text)
    return known


# attribute names recur on every message: their verdict is remembered (a bounded set, so hostile traffic
# with ever-new names cannot grow it without limit)
_GOOD_NAMES: set[str] = set()
_GOOD_NAMES_LIMIT = 4096


def _good_name(name: str) -> bool:
    if name in _GOOD_NAMES:
        return True
    if _ATTRIBUTE_NAME.fullmatch(name) is None:
        return False
    if len(_GOOD_NAMES) < _GOOD_NAMES_LIMIT:
        _GOOD_NAMES.add(name)
    return True


def cloudevents_rules(view: MessageView, bindings: dict[str, str]) -> tuple[Violation, ...] | None:
    """The implicit CloudEvents 1.0 rules (validation rule 5.1)."""
    event = view.event
    if event is None:
        return (_ce_violation("specversion", Rule.SPECVERSION, "1.0", None, "the message is not a CloudEvent"),)
    if event.problem is not None:
        return (event.problem,)
    attributes = event.attributes
    text = event.text
    get = attributes.get
    # the fast pass: decide "all good" with as little work as possible; explain only on failure
    source, time, dataschema = get("source"), get("time"), get("dataschema")
    if get("specversion") == "1.0" and _nonempty_text(get("id")) and _nonempty_text(get("type")) and \
            _nonempty_text(source) and _remembered(_SOURCE_OK, _URIREF, source, text) and \
            (time is None or _TIMESTAMP(time, text)) and \
            (dataschema is None or _remembered(_DATASCHEMA_OK, _URI, dataschema, text)) and \
            (_GOOD_NAMES.issuperset(attributes) or all(_good_name(name) for name in attributes)):
        return None
    return _cloudevents_violations(attributes, text)


def _nonempty_text(value: Any) -> bool:
    return value.__class__ is str and value != ""


def _cloudevents_violations(attributes: dict[str, Any], text: bool) -> tuple[Violation, ...] | None:
    found: list[Violation] = []
    specversion = attributes.get("specversion")
    if specversion != "1.0":
        found.append(_ce_violation("specversion", Rule.SPECVERSION, "1.0", specversion,
                                   "specversion is absent" if specversion is None else "specversion must be \"1.0\""))
    for name in ("id", "source", "type"):
        value = attributes.get(name)
        if value is None or value == "":
            found.append(_ce_violation(name, Rule.REQUIRED, "present", value,
                                       f"CloudEvents attribute {name} is required and must not be empty"))
        elif not isinstance(value, str):
            found.append(_ce_violation(name, Rule.TYPE, "string", value, f"{name} must be a string"))
    source = attributes.get("source")
    if isinstance(source, str) and source and not _URIREF(source, text):
        found.append(_ce_violation("source", Rule.TYPE, "urireference", source, "source must be a URI-reference"))
    time = attributes.get("time")
    if time is not None and not _TIMESTAMP(time, text):
        found.append(_ce_violation("time", Rule.TYPE, "timestamp", time, "time must be an RFC 3339 timestamp"))
    dataschema = attributes.get("dataschema")
    if dataschema is not None and not _URI(dataschema, text):
        found.append(_ce_violation("dataschema", Rule.TYPE, "uri", dataschema, "dataschema must be an absolute URI"))
    for name in attributes:
        if not _good_name(name):
            found.append(_ce_violation(name, Rule.ATTRIBUTE_NAME, "[a-z0-9]+", name,
                                       f"attribute name {name!r} must be lower-case letters and digits"))
    return tuple(found) if found else None


def media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


def content_types_agree(actual: str, expected: tuple[str, ...]) -> bool:
    kind = media_type(actual)
    for wanted in expected:
        if kind == wanted:
            return True
        if wanted in ("application/json", "text/json") and kind.endswith("+json"):
            return True
        if wanted in ("application/xml", "text/xml") and kind.endswith("+xml"):
            return True
    return False


def compile_content_type(expected: tuple[str, ...], path: str, for_cloudevents: bool) -> Check:
    wanted = tuple(media_type(e) for e in expected)
    shown = " or ".join(expected)

    def check(view: MessageView, bindings: dict[str, str]) -> tuple[Violation, ...] | None:
        event = view.event
        if for_cloudevents and event is not None:
            actual = event.attributes.get("datacontenttype")
        else:
            actual = view.protocol_content_type
        if not isinstance(actual, str) or content_types_agree(actual, wanted):
            return None
        return (Violation(path, Rule.CONTENT_TYPE, shown, actual,
                          f"content type {actual!r} does not agree with {shown}"),)

    return check


def compile_payload(validator: PayloadValidator, for_cloudevents: bool) -> Check:
    check_bytes = validator.check_bytes
    check_value = validator.check_value
    is_json_schema = validator.__class__ is JsonSchemaValidator  # not Confluent's wire format of one
    # the explaining pass: a JSON Schema's errors from its one detailed pass, no `is_valid` before it
    explain_value = validator.explain_value if is_json_schema else check_value  # type: ignore[attr-defined]
    own = id(validator)

    def judge(view: MessageView) -> tuple[Violation, ...] | None:
        event = view.event
        if for_cloudevents and event is not None:
            content_type = event.attributes.get("datacontenttype")
            if event.mode == STRUCTURED:
                if event.problem is not None or event.data is MISSING:
                    return None
                if event.data_is_bytes:
                    return check_bytes(event.data, content_type if isinstance(content_type, str) else None)
                return explain_value(event.data) if own in view.failing_payloads else check_value(event.data)
            return read_body(view, content_type if isinstance(content_type, str) else None)
        return read_body(view, view.protocol_content_type)

    def read_body(view: MessageView, content_type: str | None) -> tuple[Violation, ...] | None:
        explaining = own in view.failing_payloads
        if is_json_schema and (explaining or not view.unique_keys):
            # the duplicate check switched off (read as orjson does), or a failure explained in one pass
            value = view.parsed_body
            if value is None:
                value, problem = load_json_payload(view.envelope.body, unique=view.unique_keys)
                if problem is not None:
                    return (problem,)
            return explain_value(value) if explaining else check_value(value)
        return check_bytes(view.envelope.body, content_type)

    # the result depends on the validator, where the payload is read from, and the message only (the content
    # type comes from the message), so one result per view serves every definition that shares this validator
    key = (id(validator), for_cloudevents)

    def check(view: MessageView, bindings: dict[str, str]) -> tuple[Violation, ...] | None:
        results = view.payload_results
        found = results.get(key, MISSING)
        if found is MISSING:
            found = results[key] = judge(view)
        return found  # type: ignore[no-any-return]

    return check
