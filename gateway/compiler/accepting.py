"""The accepting pass: decide that a message conforms, cheaply, and build nothing else (DESIGN.md rule 6).

`Acceptor.accept` answers with the conformant Verdict the full judge would give (same definition: the first
in rank order that passes), with Failed when the explaining pass must speak (`certain`: every candidate
certainly fails, so only the closest is sought; otherwise it judges exactly), or with UNSURE when the
message cannot be read here as the full judge reads it (HTTP batches, templated `type`s, odd headers): the
full judge decides. It is sound by construction: a definition is accepted only when every check of it is
known to pass and every earlier-ranked candidate is known to fail.
tests/unit/compiler/test_accepting_differential.py holds it to that.

Per message: one dict lookup by `type` (in structured mode, msgspec's tagged union does it in C), then:
- structured mode: one native decode of the event with the candidate's closed Struct (native_event.py),
  which validates the payload in the same pass where its schema maps (payload/native.py); then the few
  checks msgspec cannot make (URI and timestamp types, templates, the content type) and the duplicate-member
  guard (CONFORMANCE.md 5.7: msgspec keeps the last of two members silently, so the colons of the text
  must all reappear in the event's re-encoding). A decode that fails decides nothing: the explaining pass
  judges exactly.
- binary mode (and a structured event no Struct covers): the attributes as a dict (Kafka: only the `ce_`
  headers, kafka_headers.py), flat tuples of checks per definition, the payload decoded natively or
  parsed once and validated by `is_valid` once per schema.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from operator import attrgetter
from typing import Any

import msgspec

from gateway import jsontext
from gateway.cloudevents import (
    BINARY,
    MISSING,
    CloudEventReading,
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
from gateway.compiler.duplicate_guard import no_duplicates, quote_counter
from gateway.compiler.kafka_headers import kafka_attributes, read_kafka
from gateway.compiler.native_event import NotNative, event_struct
from gateway.compiler.payload.jsonschema import JsonSchemaValidator
from gateway.compiler.templates import compile_template, has_placeholders
from gateway.compiler.types import ANY_TIMESTAMPS, STRING_LIKE, checker
from gateway.compiler.view import MessageView
from gateway.envelope import Envelope
from gateway.limits import MAX_NESTING, json_too_deep
from gateway.verdict import Outcome, Verdict

UNSURE: Any = object()  # the full judge decides
_UNSET = msgspec.UNSET


class Failed:
    """The explaining pass takes over, with the message as the full judge reads it and its candidates."""

    __slots__ = ("candidates", "certain", "view")

    def __init__(self, view: MessageView, candidates: tuple[CompiledDefinition, ...], certain: bool) -> None:
        self.view = view
        self.candidates = candidates
        self.certain = certain  # every candidate is known to fail: only the closest is sought


_URIREF, _URI, _TIMESTAMP = checker("urireference"), checker("uri"), checker("timestamp")
_NAME_OK: dict[str, bool] = {}
_GOOD_NAMES: set[str] = set()  # the names of _NAME_OK that pass, for one C-level subset test per message
_SOURCE_OK: dict[str, bool] = {}
_DATASCHEMA_OK: dict[str, bool] = {}
_STRUCTURED_MEMBERS = frozenset({"data", "data_base64"})
_NO_NAMES: frozenset[str] = frozenset()
_NO_BINDINGS: dict[str, str] = {}  # never written: only templates and closures bind
BATCH = "batch"  # an HTTP batch of structured events: the full judge reads each
_MODES: dict[tuple[Any, Any, Any], str] = {}  # (protocol, content type, endpoint mode) -> how it is read
# attribute types the native Struct reads as msgspec types or as str with a check after the decode
_NATIVE_TYPE_NAMES = frozenset({"string", "integer", "boolean", "timestamp", "duration", "binary", "symbol",
                                "uri", "urireference", "uritemplate"})


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


def _implied(value: Any, text: bool) -> bool:
    return True


def _memoized(check: Callable[[Any, bool], bool]) -> Callable[[Any, bool], bool]:
    """A type check of text that does not depend on `text` (URIs recur: a few producers, a few relays), through
    the full judge's bounded memo, one memo per check."""
    return functools.partial(_remembered, {}, check)


_MEMOIZED = {name: _memoized(checker(name)) for name in ("uri", "urireference", "symbol")}


class _Payload:
    """The payload of one message, read once and judged once per validator (siblings share schemas); every
    answer is exact (a native decode that fails is followed by the parse and `is_valid`)."""

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
        body = self.body
        if body is None:  # a structured event without data: nothing to validate
            return True
        if validator.__class__ is not JsonSchemaValidator:  # other formats, Confluent's wire format
            return validator.check_bytes(body, self.content_type) is None
        decoder, quotes_of = _decoder(validator)
        if decoder is not None and self.value is MISSING:
            try:
                decoded = decoder.decode(body)
            except (msgspec.DecodeError, msgspec.ValidationError, ValueError, RecursionError):
                pass  # proves nothing: parsed and judged below
            else:
                if not self.unique or no_duplicates(body, decoded, quotes_of):
                    check = validator.native.check
                    return check is None or check(decoded)  # the patterns: exact, so a failure is certain
        if self.value is MISSING:
            try:
                self.value = jsontext.loads(body, self.unique)
            except ValueError:  # not JSON, nested too deep, or a member named twice: `decode` or `limit`
                self.value = None
                self.results[-1] = False
        if -1 in self.results:
            return False
        return validator.is_valid(self.value)


_DECODERS: dict[int, tuple[Any, msgspec.json.Decoder[Any] | None, Any]] = {}


def _decoder(validator: JsonSchemaValidator) -> tuple[msgspec.json.Decoder[Any] | None, Any]:
    """The native decoder of a schema's payload and its quote counter (duplicate_guard.py), one per validator,
    kept beside it by identity."""
    known = _DECODERS.get(id(validator))
    if known is None or known[0] is not validator:
        native = validator.native
        known = _DECODERS[id(validator)] = (validator, msgspec.json.Decoder(native.type), quote_counter(native.type)) \
            if native is not None else (validator, None, None)
    return known[1], known[2]


class _Plan:
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
        elif kind == "check":
            self.closures.append(check)
            self.declared = None

    def _attribute(self, name: str, propdef: dict[str, Any], default_type: str, check: Any) -> None:
        if name in _STRUCTURED_MEMBERS:  # a structured event's `data` is no attribute: read differently
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
            if kind == "exact":
                self.exact[name] = literal
            elif kind == "string":
                self.strings.append(name)
            elif kind == "present":
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
        return self.payload is None or payload_ok(self.payload)

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
            if found is None:
                return False
            for placeholder, bound in zip(names, found.groups()):
                if bindings.setdefault(placeholder, bound) != bound:
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
        if not _memo(_SOURCE_OK, _URIREF, self.source_of(event)):
            return False
        time, dataschema = self.time_of(event), self.dataschema_of(event)
        if time is not _UNSET and not _TIMESTAMP(time, False):
            return False
        if dataschema is not _UNSET and not _memo(_DATASCHEMA_OK, _URI, dataschema):
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
                if found is None:
                    return False
                for placeholder, bound in zip(names, found.groups()):
                    if bindings.setdefault(placeholder, bound) != bound:
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
            check = validator.native.check
            valid = payload[id(validator)] = check is None or check(data)  # the patterns: exact
            return valid
        return True


class Acceptor:
    """The accepting pass of one endpoint's index (one protocol family): plans by `type`, tagged unions."""

    __slots__ = ("by_type", "fixed", "floating", "layers", "native_count", "plans", "usable")

    def __init__(self, index: Any) -> None:
        self.floating = index.floating
        # only an index dispatching on the CloudEvents `type` alone is read here
        self.usable = index.needs_cloudevents and len(index.paths) == 1 and \
            index.paths[0][0] == "envelopemetadata.type"
        self.fixed: dict[str, tuple[CompiledDefinition, ...]] = {
            value: found for (path, value), found in index.fixed.items() if path == "envelopemetadata.type"}
        self.by_type = {kind: tuple(_Plan(d) for d in found) for kind, found in self.fixed.items()}
        # layer k: a tagged union of the k-th candidate of every `type` whose first k candidates have a Struct
        self.native_count: dict[str, int] = {}
        layers: list[list[Any]] = []
        number = 0
        for kind, plans in self.by_type.items():
            count = 0
            for plan in plans:
                number += 1
                if not plan.make_native(kind, number):
                    break
                if len(layers) <= count:
                    layers.append([])
                layers[count].append(plan.native)
                count += 1
            self.native_count[kind] = count
        self.plans = {plan.native: plan for plans in self.by_type.values() for plan in plans if plan.native}
        self.layers = tuple(msgspec.json.Decoder(structs[0] if len(structs) == 1 else
                                                 functools.reduce(lambda a, b: a | b, structs))
                            for structs in layers)

    def accept(self, envelope: Envelope, allowed_mode: str | None, unique: bool) -> Any:
        """The conformant Verdict, Failed or UNSURE for one message (see the module doc)."""
        if not self.usable:
            return UNSURE
        by_name: Any = None
        if envelope.protocol == "KAFKA":
            by_name, layout, content_type = read_kafka(envelope.fields.get("headers"))
            if layout is None:
                content_type = protocol_content_type(envelope)
        else:
            layout, content_type = None, protocol_content_type(envelope)
        key = (envelope.protocol, content_type, allowed_mode)
        mode = _MODES.get(key)
        if mode is None:
            # the binding's own rules, remembered: they depend on the protocol and the content type alone
            mode = BATCH if is_batch(envelope, content_type) and allowed_mode != BINARY else \
                choose_mode(envelope, allowed_mode, content_type)
            if len(_MODES) >= _MEMO_LIMIT:
                _MODES.clear()
            _MODES[key] = mode
        if mode == BINARY:
            attributes = kafka_attributes(by_name, layout, content_type) if layout is not None else None
            if attributes is None:
                reading = read_binary(envelope, content_type)
                if reading.problem is not None:
                    return UNSURE
                attributes = reading.attributes
            else:
                reading = CloudEventReading(BINARY, attributes, True)
            content = attributes.get("datacontenttype")
            payload = _Payload(envelope.body, MISSING, content if content.__class__ is str else None, unique)
            return self._decide(envelope, content_type, unique, attributes, reading, payload)
        if mode == BATCH:
            return UNSURE
        body = envelope.body
        if self.layers and not (unique and b"\\u" in body):
            return self._native(envelope, content_type, unique)
        return self._structured(envelope, content_type, unique)

    def _native(self, envelope: Envelope, content_type: Any, unique: bool) -> Any:
        """A structured event decoded by the tagged unions, layer after layer while candidates certainly fail."""
        body = envelope.body
        payload: dict[int, bool] = {}
        for number, layer in enumerate(self.layers):
            try:
                event = layer.decode(body)
            except msgspec.ValidationError as exc:
                # refused inside `data`: most likely the payload fails this candidate's schema, which the
                # explaining pass then reads in one detailed pass (a hint: it decides exactly either way)
                return self._undecided(envelope, content_type, unique, payload,
                                       number if "`$.data" in str(exc) else -1)
            except (msgspec.DecodeError, ValueError, RecursionError):
                return self._undecided(envelope, content_type, unique, payload)
            plan = self.plans[event.__class__]
            kind = plan.definition.discriminator.value  # type: ignore[union-attr]
            if self.floating and self._floating_apply(kind):
                return UNSURE
            holds = plan.holds_natively(event, payload, unique)
            if holds:
                if unique and not no_duplicates(body, event, plan.quotes_of):
                    return self._undecided(envelope, content_type, unique, payload)  # a member named twice?
                return plan.verdict
            if holds is None:
                return self._undecided(envelope, content_type, unique, payload)
            position = self.by_type[kind].index(plan) + 1
            if position == len(self.by_type[kind]):
                return self._structured_failed(envelope, content_type, unique, payload, kind, True)
            if position == self.native_count[kind]:  # the next candidate has no Struct
                return self._undecided(envelope, content_type, unique, payload)
        return self._undecided(envelope, content_type, unique, payload)

    def _undecided(self, envelope: Envelope, content_type: Any, unique: bool, payload: dict[int, bool],
                   failing: int = -1) -> Any:
        return self._structured_failed(envelope, content_type, unique, payload, None, False, failing)

    def _structured_failed(self, envelope: Envelope, content_type: Any, unique: bool, payload: dict[int, bool],
                           kind: Any, certain: bool, failing: int = -1) -> Any:
        try:
            parsed = jsontext.loads(envelope.body, unique)
        except ValueError:
            return UNSURE  # `decode` or `limit`: the full judge words it
        reading = read_structured_event(parsed)
        if reading.problem is not None:
            return UNSURE
        if kind is None:
            kind = reading.attributes.get("type")
            if len(self.by_type.get(kind, ()) if kind.__class__ is str else ()) > 1:
                # definitions sharing a `type` differ in their schemas too: the decode may have failed on an
                # earlier candidate's schema, which the flat checks decide exactly (usually on `source`)
                return self._structured(envelope, content_type, unique, parsed)
            if self.floating and self._floating_apply(kind):
                return UNSURE
        candidates = self.fixed.get(kind, ()) if kind.__class__ is str else ()
        if 0 <= failing < len(candidates):
            validator = self.by_type[kind][failing].payload
            if validator is not None:
                payload.setdefault(id(validator), False)
        view = MessageView(envelope, reading, content_type, unique_keys=unique)
        _hand_over(view, payload)
        return Failed(view, candidates, certain)

    def _structured(self, envelope: Envelope, content_type: Any, unique: bool, parsed: Any = MISSING) -> Any:
        """A structured event read as a dict (no Struct, or `\\u` escapes the duplicate guard cannot see past)."""
        if parsed is MISSING:
            try:
                parsed = jsontext.loads(envelope.body, unique)
            except ValueError:
                return UNSURE  # `decode` or `limit`: the full judge words it
        attributes = parsed
        if attributes.__class__ is not dict or "data_base64" in attributes or None in attributes.values():
            return UNSURE
        payload = _Payload(None, attributes.get("data", MISSING), None, unique)
        content = attributes.get("datacontenttype")
        payload.content_type = content if content.__class__ is str else None
        return self._decide(envelope, content_type, unique, attributes, None, payload)

    def _floating_apply(self, kind: Any) -> bool:
        return any(d.discriminator is None or d.discriminator.template is not None and kind.__class__ is str and
                   d.discriminator.template.match(kind) is not None for d in self.floating)

    def _decide(self, envelope: Envelope, content_type: Any, unique: bool, attributes: dict[str, Any],
                reading: CloudEventReading | None, payload: _Payload) -> Any:
        """Flat checks of each candidate on the attributes as a dict (binary mode, or a structured event)."""
        text = reading is not None
        raw_names = reading.raw_names if reading is not None else ()
        view_of: list[MessageView] = []

        def view() -> MessageView:
            # the message as the full judge reads it: for the closures this pass does not flatten (protocol
            # options), and for the explaining pass; made from what was read here, never read again
            if not view_of:
                event = reading if reading is not None else read_structured_event(attributes)
                view_of.append(MessageView(envelope, event, content_type, unique_keys=unique))
            return view_of[0]

        kind = attributes.get("type")
        if self.floating and self._floating_apply(kind):
            return UNSURE
        plans = self.by_type.get(kind) if kind.__class__ is str else None
        if not plans:
            return _failed(view(), (), payload)  # no candidate: `no-match`, worded by the explaining pass
        candidates = self.fixed[kind]  # type: ignore[index]  # a str: `plans` was found by it
        if not implicit_rules_hold(attributes, text, _NO_NAMES if text else _STRUCTURED_MEMBERS):
            return _failed(view(), candidates, payload)
        for plan in plans:
            if not plan.usable:
                return UNSURE
            if plan.decide(attributes, text, raw_names, payload.ok, view):
                return plan.verdict
        return _failed(view(), candidates, payload)


def _hand_over(view: MessageView, results: dict[int, bool]) -> None:
    """What the accepting pass learnt of the payload stays with the view: a valid one is not judged again,
    a failing one is explained in one detailed pass (MessageView.failing_payloads)."""
    if results:
        for key, valid in results.items():
            if valid:
                view.payload_results[(key, True)] = None
        view.failing_payloads = frozenset(key for key, valid in results.items() if not valid)


def _failed(view: MessageView, candidates: tuple[CompiledDefinition, ...], payload: _Payload) -> Failed:
    _hand_over(view, payload.results)
    return Failed(view, candidates, True)
