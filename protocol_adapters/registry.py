"""Protocol name -> adapter package; a missing optional dependency raises an install hint.

`option_problems` runs an adapter's own options reader (the one its source or sink is built with) without
connecting, so that `xgate lint`, `run` and a reload refuse the same endpoints for the same reasons."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from gateway.bindings import BINDINGS
from gateway.errors import GatewayError
from protocol_adapters.base import EndpointConfig, SinkAdapter, SourceAdapter
from protocol_adapters.option_values import OptionError

# protocol -> (package of its adapter, extra that installs its client library). Every adapter package is laid
# out alike: source.py (`create_source`, and `create_observer` where reading beside the gateway differs;
# kafka's are in create.py, which picks the plain or the exactly-once source),
# sink.py (`create_sink`), options.py (`source_options`, `sink_options`, `share_source`), its __init__
# re-exporting them lazily, so that only building a source or sink imports the client library.
ADAPTERS: dict[str, tuple[str, str]] = {
    **{protocol: (f"protocol_adapters.{binding.adapter}", binding.adapter) for protocol, binding in BINDINGS.items()},
    # the in-process broker of gateway.testing, for tests and dry runs
    "MEMORY": ("gateway.testing.memory", "dev"),
}


def adapter_module(protocol: str) -> Any:
    try:
        module_name, _ = ADAPTERS[protocol]
    except KeyError:
        raise GatewayError(f"no adapter for protocol {protocol!r}; known: {', '.join(ADAPTERS)}") from None
    return importlib.import_module(module_name)


def _factory(protocol: str, name: str) -> Any:
    """`name` of the protocol's adapter (None when it has none); the install hint when its client library is
    missing, found as the name's module is imported."""
    module = adapter_module(protocol)
    try:
        return getattr(module, name, None)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith(("protocol_adapters", "gateway")):
            raise
        # the distribution, not the submodule that happened to be imported first (aiokafka, not aiokafka.record)
        package = (exc.name or "").partition(".")[0]
        raise GatewayError(f"the {protocol} adapter needs an optional dependency ({package}): "
                           f"pip install 'xgate[{ADAPTERS[protocol][1]}]'") from exc


# protocol -> module whose `source_options(config)` / `sink_options(config)` read and check every option
OPTIONS: dict[str, str | None] = {
    **{protocol: f"{package}.options" for protocol, (package, _) in ADAPTERS.items() if protocol != "MEMORY"},
    "MEMORY": None,  # takes any options
}
ROLES = ("source", "sink")


@dataclass(frozen=True, slots=True)
class OptionProblem:
    """Why an endpoint's adapter could not be built; `option` names the option at fault ("" for none,
    "protocol" for the protocol, "endpoints" for the address list)."""

    option: str
    reason: str


def option_problems(config: EndpointConfig, role: str) -> list[OptionProblem]:
    """What would stop `create_source` (role "source") or `create_sink` ("sink") for this endpoint, found by
    reading its options as the adapter does, without connecting. Empty when the adapter can be built."""
    if config.protocol not in OPTIONS:
        known = ", ".join(p for p in ADAPTERS if p != "MEMORY")
        return [OptionProblem("protocol", f"endpoint {config.endpoint_id!r} has protocol "
                                          f"{config.protocol or 'none'!r}; xgate connects with {known}")]
    module_name = OPTIONS[config.protocol]
    if module_name is None:
        return []
    try:
        _factory(config.protocol, f"create_{role}")  # the install hint when its client library is missing
        reader = getattr(importlib.import_module(module_name), f"{role}_options")
        reader(config)
    except OptionError as exc:
        return [OptionProblem(exc.option, str(exc))]
    except (TypeError, ValueError, AttributeError) as exc:  # a reader's gap: still a line, never a traceback
        return [OptionProblem("", f"endpoint {config.endpoint_id!r}: its options cannot be read: {exc}")]
    except GatewayError as exc:  # after ValueError: the value errors rooted at GatewayError are a reader's gap too
        return [OptionProblem("", str(exc))]
    return []


def create_source(config: EndpointConfig) -> SourceAdapter:
    source: SourceAdapter = _factory(config.protocol, "create_source")(config)
    return source


def create_observer(config: EndpointConfig) -> SourceAdapter:
    """A source that reads beside the running gateway without taking messages from its consumers or committing
    for them (xgate capture); ObserverRefused where the protocol cannot (an AMQP queue)."""
    create = _factory(config.protocol, "create_observer") or _factory(config.protocol, "create_source")
    observer: SourceAdapter = create(config)
    return observer


def create_sink(config: EndpointConfig) -> SinkAdapter:
    sink: SinkAdapter = _factory(config.protocol, "create_sink")(config)
    return sink


def share_source(config: EndpointConfig, worker: int) -> EndpointConfig:
    """The source config worker `worker` of `xgate run --workers N` uses, so that the N workers share the source
    by the protocol's own means (consumer group, shared subscription, queue group, competing receivers,
    SO_REUSEPORT) instead of each receiving every message."""
    share = _factory(config.protocol, "share_source")
    if share is None:
        raise GatewayError(f"the {config.protocol} adapter cannot share endpoint {config.endpoint_id!r} "
                           "between workers: run it with --workers 1")
    shared: EndpointConfig = share(config, worker)
    return shared
