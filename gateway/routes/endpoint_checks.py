"""Each endpoint a route connects to, checked as its adapter will read it, before anything connects.

`resolve_routes` calls this for every route's source (role "source") and destinations ("sink"), so that
`xgate lint`, `xgate run` and a reload refuse the same configuration for the same reasons. The adapter's own
options reader (through `protocol_adapters.registry`, the core's one door to the adapters) says what is
wrong; this module says where: the option as gateway.yaml overrides it (`/endpoints/<id>/options/<name>`),
or as the document declares it (`<endpoint pointer>/protocoloptions/<name>`).
"""

from __future__ import annotations

from gateway.errors import Diagnostic, Severity
from gateway.model.resolved import Registry
from gateway.pointers import escape
from gateway.settings import Settings
from protocol_adapters import registry as adapters
from protocol_adapters.base import EndpointConfig

CODE = "endpoint"


def endpoint_problems(registry: Registry, settings: Settings, config: EndpointConfig, role: str,
                      what: str) -> list[Diagnostic]:
    """A diagnostic per problem that would stop the adapter of `config` in `role`, at its file and pointer;
    `what` says which part the endpoint plays ("source of the route ...")."""
    found = []
    for problem in adapters.option_problems(config, role):
        file, pointer = _where(registry, settings, config.endpoint_id, problem.option)
        found.append(Diagnostic(Severity.ERROR, file, f"{problem.reason} ({what})", pointer=pointer, code=CODE))
    return found


def _where(registry: Registry, settings: Settings, endpoint_id: str, option: str) -> tuple[str, str]:
    """(file, pointer) of the option: gateway.yaml where it overrides the document, else the document."""
    override = settings.endpoints.get(endpoint_id)
    yaml_file, yaml_pointer = settings.file or "gateway.yaml", f"/endpoints/{escape(endpoint_id)}"
    if override is not None and option:
        if option == "endpoints" and override.uris:
            return yaml_file, f"{yaml_pointer}/uris"
        if option in override.options:
            return yaml_file, f"{yaml_pointer}/options/{escape(option)}"
        if option == "tls" and override.tls is not None:
            return yaml_file, f"{yaml_pointer}/tls"
        if option in override.extra:
            return yaml_file, f"{yaml_pointer}/{escape(option)}"
    endpoint = registry.endpoints[endpoint_id]
    origin = endpoint.origin
    if option == "protocol":
        return origin.file, f"{origin.pointer}/protocol"
    if option and (option == "endpoints" or option in (endpoint.attrs.get("protocoloptions") or {})):
        return origin.file, f"{origin.pointer}/protocoloptions/{escape(option)}"
    if option in ("tls", "apikey", "listen", "sasl_mechanism", "virtual_host", "container_id"):
        return yaml_file, yaml_pointer  # settings-only: missing from gateway.yaml
    return origin.file, f"{origin.pointer}/protocoloptions" if option else origin.pointer


