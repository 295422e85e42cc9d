"""The configuration floor: readers of gateway.yaml sections that services share, below every service.

Each module reads one section with the one value reader (gateway/config_values.py) and imports nothing above
it (config_values, errors, the loader), so that gateway/settings.py, which assembles the sections, never
imports a service package (metrics, registry_api, runtime), and the services import their settings from
here. access: `metrics:` (TLS and basic auth of the operator's address); registry: `registry.write` and
`registry.events`.
"""
