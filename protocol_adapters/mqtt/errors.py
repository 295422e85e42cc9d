"""MQTT failures as AdapterError, with `retriable` decided from the reason code where there is one.

paho-mqtt 2 reports CONNACK results of both protocol versions as MQTT 5 reason codes (3.1.1's
"bad user name or password" becomes 0x86), so one table serves both.
"""

from __future__ import annotations

from aiomqtt import MqttCodeError, MqttError
from paho.mqtt.reasoncodes import ReasonCode

from gateway.errors import AdapterError, TransientAdapterError, adapter_failure
from protocol_adapters.tls import tls_refusal

# reason codes >= 0x80 that a later attempt may not see again (the broker is busy, moving, or restarting)
RETRIABLE_REASONS = frozenset({
    0x80,  # unspecified error
    0x83,  # implementation specific error
    0x88,  # server unavailable
    0x89,  # server busy
    0x8B,  # server shutting down
    0x8D,  # keep alive timeout
    0x8E,  # session taken over
    0x93,  # receive maximum exceeded
    0x97,  # quota exceeded
    0x9C,  # use another server
    0x9D,  # server moved
    0x9F,  # connection rate exceeded
})


def reason_value(code: object) -> int | None:
    if isinstance(code, ReasonCode):
        return code.value
    if isinstance(code, int):
        return code
    return None


def reason_retriable(code: int) -> bool:
    return code < 0x80 or code in RETRIABLE_REASONS


def describe(code: object) -> str:
    value = reason_value(code)
    if isinstance(code, ReasonCode):
        return f"{code} (0x{value:02X})"
    return f"0x{value:02X}" if value is not None else str(code)


def connect_error(exc: BaseException, where: str, tls_alert: str | None = None) -> AdapterError:
    """A failed connection attempt: refused CONNACKs with a permanent reason and refused TLS handshakes are
    not retriable. `tls_alert` is a TLS alert the broker sent during the attempt (options.TlsAlerts)."""
    if isinstance(exc, AdapterError):
        return exc
    # aiomqtt re-raises socket errors `from None`: the ssl error is still the context
    refusal = tls_refusal(exc)
    if refusal is None and tls_alert is not None:
        refusal = f"the broker refused it with {tls_alert} (check tls.cert and tls.key: it may require a " \
                  "client certificate it trusts)"
    if refusal is not None:
        return AdapterError(f"MQTT TLS handshake with {where} failed: {refusal}")
    if isinstance(exc, MqttCodeError):
        value = reason_value(exc.rc)
        if value is not None and value >= 0x80 and not reason_retriable(value):
            return AdapterError(f"MQTT broker {where} refused the connection: {describe(exc.rc)}")
    return TransientAdapterError(f"MQTT broker {where} unreachable: {exc or type(exc).__name__}")


def connection_lost(where: str, cause: BaseException | None = None) -> AdapterError:
    detail = f": {cause}" if cause is not None else ""
    return TransientAdapterError(f"MQTT connection to {where} lost{detail}")


def publish_refused(code: object, topic: str) -> AdapterError:
    value = reason_value(code) or 0x80
    return adapter_failure(f"MQTT broker refused the publish to {topic!r}: {describe(code)}",
                           retriable=reason_retriable(value))


def subscribe_refused(code: object, topic_filter: str) -> AdapterError:
    return AdapterError(f"MQTT broker refused the subscription to {topic_filter!r}: {describe(code)}")


__all__ = ["MqttError", "connect_error", "connection_lost", "publish_refused", "reason_retriable",
           "subscribe_refused"]
