"""Ruleset: per endpoint, a dispatch index over compiled definitions, and `classify` (the hot path).

Dispatch: each definition's discriminator (CloudEvents `type`, or the
protocol's subject/topic/path) with a fixed value goes into a dict keyed by
that value; templated or absent discriminators are "floating" and tried on
every message. One dict lookup yields the candidates already in rank order.
The candidates that dispatch returns are exactly the ones allowed to be
named as closest when nothing matches (validation rule 6).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway import collector
from gateway.cloudevents import is_batch, protocol_content_type, read_cloudevents
from gateway.compiler.accepting import Acceptor, Failed
from gateway.compiler.definition import CompileCache, CompiledDefinition, compile_definition
from gateway.compiler.explaining import explain_failure
from gateway.compiler.view import MessageView
from gateway.envelope import Envelope
from gateway.errors import Diagnostic
from gateway.limits import DEFAULT_LIMITS, Limits, envelope_violation, limit_violation
from gateway.loader.names import protocol_family
from gateway.model.resolved import EndpointDefinition, Registry
from gateway.verdict import Outcome, Rule, Verdict, Violation

# the implicit endpoint used when a registry declares no endpoint for a message
REGISTRY_WIDE = "*"


@dataclass(slots=True)
class _Index:
    """Dispatch for one protocol family on one endpoint."""

    fixed: dict[tuple[str, str], tuple[CompiledDefinition, ...]]
    floating: tuple[CompiledDefinition, ...]
    paths: tuple[tuple[str, Any], ...]  # (discriminator path, reader) pairs used by `fixed`
    needs_cloudevents: bool
    # the accepting pass over this index (gateway/compiler/accepting.py), made by the first message the
    # Python judge classifies here: where the native core judges every message, it is never built
    _acceptor: Any = None

    @property
    def acceptor(self) -> Any:
        if self._acceptor is None:
            self._acceptor = Acceptor(self)
        return self._acceptor

    def candidates(self, view: MessageView) -> tuple[CompiledDefinition, ...]:
        found: tuple[CompiledDefinition, ...] = ()
        hits = 0
        for path, read in self.paths:
            value = read(view)
            if isinstance(value, str):
                hit = self.fixed.get((path, value))
                if hit:
                    found = hit if not hits else found + hit
                    hits += 1
        floating = tuple(d for d in self.floating if d.discriminator is None or d.discriminator.matches(view)) \
            if self.floating else ()
        if not hits:
            return floating
        if floating or hits > 1:
            return tuple(sorted(found + floating, key=lambda d: d.rank))
        return found


def _build_index(definitions: list[CompiledDefinition]) -> _Index:
    fixed: dict[tuple[str, str], list[CompiledDefinition]] = {}
    floating: list[CompiledDefinition] = []
    readers: dict[str, Any] = {}
    for definition in sorted(definitions, key=lambda d: d.rank):
        disc = definition.discriminator
        if disc is not None and disc.template is None:
            fixed.setdefault((disc.path, disc.value), []).append(definition)
            readers.setdefault(disc.path, disc.read)
        else:
            floating.append(definition)
    return _Index({k: tuple(v) for k, v in fixed.items()}, tuple(floating), tuple(readers.items()),
                  any(d.cloudevents for d in definitions))


@dataclass(slots=True)
class EndpointRules:
    endpoint_id: str
    protocol: str | None
    envelope_mode: str | None
    definitions: tuple[CompiledDefinition, ...]
    _by_family: dict[str | None, _Index] = field(default_factory=dict)
    _by_protocol: dict[str, _Index] = field(default_factory=dict)  # the same indexes, by protocol name

    def index_for(self, protocol: str) -> _Index:
        family = protocol_family(protocol)
        index = self._by_family.get(family)
        if index is None:
            # a definition bound to another protocol does not apply to this message
            index = _build_index([d for d in self.definitions if d.family is None or d.family == family])
            self._by_family[family] = index
        if protocol.__class__ is str:
            self._by_protocol[protocol] = index
        return index

    def classify(self, envelope: Envelope, limits: Limits = DEFAULT_LIMITS) -> Verdict:
        """Accept fast (gateway/compiler/accepting.py), explain once (explaining.py); the full judge decides
        what the accepting pass cannot."""
        index = self._by_protocol.get(envelope.protocol) or self.index_for(envelope.protocol)
        found = index.acceptor.accept(envelope, self.envelope_mode, limits.reject_duplicate_keys)
        if found.__class__ is Verdict:
            return found
        if found.__class__ is Failed:
            return explain_failure(found.candidates, found.view, found.certain, found.payload_only)
        return self.judge(envelope, limits)

    def judge(self, envelope: Envelope, limits: Limits = DEFAULT_LIMITS) -> Verdict:
        """The full judge: every candidate's closures."""
        index = self.index_for(envelope.protocol)
        content_type = protocol_content_type(envelope)
        unique = limits.reject_duplicate_keys
        if not index.needs_cloudevents:
            return _judge(index, MessageView(envelope, None, content_type, unique_keys=unique))
        events = read_cloudevents(envelope, self.envelope_mode, content_type, unique)
        if len(events) > limits.max_batch_events:
            return Verdict(Outcome.NONCONFORMANT, None, None, (limit_violation(
                "body", f"at most {limits.max_batch_events} events", len(events),
                f"the batch holds {len(events)} events, over the limit of {limits.max_batch_events}"),))
        if len(events) == 1 and (self.envelope_mode == "binary" or not is_batch(envelope, content_type)):
            return _judge(index, MessageView(envelope, events[0], content_type, unique_keys=unique))
        verdicts = tuple(_judge(index, MessageView(envelope, event, content_type, unique_keys=unique))
                         for event in events)
        return _combine_batch(verdicts, events[0].problem if events and not events[0].attributes else None)


def _combine_batch(verdicts: tuple[Verdict, ...], problem: Violation | None) -> Verdict:
    """An HTTP batch is conformant when every event is; the first failing event speaks for the batch."""
    if problem is not None and len(verdicts) == 1 and not verdicts[0].conformant:
        return verdicts[0]
    for verdict in verdicts:
        if not verdict.conformant:
            return Verdict(Outcome.NONCONFORMANT, verdict.messagegroupid, verdict.messageid, verdict.violations,
                           events=verdicts)
    first = verdicts[0] if verdicts else None
    return Verdict(Outcome.CONFORMANT, first.messagegroupid if first else None, first.messageid if first else None,
                   events=verdicts)


def _judge(index: _Index, view: MessageView) -> Verdict:
    candidates = index.candidates(view)
    for definition in candidates:
        if definition.passes(view):
            return Verdict(Outcome.CONFORMANT, definition.groupid, definition.messageid)
    return explain_failure(candidates, view)


@dataclass(slots=True)
class Ruleset:
    endpoints: dict[str, EndpointRules]
    digest: str
    diagnostics: tuple[Diagnostic, ...]
    definition_count: int
    limits: Limits = DEFAULT_LIMITS

    def classify(self, envelope: Envelope) -> Verdict:
        return self._classify(envelope, False)

    def judge_fully(self, envelope: Envelope) -> Verdict:
        """`classify` without the accepting pass: the reference the accepting pass is held to."""
        return self._classify(envelope, True)

    def _classify(self, envelope: Envelope, fully: bool) -> Verdict:
        endpoint_id = envelope.endpoint
        rules = self.endpoints.get(endpoint_id) if isinstance(endpoint_id, str) else \
            self.default_endpoint() if endpoint_id is None else None
        if rules is None:
            return Verdict(Outcome.NONCONFORMANT, None, None, (Violation(
                "endpoint", Rule.ENDPOINT, "an endpoint of the registry", endpoint_id,
                f"endpoint {endpoint_id!r} is not in the registry" if endpoint_id else
                "the message names no endpoint and the registry has several"),))
        # past a limit the message is judged no further: reading it is the work a limit exists to bound
        too_big = envelope_violation(envelope, self.limits)
        if too_big is not None:
            return Verdict(Outcome.NONCONFORMANT, None, None, (too_big,))
        return rules.judge(envelope, self.limits) if fully else rules.classify(envelope, self.limits)

    def default_endpoint(self) -> EndpointRules | None:
        """Without an endpoint name: the only endpoint, or every definition of an endpoint-less registry."""
        declared = [e for k, e in self.endpoints.items() if k != REGISTRY_WIDE]
        if len(declared) == 1:
            return declared[0]
        if not declared:
            return self.endpoints.get(REGISTRY_WIDE)
        return None


def _endpoint_rules(endpoint: EndpointDefinition, compiled: dict[tuple[str, str], CompiledDefinition | None],
                    cache: CompileCache, diagnostics: list[Diagnostic]) -> EndpointRules:
    definitions = []
    for message in endpoint.messages:
        key = (message.groupid, message.messageid)
        if key not in compiled:
            compiled[key] = compile_definition(message, cache, diagnostics)
        if compiled[key] is not None:
            definitions.append(compiled[key])
    attrs = endpoint.attrs
    return EndpointRules(endpoint.endpointid, attrs.get("protocol"), attrs.get("envelopemode"),
                         tuple(d for d in definitions if d is not None))


@collector.paused()
def compile_registry(registry: Registry, digest: str = "", limits: Limits = DEFAULT_LIMITS) -> Ruleset:
    diagnostics: list[Diagnostic] = []
    cache = CompileCache()
    compiled: dict[tuple[str, str], CompiledDefinition | None] = {}
    endpoints = {eid: _endpoint_rules(endpoint, compiled, cache, diagnostics)
                 for eid, endpoint in registry.endpoints.items()}
    if not endpoints and registry.messages:
        everything = EndpointDefinition(REGISTRY_WIDE, {}, tuple(registry.messages.values()), None)  # type: ignore[arg-type]
        endpoints[REGISTRY_WIDE] = _endpoint_rules(everything, compiled, cache, diagnostics)
    else:
        for message in registry.messages.values():
            key = (message.groupid, message.messageid)
            if key not in compiled:
                compiled[key] = compile_definition(message, cache, diagnostics)
    count = sum(1 for d in compiled.values() if d is not None)
    return Ruleset(endpoints, digest, tuple(diagnostics), count, limits)
