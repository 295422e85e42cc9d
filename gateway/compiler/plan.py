"""One definition's checks as the accepting pass runs them (gateway/compiler/accepting.py): flat tuples on
the attributes as a dict (binary mode, or a structured event no Struct covers), and the few checks left after
a native decode with the definition's closed Struct (native_event.py). Exact values are compared in one
C-level dict comparison, types by plain functions, each template by one compiled regex (`fullmatch`, never
`$`); what has no flat form runs the full judge's own closure on a MessageView.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from operator import attrgetter
from typing import Any

import msgspec

from gateway import jsontext
from gateway.compiler.constraints import (
    _MEMO_LIMIT,
    Shortcut,
    _remembered,
    attribute_shortcut,
    content_types_agree,
    resolve_type,
)
from gateway.compiler.definition import CompiledDefinition
from gateway.compiler.duplicate_guard import quote_counter
from gateway.compiler.native_event import NotNative, event_struct
from gateway.compiler.templates import bind_agreeing, compile_template, has_placeholders
from gateway.compiler.types import ANY_TIMESTAMPS, STRING_LIKE, checker
from gateway.compiler.view import MessageView
from gateway.limits import MAX_NESTING, json_too_deep
from gateway.verdict import Outcome, Verdict

_UNSET = msgspec.UNSET
STRUCTURED_MEMBERS = frozenset({"data", "data_base64"})
_URIREF, _URI, _TIMESTAMP = checker("urireference"), checker("uri"), checker("timestamp")
_NAME_OK: dict[str, bool] = {}
_GOOD_NAMES: set[str] = set()  # the names of _NAME_OK that pass, for one C-level subset test per message
_SOURCE_OK: dict[str, bool] = {}
_DATASCHEMA_OK: dict[str, bool] = {}
NO_NAMES: frozenset[str] = frozenset()
_NO_BINDINGS: dict[str, str] = {}  # never written: only templates and closures bind
# attribute types the native Struct reads as msgspec types or as str with a check after the decode
_NATIVE_TYPE_NAMES = frozenset({"string", "integer", "boolean", "timestamp", "duration", "binary", "symbol",
                                "uri", "urireference", "uritemplate"})


def _good_name(name: Any) -> bool:
    known = _NAME_OK.get(name)
    if known is None:
        from gateway.compiler.constraints import _good_name as full_rule  # the full judge's own rule
        known = full_rule(name)
        if len(_NAME_OK) < _MEMO_LIMIT:
            _NAME_OK[name] = known
            if known:
                _GOOD_NAMES.add(name)
    return known


def implicit_rules_hold(attributes: dict[str, Any], text: bool, skip: frozenset[str]) -> bool:
    """validation rule 5.1, the same conditions as the fast branch of `cloudevents_rules`; `skip` names members
    that are no attributes (`data` of a structured event)."""
    get = attributes.get
    ident, kind, source = get("id"), get("type"), get("source")
    if get("specversion") != "1.0" or ident.__class__ is not str or not ident or kind.__class__ is not str or \
            not kind or source.__class__ is not str or not source or not _remembered(_SOURCE_OK, _URIREF, source, True):
        return False
    time, dataschema = get("time"), get("dataschema")
    if time is not None and not _TIMESTAMP(time, text):
        return False
    if dataschema is not None and (dataschema.__class__ is not str or
                                   not _remembered(_DATASCHEMA_OK, _URI, dataschema, True)):
        return False
    if _GOOD_NAMES.issuperset(attributes):
        return True
    for name in attributes:
        # `data` is itself a good name: remembered, later messages pass the subset test above
        if not (_NAME_OK.get(name) or _good_name(name) or name in skip):
            return False
    return True


def _implied(value: Any, text: bool) -> bool:
    return True


def _memoized(check: Callable[[Any, bool], bool]) -> Callable[[Any, bool], bool]:
    """A type check of text that does not depend on `text` (URIs recur: a few producers, a few relays), through
    the full judge's bounded memo, one memo per check."""
    return functools.partial(_remembered, {}, check)


_MEMOIZED = {name: _memoized(checker(name)) for name in ("uri", "urireference", "symbol")}


class Plan:
    """One definition's checks as flat tuples; `closures` are the full judge's own, run on a MessageView."""

    __slots__ = (
        "agrees",
        "binary",
        "closures",
        "content_type_of",
        "content_types",
        "dataschema_of",
        "declared",
        "definition",
        "exact",
        "literals",
        "members",
        "native",
        "native_exact",
        "native_literals",
        "native_templates",
        "native_typed",
        "payload",
        "present",
        "quotes_of",
        "raw_data",
        "source_of",
        "strings",
        "templates",
        "time_of",
        "typed",
        "usable",
        "verdict",
    )

    def __init__(self, definition: CompiledDefinition) -> None:
        self.definition = definition
        self.verdict = Verdict(Outcome.CONFORMANT, definition.groupid, definition.messageid)
        self.exact: dict[str, str] = {}
        self.strings: list[str] = []
        self.present: list[str] = []
        self.typed: list[tuple[str, bool, Callable[[Any, bool], bool], bool]] = []
        self.literals: list[tuple[str, bool, str]] = []
        self.templates: list[tuple[str, bool, Callable[[Any, bool], bool], Any, tuple[str, ...]]] = []
        self.closures: list[Any] = []
        self.binary: frozenset[str] = frozenset()
        self.content_types: tuple[str, ...] | None = None
        self.agrees: dict[str, bool] = {}  # content type -> agrees with `content_types` (bounded memo)
        self.payload: Any = None
        # name -> (required, type, literal) for the native Struct; None once a rule has no native form
        self.declared: dict[str, tuple[bool, str, Any]] | None = {}
        self.native: Any = None
        # a definition the pass cannot read as the full judge does: never accepted here
        self.usable = definition.cloudevents
        for part, check in zip(definition.parts, definition.checks):
            self._add(part, check)

    def _add(self, part: tuple[Any, ...], check: Any) -> None:
        kind = part[0]
        if kind == "attribute":
            self._attribute(part[1], part[2], part[3], check)
        elif kind == "raw":
            self.binary = part[1]
        elif kind == "content-type":
            self.content_types = part[1]
        elif kind == "payload":
            self.payload = part[1]
        elif kind == "option":
            self.closures.append(check)
            self.declared = None

    def _attribute(self, name: str, propdef: dict[str, Any], default_type: str, check: Any) -> None:
        if name in STRUCTURED_MEMBERS:  # a structured event's `data` is no attribute: read differently
            self.usable = False
            return
        shortcut = attribute_shortcut(name, propdef, default_type)
        required = propdef.get("required") is True
        type_name = resolve_type(propdef, default_type)
        value = propdef.get("value")
        is_type = checker(type_name)
        literal = None
        if shortcut is not None:
            kind, literal = shortcut
            if kind is Shortcut.EXACT:
                self.exact[name] = literal
            elif kind is Shortcut.STRING:
                self.strings.append(name)
            elif kind is Shortcut.PRESENT:
                self.present.append(name)
        elif value is None or type_name == "timestamp" and value in ANY_TIMESTAMPS:
            self.typed.append((name, required, _MEMOIZED.get(type_name, is_type), type_name == "binary"))
        elif isinstance(value, str) and (type_name in STRING_LIKE or type_name == "any") and has_placeholders(value):
            template = compile_template(value)
            if template.forced is not None and not template.repeated:
                if name == "source" and type_name in ("urireference", "uritemplate", "string"):
                    is_type = _implied  # the implicit rules, checked first, require a URI-reference: it is one
                self.templates.append((name, required, is_type, template.forced.fullmatch, template.names))
            else:
                self.closures.append(check)
                self.declared = None
        elif isinstance(value, str) and type_name in STRING_LIKE and is_type(value, True):
            self.literals.append((name, required, value))
            literal = value
        else:
            self.closures.append(check)
            self.declared = None
        if self.declared is not None:
            if type_name not in _NATIVE_TYPE_NAMES or _good_name(name) is False:
                self.declared = None
            else:
                self.declared[name] = (required, type_name, literal)

    def decide(self, attributes: dict[str, Any], text: bool, raw_names: tuple[str, ...],
               view: Callable[[], MessageView]) -> bool:
        """True when every check but the payload's passes (the implicit rules are decided by the caller, once per
        message; the payload by the caller too, so that it knows a definition failing on its payload alone)."""
        if not self.exact.items() <= attributes.items():
            return False
        get = attributes.get
        for name in self.strings:
            if get(name).__class__ is not str:
                return False
        for name in self.present:
            if name not in attributes:
                return False
        for name, required, is_type, binary in self.typed:
            actual = get(name)
            if actual is None:
                if required:
                    return False
            elif text and actual.__class__ is bytes and not binary or not is_type(actual, text):
                return False
        for name, required, literal in self.literals:
            actual = get(name)
            if actual is None and required or actual is not None and actual != literal:
                return False
        bindings: dict[str, str] = {} if self.templates or self.closures else _NO_BINDINGS
        if not self._templates_fit(get, bindings, text):
            return False
        if raw_names and any(name not in self.binary for name in raw_names):
            return False
        if not self._content_type_agrees(get("datacontenttype")):
            return False
        if self.closures:
            shown = view()
            for check in self.closures:
                if check(shown, bindings) is not None:
                    return False
        return True

    def _templates_fit(self, get: Callable[[str], Any], bindings: dict[str, str], text: bool) -> bool:
        for name, required, is_type, fullmatch, names in self.templates:
            actual = get(name)
            if actual is None or actual is _UNSET:
                if required:
                    return False
                continue
            if actual.__class__ is not str or not is_type(actual, text):
                return False
            found = fullmatch(actual)
            if found is None or not bind_agreeing(bindings, names, found.groups()):
                return False
        return True

    def _content_type_agrees(self, actual: Any) -> bool:
        wanted = self.content_types
        if wanted is None or actual.__class__ is not str:
            return True
        agrees = self.agrees.get(actual)
        if agrees is None:
            agrees = content_types_agree(actual, wanted)
            if len(self.agrees) < _MEMO_LIMIT:
                self.agrees[actual] = agrees
        return agrees

    def make_native(self, kind: str, number: int) -> bool:
        """Build the closed Struct of this definition (native_event.py); False when it has none."""
        if not self.usable or self.declared is None or self.binary:
            return False
        try:
            struct, members, raw = event_struct(self.definition.messageid, kind, self.declared, self.payload, number)
        except NotNative:
            return False
        self.raw_data, self.members, self.quotes_of = raw, members, quote_counter(struct)
        self.source_of, self.time_of = attrgetter(members["source"]), attrgetter(members["time"])
        self.dataschema_of = attrgetter(members["dataschema"])
        self.content_type_of = attrgetter(members["datacontenttype"])
        # fixed values, compared in one tuple comparison (required) or one by one (optional: UNSET when absent)
        fixed = [(members[n], literal) for n, (required, _, literal) in self.declared.items()
                 if literal is not None and required and n not in ("specversion", "type")]
        fixed = fixed * 2 if len(fixed) == 1 else fixed  # attrgetter of one name gives no tuple
        self.native_exact = (attrgetter(*(m for m, _ in fixed)), tuple(v for _, v in fixed)) if fixed else None
        self.native_literals = tuple((attrgetter(members[n]), literal) for n, (required, _, literal)
                                     in self.declared.items() if literal is not None and not required and n != "type")
        # templates whose type check is implied (the implicit rules check `source`) or made by msgspec (str)
        declared = self.declared
        assert declared is not None  # checked above
        if any(is_type is not _implied and declared[name][1] != "string"
               for name, _, is_type, _, _ in self.templates):
            return False
        self.native_templates = tuple((attrgetter(members[name]), required, fullmatch, names)
                                      for name, required, _, fullmatch, names in self.templates)
        # the checks msgspec cannot make: types that are strings with a shape (URIs, timestamps, ...)
        self.native_typed = tuple((attrgetter(members[name]), is_type) for name, _, is_type, _ in self.typed
                                  if declared[name][1] not in ("string", "integer", "boolean"))
        self.native = struct
        return True

    def note_payload(self, event: Any, payload: dict[int, bool]) -> None:
        """Record whether the natively decoded `data` passes its schema (the patterns, the rest msgspec checked),
        for a candidate that failed on something else: the explaining pass then does not validate it again."""
        validator = self.payload
        if validator is None or self.raw_data or id(validator) in payload:
            return
        data = event.data
        if data is not _UNSET:
            self._native_data_ok(data, payload)

    def _native_data_ok(self, data: Any, payload: dict[int, bool]) -> bool:
        """Whether natively decoded `data` passes its schema: msgspec checked the rest, the patterns are searched
        here (exact, so a failure is certain); the answer is kept in `payload` by validator."""
        check = self.payload.native.check
        valid = payload[id(self.payload)] = check is None or bool(check(data))
        return valid

    def holds_natively(self, event: Any, payload: dict[int, bool], unique: bool) -> bool | None:
        """Whether a decoded event passes every check msgspec did not make; None when the payload could not be
        read here (a duplicate member or nesting in a `data` without a native schema)."""
        exact = self.native_exact
        if exact is not None and exact[0](event) != exact[1]:
            return False
        for get, literal in self.native_literals:
            actual = get(event)
            if actual is not _UNSET and actual != literal:
                return False
        if not _remembered(_SOURCE_OK, _URIREF, self.source_of(event), True):
            return False
        time, dataschema = self.time_of(event), self.dataschema_of(event)
        if time is not _UNSET and not _TIMESTAMP(time, False):
            return False
        if dataschema is not _UNSET and not _remembered(_DATASCHEMA_OK, _URI, dataschema, True):
            return False
        for get, is_type in self.native_typed:
            actual = get(event)
            if actual is not _UNSET and not is_type(actual, False):
                return False
        if self.native_templates:
            bindings: dict[str, str] = {}
            for get, required, fullmatch, names in self.native_templates:
                actual = get(event)
                if actual is _UNSET:
                    if required:
                        return False
                    continue
                found = fullmatch(actual)
                if found is None or not bind_agreeing(bindings, names, found.groups()):
                    return False
        if not self._content_type_agrees(self.content_type_of(event)):
            return False
        validator = self.payload
        if self.raw_data:
            data = event.data
            if data is _UNSET:
                return True
            raw = bytes(data)
            try:
                value = jsontext.loads(raw, unique)
            except ValueError:
                return None
            if json_too_deep(raw, value, MAX_NESTING - 1):  # one level below the event's: the limit is the body's
                return None
            if validator is None:
                return True
            valid: bool = validator.is_valid(value)
            payload[id(validator)] = valid
            return valid
        data = event.data
        if validator is not None and data is not _UNSET:
            return self._native_data_ok(data, payload)
        return True
