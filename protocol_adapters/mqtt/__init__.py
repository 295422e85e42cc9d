"""MQTT 3.1.1 and 5.0 adapter (aiomqtt over paho-mqtt): `config.protocol` picks the version."""

from __future__ import annotations

import secrets
from dataclasses import replace

from protocol_adapters.base import EndpointConfig
from protocol_adapters.mqtt.options import MqttOptions, build_options, share_source
from protocol_adapters.mqtt.sink import MqttSink, create_sink
from protocol_adapters.mqtt.source import MqttSource, create_source

__all__ = ["MqttOptions", "MqttSink", "MqttSource", "build_options", "create_observer", "create_sink",
           "create_source", "share_source"]


def create_observer(config: EndpointConfig) -> MqttSource:
    """Reads beside the gateway: a plain subscription (no shared group) in a clean session of its own client id."""
    options = build_options(config)
    filters = tuple(f.split("/", 2)[2] if f.startswith("$share/") else f for f in options.topic_filters)
    return MqttSource(replace(options, topic_filters=filters, clean=True, session_expiry=0,
                              client_id=f"{options.client_id}-capture-{secrets.token_hex(4)}"))
