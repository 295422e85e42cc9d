"""The accepting pass: decide that a message conforms, cheaply, and build nothing else (DESIGN.md rule 6).

`accept` answers with the conformant Verdict the full judge would give (same definition: the first in rank
order that passes), with Failed when every candidate certainly fails (the explaining pass takes over), or
with UNSURE when it cannot tell (the full judge decides). It is sound by construction: a definition is
accepted only when every check of it is known to pass and every earlier-ranked candidate is known to fail;
whatever this module cannot map exactly to the full judge's checks runs the full judge's own closure, and
whatever it cannot read the way the full judge reads it (HTTP batches, null attributes, `data_base64`,
unreadable headers) is UNSURE. tests/unit/compiler/test_accepting_differential.py holds it to that.

Per message: one read of the CloudEvent (the same readers as the full judge), one dict lookup by `type`,
then per candidate flat tuples of checks: exact values compared in one C-level dict comparison, types by
plain functions, each template by one compiled regex (`fullmatch`, never `$`), payloads by the validator's
`is_valid` once per schema.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from gateway import jsontext
from gateway.cloudevents import (
    BINARY,
    MISSING,
    choose_mode,
    is_batch,
    protocol_content_type,
    read_binary,
    read_structured_event,
)
from gateway.compiler.constraints import (
    _MEMO_LIMIT,
    _remembered,
    attribute_shortcut,
    content_types_agree,
    resolve_type,
)
from gateway.compiler.definition import CompiledDefinition
from gateway.compiler.payload.jsonschema import JsonSchemaValidator
from gateway.compiler.templates import compile_template, has_placeholders
from gateway.compiler.types import ANY_TIMESTAMPS, STRING_LIKE, checker
from gateway.compiler.view import MessageView
from gateway.envelope import Envelope
from gateway.verdict import Outcome, Verdict

UNSURE: Any = object()  # the full judge decides


class Failed:
    """Every candidate fails: the explaining pass takes over with the message as the full judge reads it."""

    __slots__ = ("view",)

    def __init__(self, view: MessageView) -> None:
        self.view = view

_URIREF, _URI, _TIMESTAMP = checker("urireference"), checker("uri"), checker("timestamp")
_NAME_OK: dict[str, bool] = {}
_GOOD_NAMES: set[str] = set()  # the names of _NAME_OK that pass, for one C-level subset test per message
_SOURCE_OK: dict[str, bool] = {}
_DATASCHEMA_OK: dict[str, bool] = {}
_STRUCTURED_MEMBERS = frozenset({"data", "data_base64"})
_NO_NAMES: frozenset[str] = frozenset()
_NO_BINDINGS: dict[str, str] = {}  # never written: only templates and closures bind


def _memo(memo: dict[str, bool], check: Callable[[Any, bool], bool], value: str) -> bool:
    known = memo.get(value)
    if known is None:
        if len(memo) >= _MEMO_LIMIT:
            memo.clear()
        known = memo[value] = check(value, True)
    return known


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
    """CONFORMANCE.md 5.1, the same conditions as the fast branch of `cloudevents_rules`; `skip` names members
    that are no attributes (`data` of a structured event)."""
    get = attributes.get
    ident, kind, source = get("id"), get("type"), get("source")
    if get("specversion") != "1.0" or ident.__class__ is not str or not ident or kind.__class__ is not str or \
            not kind or source.__class__ is not str or not source or not _memo(_SOURCE_OK, _URIREF, source):
        return False
    time, dataschema = get("time"), get("dataschema")
    if time is not None and not _TIMESTAMP(time, text):
        return False
    if dataschema is not None and (dataschema.__class__ is not str or not _memo(_DATASCHEMA_OK, _URI, dataschema)):
        return False
    if _GOOD_NAMES.issuperset(attributes):
        return True
    for name in attributes:
        # `data` is itself a good name: remembered, later messages pass the subset test above
        if not (_NAME_OK.get(name) or _good_name(name) or name in skip):
            return False
    return True


class _Plan:
    """One definition's checks as flat tuples; `closures` are the full judge's own, run on a MessageView."""

    __slots__ = ("agrees", "binary", "closures", "content_types", "definition", "exact", "literals", "payload",
                 "present", "strings", "templates", "typed", "usable", "verdict")

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
        elif kind == "check":
            self.closures.append(check)

    def _attribute(self, name: str, propdef: dict[str, Any], default_type: str, check: Any) -> None:
        if name in _STRUCTURED_MEMBERS:  # a structured event's `data` is no attribute: read differently
            self.usable = False
            return
        shortcut = attribute_shortcut(name, propdef, default_type)
        required = propdef.get("required") is True
        type_name = resolve_type(propdef, default_type)
        value = propdef.get("value")
        is_type = checker(type_name)
        if shortcut is not None:
            kind, literal = shortcut
            if kind == "exact":
                self.exact[name] = literal
            elif kind == "string":
                self.strings.append(name)
            elif kind == "present":
                self.present.append(name)
            return  # "free": nothing the implicit rules leave to check
        if value is None or type_name == "timestamp" and value in ANY_TIMESTAMPS:
            self.typed.append((name, required, _MEMOIZED.get(type_name, is_type), type_name == "binary"))
        elif isinstance(value, str) and (type_name in STRING_LIKE or type_name == "any") and has_placeholders(value):
            template = compile_template(value)
            if template.forced is not None and not template.repeated:
                if name == "source" and type_name in ("urireference", "uritemplate", "string"):
                    is_type = _implied  # the implicit rules, checked first, require a URI-reference: it is one
                self.templates.append((name, required, is_type, template.forced.fullmatch, template.names))
            else:
                self.closures.append(check)
        elif isinstance(value, str) and type_name in STRING_LIKE and is_type(value, True):
            self.literals.append((name, required, value))
        else:
            self.closures.append(check)

    def decide(self, attributes: dict[str, Any], text: bool, raw_names: tuple[str, ...],
               payload_ok: Callable[[Any], bool], view: Callable[[], MessageView]) -> bool:
        """True when every check passes (the implicit rules are decided by the caller, once per message)."""
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
        for name, required, is_type, fullmatch, names in self.templates:
            actual = get(name)
            if actual is None:
                if required:
                    return False
                continue
            if actual.__class__ is not str or not is_type(actual, text):
                return False
            found = fullmatch(actual)
            if found is None:
                return False
            for placeholder, bound in zip(names, found.groups()):
                if bindings.setdefault(placeholder, bound) != bound:
                    return False
        if raw_names and any(name not in self.binary for name in raw_names):
            return False
        wanted = self.content_types
        if wanted is not None:
            actual = get("datacontenttype")
            if actual.__class__ is str:
                agrees = self.agrees.get(actual)
                if agrees is None:
                    agrees = content_types_agree(actual, wanted)
                    if len(self.agrees) < _MEMO_LIMIT:
                        self.agrees[actual] = agrees
                if not agrees:
                    return False
        if self.closures:
            shown = view()
            for check in self.closures:
                if check(shown, bindings) is not None:
                    return False
        return self.payload is None or payload_ok(self.payload)


def _implied(value: Any, text: bool) -> bool:
    return True


def _memoized(check: Callable[[Any, bool], bool]) -> Callable[[Any, bool], bool]:
    """A type check of text that does not depend on `text` (URIs recur: a few producers, a few relays), through
    the full judge's bounded memo, one memo per check."""
    return functools.partial(_remembered, {}, check)


_MEMOIZED = {name: _memoized(checker(name)) for name in ("uri", "urireference", "symbol")}


def plans_for(definitions: tuple[CompiledDefinition, ...]) -> dict[int, _Plan]:
    return {id(d): _Plan(d) for d in definitions}


class _Payload:
    """The payload of one message, read once and judged once per validator (siblings share schemas)."""

    __slots__ = ("body", "content_type", "data", "results", "unique", "value")

    def __init__(self, body: bytes | None, data: Any, content_type: Any, unique: bool) -> None:
        self.body = body
        self.data = data          # structured: the `data` member (MISSING when absent); binary: MISSING
        self.content_type = content_type
        self.unique = unique
        self.value: Any = MISSING
        self.results: dict[int, bool] = {}

    def ok(self, validator: Any) -> bool:
        key = id(validator)
        known = self.results.get(key)
        if known is None:
            known = self.results[key] = self._judge(validator)
        return known

    def _judge(self, validator: Any) -> bool:
        if self.data is not MISSING:
            if validator.__class__ is JsonSchemaValidator:
                return validator.is_valid(self.data)
            return validator.check_value(self.data) is None
        if self.body is None:  # a structured event without data: nothing to validate
            return True
        if validator.__class__ is not JsonSchemaValidator:  # other formats, Confluent's wire format
            return validator.check_bytes(self.body, self.content_type) is None
        if self.value is MISSING:
            try:
                self.value = jsontext.loads(self.body, self.unique)
            except ValueError:  # not JSON, nested too deep, or a member named twice: `decode` or `limit`
                self.value = None
                self.results[-1] = False
        if -1 in self.results:
            return False
        return validator.is_valid(self.value)


def _failed(view: MessageView, payload: _Payload) -> Failed:
    """What the accepting pass learnt of the payload stays with the view: a valid one is not judged again,
    a failing one is explained in one detailed pass (MessageView.failing_payloads)."""
    results = payload.results
    if results:
        for key, valid in results.items():
            if valid:
                view.payload_results[(key, True)] = None
        view.failing_payloads = frozenset(key for key, valid in results.items() if not valid)
    return Failed(view)


def accept(index: Any, plans: dict[int, _Plan], envelope: Envelope, allowed_mode: str | None,
           unique: bool) -> Any:
    """The conformant Verdict, Failed or UNSURE for one message on one endpoint's index (see the module doc)."""
    if not index.needs_cloudevents or index.paths and index.paths[0][0] != "envelopemetadata.type" or \
            len(index.paths) > 1:
        return UNSURE
    content_type = protocol_content_type(envelope)
    if choose_mode(envelope, allowed_mode, content_type) == BINARY:
        reading = read_binary(envelope, content_type)
        if reading.problem is not None:
            return UNSURE
        attributes, text, raw_names, skip = reading.attributes, True, reading.raw_names, _NO_NAMES
        content = attributes.get("datacontenttype")
        payload = _Payload(envelope.body, MISSING, content if isinstance(content, str) else None, unique)
    else:
        reading = None
        if is_batch(envelope, content_type):
            return UNSURE
        try:
            attributes = jsontext.loads(envelope.body, unique)
        except ValueError:
            return UNSURE  # `decode` or `limit`: the full judge words it
        if attributes.__class__ is not dict or "data_base64" in attributes or None in attributes.values():
            return UNSURE
        text, raw_names, skip = False, (), _STRUCTURED_MEMBERS
        content = attributes.get("datacontenttype")
        payload = _Payload(None, attributes.get("data", MISSING), content if isinstance(content, str) else None,
                           unique)
    view_of: list[MessageView] = []

    def view() -> MessageView:
        # the message as the full judge reads it: for the closures this pass does not flatten (protocol
        # options), and for the explaining pass; made from what was read here, never read again
        if not view_of:
            event = reading if text else read_structured_event(attributes)
            view_of.append(MessageView(envelope, event, content_type, unique_keys=unique))
        return view_of[0]

    kind = attributes.get("type")
    candidates = index.fixed.get(("envelopemetadata.type", kind)) if kind.__class__ is str else None
    if index.floating and any(d.discriminator is None or d.discriminator.template is not None and
                              kind.__class__ is str and d.discriminator.template.match(kind) is not None
                              for d in index.floating):
        return UNSURE
    if not candidates:
        return _failed(view(), payload)  # no candidate: `no-match`, worded by the explaining pass
    if not implicit_rules_hold(attributes, text, skip):
        return _failed(view(), payload)
    for definition in candidates:
        plan = plans[id(definition)]
        if not plan.usable:
            return UNSURE
        if plan.decide(attributes, text, raw_names, payload.ok, view):
            return plan.verdict
    return _failed(view(), payload)
