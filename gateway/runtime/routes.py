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

from dataclasses import dataclass
from typing import Any

from gateway.errors import Diagnostic, Severity
from gateway.model.resolved import Registry
from gateway.runtime.credentials import scrub_endpoint
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


def _from_labels(endpoint_id: str, labels: dict[str, Any]) -> RouteSettings | None:
    routed = {k[len(LABEL_PREFIX):]: str(v) for k, v in labels.items() if k.startswith(LABEL_PREFIX)}
    if not routed:
        return None
    inflight = routed.get("inflight")
    exactly_once = routed.get("exactly_once", "").lower()
    return RouteSettings(endpoint_id, routed.get("conformant"), routed.get("nonconformant"), routed.get("unmatched"),
                         routed.get("policy", "forward").lower(),
                         int(inflight) if inflight and inflight.isdigit() else None, f"labels of {endpoint_id}",
                         {"true": True, "false": False}.get(exactly_once))


def resolve_routes(registry: Registry, settings: Settings) -> tuple[list[Route], list[Diagnostic]]:
    """Every route whose endpoints exist; each problem names the route and what is wrong."""
    wanted: dict[str, RouteSettings] = {}
    for endpoint_id, endpoint in registry.endpoints.items():
        labelled = _from_labels(endpoint_id, endpoint.attrs.get("labels") or {})
        if labelled is not None:
            wanted[endpoint_id] = labelled
    for route in settings.routes:
        wanted[route.source] = route
    routes: list[Route] = []
    problems: list[Diagnostic] = []
    where = settings.file or "gateway.yaml"

    def problem(route: RouteSettings, message: str) -> None:
        problems.append(Diagnostic(Severity.ERROR, where, f"route from {route.source!r} ({route.origin}): {message}",
                                   code="route"))

    for route in wanted.values():
        if route.source not in registry.endpoints:
            problem(route, "the source endpoint is not in the registry")
            continue
        if route.policy not in POLICIES:
            problem(route, f"policy {route.policy!r} is not one of {', '.join(POLICIES)}")
            continue
        usage = registry.endpoints[route.source].attrs.get("usage") or []
        if usage and not set(usage) & set(SOURCE_USAGES):
            problem(route, f"the source endpoint's usage is {usage}, not consumer or subscriber")
            continue
        destinations: dict[str, EndpointConfig | None] = {}
        broken = False
        for role in ("conformant", "nonconformant", "unmatched"):
            target = getattr(route, role)
            if target is None:
                destinations[role] = None
            elif target not in registry.endpoints:
                problem(route, f"{role} destination {target!r} is not in the registry")
                broken = True
            else:
                destinations[role] = endpoint_config(registry, target, settings)
        if broken:
            continue
        built = Route(endpoint_config(registry, route.source, settings), destinations["conformant"],
                      destinations["nonconformant"],
                      destinations["unmatched"] if route.unmatched else destinations["nonconformant"],
                      route.policy, route.inflight or settings.runtime.inflight)
        if route.exactly_once if route.exactly_once is not None else settings.runtime.exactly_once:
            from gateway.runtime.exactly_once import transactional  # it imports Route from here

            joined = transactional(built)
            if isinstance(joined, str):
                problem(route, joined)
                continue
            built = joined
        routes.append(built)
    return routes, problems
