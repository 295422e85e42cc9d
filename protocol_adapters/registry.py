"""Protocol name -> adapter package; a missing optional dependency raises an install hint.

`option_problems` runs an adapter's own options reader (the one its source or sink is built with) without
connecting, so that `xgate lint`, `run` and a reload refuse the same endpoints for the same reasons."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from gateway.errors import GatewayError
from protocol_adapters.base import EndpointConfig, SinkAdapter, SourceAdapter
from protocol_adapters.option_values import OptionError

# protocol -> (module exposing create_source/create_sink, extra that installs its client library)
ADAPTERS: dict[str, tuple[str, str]] = {
    "KAFKA": ("protocol_adapters.kafka", "kafka"),
    "MQTT/3.1.1": ("protocol_adapters.mqtt", "mqtt"),
    "MQTT/5.0": ("protocol_adapters.mqtt", "mqtt"),
    "AMQP/1.0": ("protocol_adapters.amqp", "amqp"),
    "NATS": ("protocol_adapters.nats", "nats"),
    "HTTP": ("protocol_adapters.http", "http"),
    # the in-process broker of gateway.testing, for tests and dry runs
    "MEMORY": ("gateway.testing.memory", "dev"),
}


def adapter_module(protocol: str) -> Any:
    try:
        module_name, extra = ADAPTERS[protocol]
    except KeyError:
        raise GatewayError(f"no adapter for protocol {protocol!r}; known: {', '.join(ADAPTERS)}") from None
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith(("protocol_adapters", "gateway")):
            raise
        raise GatewayError(f"the {protocol} adapter needs an optional dependency ({exc.name}): "
                           f"pip install 'xgate[{extra}]'") from exc


# protocol -> module whose `source_options(config)` / `sink_options(config)` read and check every option
OPTIONS: dict[str, str | None] = {
    "KAFKA": "protocol_adapters.kafka.options",
    "MQTT/3.1.1": "protocol_adapters.mqtt.options",
    "MQTT/5.0": "protocol_adapters.mqtt.options",
    "AMQP/1.0": "protocol_adapters.amqp.options",
    "NATS": "protocol_adapters.nats.options",
    "HTTP": "protocol_adapters.http.options",
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
        adapter_module(config.protocol)  # the install hint when its client library is missing
        reader = getattr(importlib.import_module(module_name), f"{role}_options")
        reader(config)
    except OptionError as exc:
        return [OptionProblem(exc.option, str(exc))]
    except GatewayError as exc:
        return [OptionProblem("", str(exc))]
    except (TypeError, ValueError, AttributeError) as exc:  # a reader's gap: still a line, never a traceback
        return [OptionProblem("", f"endpoint {config.endpoint_id!r}: its options cannot be read: {exc}")]
    return []


def create_source(config: EndpointConfig) -> SourceAdapter:
    source: SourceAdapter = adapter_module(config.protocol).create_source(config)
    return source


def create_observer(config: EndpointConfig) -> SourceAdapter:
    """A source that reads beside the running gateway without taking messages from its consumers or committing
    for them (xgate capture); ObserverRefused where the protocol cannot (an AMQP queue)."""
    module = adapter_module(config.protocol)
    observer: SourceAdapter = getattr(module, "create_observer", module.create_source)(config)
    return observer


def create_sink(config: EndpointConfig) -> SinkAdapter:
    sink: SinkAdapter = adapter_module(config.protocol).create_sink(config)
    return sink


def share_source(config: EndpointConfig, worker: int) -> EndpointConfig:
    """The source config worker `worker` of `xgate run --workers N` uses, so that the N workers share the source
    by the protocol's own means (consumer group, shared subscription, queue group, competing receivers,
    SO_REUSEPORT) instead of each receiving every message."""
    module = adapter_module(config.protocol)
    share = getattr(module, "share_source", None)
    if share is None:
        raise GatewayError(f"the {config.protocol} adapter cannot share endpoint {config.endpoint_id!r} "
                           "between workers: run it with --workers 1")
    shared: EndpointConfig = share(config, worker)
    return shared
