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
  guard (validation rule 5.7: msgspec keeps the last of two members silently, so the colons of the text
  must all reappear in the event's re-encoding). A decode that fails decides nothing: the explaining pass
  judges exactly.
- binary mode (and a structured event no Struct covers): the attributes as a dict (Kafka: only the `ce_`
  headers, kafka_headers.py), flat tuples of checks per definition, the payload decoded natively or
  parsed once and validated by `is_valid` once per schema.
"""

from __future__ import annotations

import functools
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
)
from gateway.compiler.definition import CompiledDefinition
from gateway.compiler.duplicate_guard import no_duplicates, quote_counter
from gateway.compiler.kafka_headers import kafka_attributes, read_kafka
from gateway.compiler.payload.jsonschema import JsonSchemaValidator
from gateway.compiler.plan import NO_NAMES, STRUCTURED_MEMBERS, Plan, implicit_rules_hold
from gateway.compiler.view import MessageView
from gateway.envelope import Envelope

UNSURE: Any = object()  # the full judge decides
_UNSET = msgspec.UNSET


class Failed:
    """The explaining pass takes over, with the message as the full judge reads it and its candidates."""

    __slots__ = ("candidates", "certain", "payload_only", "view")

    def __init__(self, view: MessageView, candidates: tuple[CompiledDefinition, ...], certain: bool,
                 payload_only: bool = False) -> None:
        self.view = view
        self.candidates = candidates
        self.certain = certain  # every candidate is known to fail: only the closest is sought
        # the first candidate passes every check but its payload's: only the payload is explained
        self.payload_only = payload_only


BATCH = "batch"  # an HTTP batch of structured events: the full judge reads each
_MODES: dict[tuple[Any, Any, Any], str] = {}  # (protocol, content type, endpoint mode) -> how it is read
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
        self.by_type = {kind: tuple(Plan(d) for d in found) for kind, found in self.fixed.items()}
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
            plan.note_payload(event, payload)  # the explaining pass then never validates a valid payload again
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
                return self._structured(envelope, content_type, unique, parsed, payload)
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

    def _structured(self, envelope: Envelope, content_type: Any, unique: bool, parsed: Any = MISSING,
                    known: dict[int, bool] | None = None) -> Any:
        """A structured event read as a dict (no Struct, `\\u` escapes the duplicate guard cannot see past, or a
        native decode that decided nothing); `known`: payload answers by validator the native pass found."""
        if parsed is MISSING:
            try:
                parsed = jsontext.loads(envelope.body, unique)
            except ValueError:
                return UNSURE  # `decode` or `limit`: the full judge words it
        attributes = parsed
        if attributes.__class__ is not dict or "data_base64" in attributes or None in attributes.values():
            return UNSURE
        payload = _Payload(None, attributes.get("data", MISSING), None, unique)
        if known:
            payload.results.update(known)
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
        if not implicit_rules_hold(attributes, text, NO_NAMES if text else STRUCTURED_MEMBERS):
            return _failed(view(), candidates, payload, plans[0].payload)
        payload_only = False
        for plan in plans:
            if not plan.usable:
                return UNSURE
            if plan.decide(attributes, text, raw_names, view):  # every check but the payload's
                if plan.payload is None or payload.ok(plan.payload):
                    return plan.verdict
                payload_only = payload_only or plan is plans[0]
        return _failed(view(), candidates, payload, plans[0].payload, payload_only)


def _hand_over(view: MessageView, results: dict[int, bool]) -> None:
    """What the accepting pass learnt of the payload stays with the view: a valid one is not judged again,
    a failing one is explained in one detailed pass (MessageView.failing_payloads)."""
    if results:
        for key, valid in results.items():
            if valid:
                view.payload_results[(key, True)] = None
        view.failing_payloads = frozenset(key for key, valid in results.items() if not valid)


def _failed(view: MessageView, candidates: tuple[CompiledDefinition, ...], payload: _Payload,
            closest: Any = None, payload_only: bool = False) -> Failed:
    if closest is not None and closest.__class__ is JsonSchemaValidator and _decoder(closest)[0] is not None:
        # the first candidate is explained in full: its payload is judged here by the native decode (a few
        # microseconds) rather than parsed and validated again there
        payload.ok(closest)
    _hand_over(view, payload.results)
    if payload.value is not MISSING and payload.value is not None:
        view.parsed_body = payload.value  # parsed after a native decode failed: not parsed again to explain
    return Failed(view, candidates, True, payload_only)
