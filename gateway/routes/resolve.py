"""Routes: which source endpoint's verdicts go where, from gateway.yaml or from labels on the source endpoint.

Labels let one dropped document carry its own route:

    "labels": {"xgate.route.conformant": "telemetry.valid",
               "xgate.route.nonconformant": "telemetry.dlq",
               "xgate.route.unmatched": "telemetry.dlq",
               "xgate.route.policy": "forward",
               "xgate.route.inflight": "500",
               "xgate.route.exactly_once": "false"}

A route in gateway.yaml for the same source wins over labels.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gateway import config_values
from gateway.errors import Diagnostic, Severity
from gateway.model.resolved import Registry
from gateway.routes.credentials import scrub_endpoint
from gateway.routes.endpoint_checks import endpoint_problems
from gateway.routes.exactly_once import join_transaction
from gateway.settings import POLICIES, RouteSettings, Settings
from protocol_adapters.base import EndpointConfig, TlsSettings

LABEL_PREFIX = "xgate.route."
SOURCE_USAGES = ("consumer", "subscriber")


@dataclass(frozen=True, slots=True)
class Route:
    source: EndpointConfig
    conformant: EndpointConfig | None
    nonconformant: EndpointConfig | None
    unmatched: EndpointConfig | None
    policy: str
    inflight: int


def endpoint_config(registry: Registry, endpoint_id: str, settings: Settings) -> EndpointConfig:
    endpoint = registry.endpoints[endpoint_id]
    attrs = endpoint.attrs
    override = settings.endpoints.get(endpoint_id)
    # credentials come from the settings only: whatever a document carries is left out (credentials.py warns)
    options, uris, _ = scrub_endpoint(endpoint)
    if override is None:
        return EndpointConfig(endpoint_id, attrs.get("protocol") or "", uris, options, tuple(attrs.get("usage", ())))
    options.update(override.options)
    tls = None
    if override.tls is not None:
        tls = TlsSettings(override.tls.get("ca"), override.tls.get("cert"), override.tls.get("key"),
                          bool(override.tls.get("verify", True)))
    return EndpointConfig(endpoint_id, attrs.get("protocol") or "", override.uris or uris, options,
                          tuple(attrs.get("usage", ())), override.username, override.password, tls, override.extra)


def _from_labels(endpoint_id: str, labels: dict[str, Any]) -> tuple[RouteSettings | None, dict[str, str]]:
    """The route the source endpoint's labels describe, and a problem per label whose value is not of its
    kind (read as gateway.yaml's route settings are: `inflight` an integer of at least 1, `exactly_once` a
    flag)."""
    routed = {k[len(LABEL_PREFIX):]: str(v) for k, v in labels.items() if k.startswith(LABEL_PREFIX)}
    if not routed:
        return None, {}
    problems: dict[str, str] = {}
    inflight = exactly_once = None
    try:
        inflight = config_values.integer(routed["inflight"], least=1) if "inflight" in routed else None
    except config_values.ValueProblem as problem:
        problems["inflight"] = str(problem)
    try:
        exactly_once = config_values.flag(routed["exactly_once"]) if "exactly_once" in routed else None
    except config_values.ValueProblem as problem:
        problems["exactly_once"] = str(problem)
    return RouteSettings(endpoint_id, routed.get("conformant"), routed.get("nonconformant"), routed.get("unmatched"),
                         routed.get("policy", "forward").lower(), inflight, f"labels of {endpoint_id}",
                         exactly_once), problems


def resolve_routes(registry: Registry, settings: Settings) -> tuple[list[Route], list[Diagnostic]]:
    """Every route whose endpoints exist; each problem names the route and what is wrong."""
    wanted: dict[str, RouteSettings] = {}
    label_problems: dict[str, dict[str, str]] = {}
    for endpoint_id, endpoint in registry.endpoints.items():
        labelled, label_problems[endpoint_id] = _from_labels(endpoint_id, endpoint.attrs.get("labels") or {})
        if labelled is not None:
            wanted[endpoint_id] = labelled
    for route in settings.routes:
        wanted[route.source] = route
        label_problems.pop(route.source, None)  # gateway.yaml's route wins: the labels are not read
    routes: list[Route] = []
    problems: list[Diagnostic] = []
    where = settings.file or "gateway.yaml"

    def problem(route: RouteSettings, message: str, key: str) -> None:
        file, pointer = where, f"{route.origin}/{key}"
        labelled = registry.endpoints.get(route.source) if not route.origin.startswith("/") else None
        if labelled is not None:  # a route from labels: they are in the source endpoint's document
            file = labelled.origin.file
            pointer = f"{labelled.origin.pointer}/labels" + (f"/{LABEL_PREFIX}{key}" if key != "source" else "")
        problems.append(Diagnostic(Severity.ERROR, file, f"route from {route.source!r} ({route.origin}): {message}",
                                   pointer=pointer, code="route"))

    for route in wanted.values():
        if route.source not in registry.endpoints:
            problem(route, "the source endpoint is not in the registry", "source")
            continue
        if label_problems.get(route.source):
            for key, message in label_problems[route.source].items():
                problem(route, f"{key}: {message}", key)
            continue
        if route.policy not in POLICIES:
            problem(route, f"policy {route.policy!r} is not one of {', '.join(POLICIES)}", "policy")
            continue
        usage = registry.endpoints[route.source].attrs.get("usage") or []
        if usage and not set(usage) & set(SOURCE_USAGES):
            problem(route, f"the source endpoint's usage is {usage}, not consumer or subscriber", "source")
            continue
        destinations: dict[str, EndpointConfig | None] = {}
        broken = False
        for role in ("conformant", "nonconformant", "unmatched"):
            target = getattr(route, role)
            if target is None:
                destinations[role] = None
            elif not isinstance(target, str) or target not in registry.endpoints:
                problem(route, f"{role} destination {target!r} is not in the registry", role)
                broken = True
            else:
                destinations[role] = endpoint_config(registry, target, settings)
        source = endpoint_config(registry, route.source, settings)
        checked = _adapter_problems(registry, settings, source, destinations)
        problems.extend(checked)
        if broken or checked:
            continue
        built = Route(source, destinations["conformant"],
                      destinations["nonconformant"],
                      destinations["unmatched"] if route.unmatched else destinations["nonconformant"],
                      route.policy, route.inflight or settings.runtime.inflight)
        if route.exactly_once if route.exactly_once is not None else settings.runtime.exactly_once:
            joined = join_transaction([built.source, built.conformant, built.nonconformant, built.unmatched])
            if isinstance(joined, str):
                problem(route, joined, "exactly_once")
                continue
            joined_source, conformant, nonconformant, unmatched = joined
            assert joined_source is not None
            built = replace(built, source=joined_source, conformant=conformant, nonconformant=nonconformant,
                            unmatched=unmatched)
        routes.append(built)
    return routes, problems


def _adapter_problems(registry: Registry, settings: Settings, source: EndpointConfig,
                      destinations: dict[str, EndpointConfig | None]) -> list[Diagnostic]:
    """Every endpoint of a route as its adapter will read it: what would fail at connect time fails here."""
    found = endpoint_problems(registry, settings, source, "source", f"source of the route from {source.endpoint_id!r}")
    for role, target in destinations.items():
        if target is not None:
            found += endpoint_problems(registry, settings, target, "sink",
                                       f"{role} destination of the route from {source.endpoint_id!r}")
    return found


def adapter_diagnostics(problems: dict[str, str], registry: Registry) -> list[Diagnostic]:
    """Adapter build failures (endpoint id -> reason) as errors located at each endpoint's document."""
    out = []
    for endpoint_id, reason in sorted(problems.items()):
        endpoint = registry.endpoints.get(endpoint_id)
        file, pointer = (endpoint.origin.file, endpoint.origin.pointer) if endpoint is not None else ("gateway.yaml", "")
        out.append(Diagnostic(Severity.ERROR, file, f"endpoint {endpoint_id!r} cannot be used: {reason}", pointer,
                              code="adapter"))
    return out


def route_warnings(routes: list[Route], registry: Registry, settings: Settings) -> list[Diagnostic]:
    """A route that forwards nothing (no destination at all) acknowledges and drops every message: say so."""
    warnings = []
    configured = {route.source for route in settings.routes}
    for route in routes:
        if route.conformant or route.nonconformant or route.unmatched:
            continue
        source = route.source.endpoint_id
        endpoint = registry.endpoints.get(source)
        if source in configured or endpoint is None:
            file, pointer = settings.file or "gateway.yaml", "/routes"
        else:
            file, pointer = endpoint.origin.file, f"{endpoint.origin.pointer}/labels"
        warnings.append(Diagnostic(Severity.WARNING, file, f"route from {source!r} has no destination: every message "
                                   "it receives is acknowledged and dropped; name `conformant` (and `nonconformant`)",
                                   pointer, code="route"))
    return warnings
