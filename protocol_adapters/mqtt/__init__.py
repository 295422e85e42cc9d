"""MQTT 3.1.1 and 5.0 adapter (aiomqtt over paho-mqtt): `config.protocol` picks the version."""

from __future__ import annotations

from protocol_adapters.mqtt.options import MqttOptions, build_options, share_source
from protocol_adapters.mqtt.sink import MqttSink, create_sink
from protocol_adapters.mqtt.source import MqttSource, create_source

__all__ = ["MqttOptions", "MqttSink", "MqttSource", "build_options", "create_sink", "create_source",
           "share_source"]
