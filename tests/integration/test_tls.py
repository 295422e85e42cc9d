"""TLS to the brokers: xgate's MQTT and NATS sources and sinks over mutual TLS, on private brokers.

Each module run makes its own certificate authority (tests/certificates.py), a server certificate for
127.0.0.1 and localhost and a client certificate, then starts a Mosquitto with a TLS-only listener and a
nats-server with TLS required (both demanding a client certificate signed by that CA) on free ports, and
stops them afterwards, whatever happened. What is proved:

- messages move through source and sink of both protocols when `tls` names the CA, certificate and key,
  whether TLS is switched on by the uri scheme (`mqtts://`, `tls://`) or by the `tls` settings alone,
  and with the host written as a name (`localhost`) as well as an address (hostname verification);
- a broker whose certificate the CA did not sign is refused at once, with a non-retriable error that
  says so and points at `tls.ca`, and so is a connection without the client certificate the broker requires;
- `xgate run` routes MQTT-over-TLS traffic to NATS-over-TLS with the TLS settings taken from gateway.yaml.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.envelope import Envelope
from gateway.errors import AdapterError
from protocol_adapters import mqtt, nats
from protocol_adapters.base import EndpointConfig, TlsSettings
from protocol_adapters.nats.options import sink_options
from protocol_adapters.nats.tls_probe import refusal_reason
from tests.certificates import Pki, make_pki
from tests.conftest import free_port
from tests.contract.suite import run, take
from tests.integration.harness import Profile, run_scenario
from tests.integration.profiles import ENDPOINTS

pytestmark = pytest.mark.integration


def _binary(name: str) -> str:
    found = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if os.access(p, os.X_OK)),
                                       None)
    if found is None:
        pytest.skip(f"{name} is not installed: the TLS tests start a private {name} of their own")
    return found


@contextlib.contextmanager
def private_broker(name: str, argv: list[str], port: int, log: Path) -> Iterator[None]:
    """Run a broker process of our own until the block ends (also when it fails), waiting for its port."""
    with open(log, "wb") as out:
        # same process group as the tests: whatever stops the test run stops the broker too
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 15
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not open 127.0.0.1:{port}; its output:\n{log.read_text()[-2000:]}")
            time.sleep(0.05)
        yield
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def mosquitto_tls(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    binary = _binary("mosquitto")
    directory, port = tmp_path_factory.mktemp("mosquitto-tls"), free_port()
    config = directory / "mosquitto.conf"
    # `user root`: run as root, Mosquitto would otherwise switch to its own user, who cannot read pytest's
    # temporary folders (ignored when the tests do not run as root)
    config.write_text(f"""user root
per_listener_settings false
allow_anonymous true
persistence false
log_dest stderr
log_type error
log_type warning
listener {port} 127.0.0.1
cafile {pki.ca}
certfile {pki.server_cert}
keyfile {pki.server_key}
require_certificate true
""")
    with private_broker("mosquitto", [binary, "-c", str(config)], port, directory / "mosquitto.log"):
        yield port


@pytest.fixture(scope="module")
def nats_tls(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    binary = _binary("nats-server")
    directory, port = tmp_path_factory.mktemp("nats-tls"), free_port()
    config = directory / "nats.conf"
    config.write_text(f"""listen: "127.0.0.1:{port}"
jetstream {{ store_dir: "{directory / 'jetstream'}" }}
tls {{
  cert_file: "{pki.server_cert}"
  key_file: "{pki.server_key}"
  ca_file: "{pki.ca}"
  verify: true
  timeout: 2
}}
""")
    with private_broker("nats-server", [binary, "-c", str(config)], port, directory / "nats.log"):
        yield port


def mutual(pki: Pki, ca: Path | None = None, *, client_certificate: bool = True) -> TlsSettings:
    if not client_certificate:
        return TlsSettings(ca_file=str(ca or pki.ca))
    return TlsSettings(str(ca or pki.ca), str(pki.client_cert), str(pki.client_key))


def round_trip(config: EndpointConfig, count: int = 20) -> list[bytes]:
    """Publish `count` messages with the endpoint's sink and read them back with its source."""
    adapter = mqtt if config.protocol.startswith("MQTT") else nats
    sent = [b"tls message %d" % i for i in range(count)]

    async def scenario() -> list[bytes]:
        async with adapter.create_source(config) as source:
            async with adapter.create_sink(config) as sink:
                for body in sent:
                    await sink.send(Envelope(config.protocol, {}, body))
            got = await take(source, count)
            for envelope in got:
                await source.ack(envelope)
            return sorted(envelope.body for envelope in got)
    return run(scenario)


def refusal(config: EndpointConfig, role: str) -> tuple[AdapterError, float]:
    """The error entering the endpoint's source or sink raises, and how long it took."""
    adapter = mqtt if config.protocol.startswith("MQTT") else nats
    create = adapter.create_source if role == "source" else adapter.create_sink

    async def scenario() -> None:
        async with create(config):
            pass
    started = time.monotonic()
    with pytest.raises(AdapterError) as caught:
        run(scenario, timeout=CONNECT_TIMEOUT + 30)
    return caught.value, time.monotonic() - started


# refusals are told from timeouts by a connect timeout far longer than any stall of a loaded machine: a refusal
# at the handshake comes well within half of it, a timeout never does
CONNECT_TIMEOUT = 120
HANDSHAKE_BOUND = CONNECT_TIMEOUT / 2


# -- MQTT -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("protocol", "uri"), [("MQTT/5.0", "mqtts://localhost:{port}"),
                                               ("MQTT/3.1.1", "mqtt://127.0.0.1:{port}")])
def test_mqtt_source_and_sink_over_mutual_tls(protocol: str, uri: str, mosquitto_tls: int, pki: Pki) -> None:
    # the second uri says mqtt://: the tls settings alone switch TLS on, never a silent plaintext connection
    run_id = uuid.uuid4().hex[:8]
    config = EndpointConfig(f"tls-{run_id}", protocol, (uri.format(port=mosquitto_tls),),
                            {"topic_name": f"xgate/tls/{run_id}", "cleanstart": True, "cleansession": True},
                            tls=mutual(pki))
    assert round_trip(config) == sorted(b"tls message %d" % i for i in range(20))


@pytest.mark.parametrize("role", ["source", "sink"])
def test_mqtt_refuses_a_broker_signed_by_another_ca(role: str, mosquitto_tls: int, pki: Pki) -> None:
    config = EndpointConfig("untrusted", "MQTT/5.0", (f"mqtts://127.0.0.1:{mosquitto_tls}",),
                            {"topic_name": "xgate/tls/untrusted", "connecttimeout": CONNECT_TIMEOUT},
                            tls=mutual(pki, pki.rogue_ca))
    error, seconds = refusal(config, role)
    assert not error.retriable, error  # retrying cannot make the certificate trusted: fail, and say why
    assert "certificate" in str(error) and "tls.ca" in str(error) and "127.0.0.1" in str(error)
    assert seconds < HANDSHAKE_BOUND  # at the handshake, not after the connect timeout


def test_mqtt_broker_refuses_a_client_without_its_certificate(mosquitto_tls: int, pki: Pki) -> None:
    config = EndpointConfig("anonymous", "MQTT/5.0", (f"mqtts://127.0.0.1:{mosquitto_tls}",),
                            {"topic_name": "xgate/tls/anonymous", "connecttimeout": 2},
                            tls=mutual(pki, client_certificate=False))
    error, _ = refusal(config, "sink")
    assert not error.retriable, error
    assert "CERTIFICATE_REQUIRED" in str(error) and "tls.cert" in str(error)


# -- NATS -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "uri"), [("jetstream", "tls://localhost:{port}"),
                                           ("core", "nats://127.0.0.1:{port}")])
def test_nats_source_and_sink_over_mutual_tls(mode: str, uri: str, nats_tls: int, pki: Pki) -> None:
    run_id = uuid.uuid4().hex[:8]
    options: dict[str, Any] = {"subject": f"xgate.tls.{run_id}"}
    if mode == "jetstream":
        options.update(stream=f"XGATE_TLS_{run_id}", fetchtimeout=0.5)
    config = EndpointConfig(f"tls-{run_id}", "NATS", (uri.format(port=nats_tls),), options, tls=mutual(pki))
    assert round_trip(config) == sorted(b"tls message %d" % i for i in range(20))


@pytest.mark.parametrize("role", ["source", "sink"])
def test_nats_refuses_a_server_signed_by_another_ca(role: str, nats_tls: int, pki: Pki) -> None:
    config = EndpointConfig("untrusted", "NATS", (f"nats://127.0.0.1:{nats_tls}",),
                            {"subject": "xgate.tls.x", "connecttimeout": CONNECT_TIMEOUT}, tls=mutual(pki, pki.rogue_ca))
    error, seconds = refusal(config, role)
    assert not error.retriable, error
    assert "certificate" in str(error) and "tls.ca" in str(error) and "127.0.0.1" in str(error)
    assert seconds < HANDSHAKE_BOUND  # nats-py alone would hang here (see protocol_adapters/nats/source.py connect)


def test_nats_server_refuses_a_client_without_its_certificate(nats_tls: int, pki: Pki) -> None:
    config = EndpointConfig("anonymous", "NATS", (f"nats://127.0.0.1:{nats_tls}",), {"subject": "xgate.tls.x"},
                            tls=mutual(pki, client_certificate=False))
    error, _ = refusal(config, "sink")
    assert not error.retriable and "tls.cert" in str(error), error


def test_the_probe_reads_the_refusal_that_a_reset_can_hide_from_nats_py(nats_tls: int, pki: Pki) -> None:
    # the path the test above takes only when nats-py's CONNECT races the server's alert (tls_probe.py)
    without = EndpointConfig("anonymous", "NATS", (f"nats://127.0.0.1:{nats_tls}",), {"subject": "xgate.tls.x"},
                             tls=mutual(pki, client_certificate=False))
    context = sink_options(without).ssl_context()
    assert context is not None
    reason = asyncio.run(refusal_reason((f"nats://127.0.0.1:{nats_tls}",), context, 30))
    assert reason is not None and "tls.cert" in reason, reason
    # a client the server accepts is refused nothing: the probe must not invent a reason
    accepted = sink_options(EndpointConfig("mutual", "NATS", (f"nats://127.0.0.1:{nats_tls}",),
                                           {"subject": "xgate.tls.x"}, tls=mutual(pki))).ssl_context()
    assert accepted is not None
    assert asyncio.run(refusal_reason((f"nats://127.0.0.1:{nats_tls}",), accepted, 5)) is None


def test_a_missing_certificate_file_is_named_before_connecting(nats_tls: int, pki: Pki, tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-client.pem")
    for protocol, uri in (("NATS", f"nats://127.0.0.1:{nats_tls}"), ("MQTT/5.0", "mqtts://127.0.0.1:1")):
        config = EndpointConfig("missing", protocol, (uri,), {"subject": "s", "topic_name": "t"},
                                tls=TlsSettings(str(pki.ca), missing, str(pki.client_key)))
        error, _ = refusal(config, "sink")
        assert not error.retriable and f"tls.cert '{missing}'" in str(error) and "No such file" in str(error)


# -- the whole gateway --------------------------------------------------------------------------------------


def test_xgate_run_routes_mqtt_over_tls_to_nats_over_tls(mosquitto_tls: int, nats_tls: int, pki: Pki,
                                                         tmp_path: Path) -> None:
    """gateway.yaml's `tls` reaches every adapter: source, destinations, and the test's own publisher and
    readers (built from the same settings)."""
    tls = {"ca": str(pki.ca), "cert": str(pki.client_cert), "key": str(pki.client_key), "verify": True}
    source = Profile("MQTT/5.0", None, lambda run: {
        n: {"uris": [f"mqtts://127.0.0.1:{mosquitto_tls}"], "topic_name": f"it/tls/{run}/{n}",
            "topicfilter": f"it/tls/{run}/{n}", "qos": 1, "clientid": f"it-tls-{run}-{n}"} for n in ENDPOINTS},
        settings={n: {"tls": tls} for n in ENDPOINTS})
    destination = Profile("NATS", None, lambda run: {
        n: {"uris": [f"nats://localhost:{nats_tls}"], "subject": f"it.tls.{run}.{n}", "stream": f"IT_TLS_{run}_{n}"}
        for n in ENDPOINTS}, settings={n: {"tls": tls} for n in ENDPOINTS})
    report = run_scenario(source, tmp_path, 300, destination=destination, timeout=60)
    log = report.pop("gateway_log_tail")
    assert report["gateway_exit"] == 0, log
    for name in ("valid", "dlq", "unknown"):
        counts = report[name]
        assert counts["expected"] > 0 and counts["missing"] == 0 and counts["unexpected"] == 0, (report, log)
    assert sum(report[name]["arrived"] for name in ("valid", "dlq", "unknown")) == 300
