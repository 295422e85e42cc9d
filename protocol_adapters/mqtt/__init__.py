"""MQTT 3.1.1 and 5.0 adapter (aiomqtt over paho-mqtt): `config.protocol` picks the version."""

from __future__ import annotations

from protocol_adapters.lazy import lazy_exports

_HOMES = {"MqttSource": "source", "create_source": "source", "create_observer": "source", "MqttSink": "sink",
          "create_sink": "sink", "MqttOptions": "options", "build_options": "options", "share_source": "options"}
__all__ = list(_HOMES)
__getattr__ = lazy_exports(__name__, _HOMES)
