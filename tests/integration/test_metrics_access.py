"""Who may read /metrics /healthz /readyz: loopback by default, https and basic auth when gateway.yaml says so.

The server runs for real on 127.0.0.1 and is asked over real HTTP(S) with aiohttp and urllib, trusting a CA
made for the test (tests/certificates.py). What is proved: the default address binds loopback only; with
`metrics.tls` the server speaks https with its certificate (a client that does not trust the CA is refused,
and so is plain http); with `metrics.username`/`password` a request without or with wrong credentials gets
401 and a Basic challenge, with them 200; the probes follow `probes_need_auth`; with `metrics.tls.ca`
clients need a certificate of that CA; and `xgate run` takes all of it from gateway.yaml, the password from
a secret file and the username from the environment, or refuses to start naming the broken setting.
"""

from __future__ import annotations

import asyncio
import base64
import os
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest
import yaml

from gateway.metrics.instruments import GatewayMetrics
from gateway.metrics.server import MetricsServer, parse_address
from gateway.settings import MetricsSettings, RuntimeSettings
from tests.certificates import Pki, make_pki
from tests.conftest import free_port
from tests.integration.harness import REPO

pytestmark = pytest.mark.integration
T = TypeVar("T")
USER, PASSWORD = "prometheus", "pä55:word"  # a colon and a non-ASCII letter in the password on purpose


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def run(scenario: Callable[[], Awaitable[T]]) -> T:
    async def bounded() -> T:
        async with asyncio.timeout(30):
            return await scenario()
    return asyncio.run(bounded())


def basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def trusting(pki: Pki, *, client_certificate: bool = False) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.ca))
    if client_certificate:
        context.load_cert_chain(str(pki.client_cert), str(pki.client_key))
    return context


async def answers(url: str, requests: list[tuple[str, dict[str, str]]],
                  tls: ssl.SSLContext | None = None) -> list[tuple[int, str, str]]:
    """(status, WWW-Authenticate, body) for each (path, headers)."""
    out = []
    async with aiohttp.ClientSession() as session:
        for path, headers in requests:
            async with session.get(url + path, headers=headers, ssl=tls if tls is not None else True) as response:
                out.append((response.status, response.headers.get("WWW-Authenticate", ""), await response.text()))
    return out


def serving(access: MetricsSettings) -> MetricsServer:
    metrics = GatewayMetrics()
    return MetricsServer(metrics.registry, lambda: (True, {"in": True}), "127.0.0.1:0", access)


def test_the_default_address_is_loopback_only() -> None:
    assert RuntimeSettings().metrics_address == "127.0.0.1:9464"
    assert parse_address(":9464") == ("127.0.0.1", 9464) and parse_address("9464") == ("127.0.0.1", 9464)
    assert parse_address("[::1]:9464") == ("::1", 9464)

    async def scenario() -> tuple[str, int]:
        server = MetricsServer(GatewayMetrics().registry, lambda: (True, {}), ":0")
        async with server:
            status = (await answers(f"http://127.0.0.1:{server.port}", [("/healthz", {})]))[0][0]
            runner = server._runner
            assert runner is not None
            [site] = runner.sites
            bound = site._server.sockets[0].getsockname()[0]  # type: ignore[union-attr]
            return bound, status
    assert run(scenario) == ("127.0.0.1", 200)
    help_text = subprocess.run([sys.executable, "-m", "gateway.cli", "run", "--help"], capture_output=True,
                               text=True, cwd=REPO, check=True).stdout
    assert "default 127.0.0.1:9464" in " ".join(help_text.split())


def test_https_with_basic_auth(pki: Pki) -> None:
    access = MetricsSettings(str(pki.server_cert), str(pki.server_key), None, USER, PASSWORD)

    async def scenario() -> tuple[list[tuple[int, str, str]], list[str]]:
        async with serving(access) as server:
            url = f"https://localhost:{server.port}"
            got = await answers(url, [("/metrics", {}), ("/metrics", basic(USER, "wrong")),
                                      ("/metrics", basic("someone", PASSWORD)),
                                      ("/metrics", {"Authorization": "Bearer " + PASSWORD}),
                                      ("/healthz", {}), ("/readyz", {}),
                                      ("/metrics", basic(USER, PASSWORD)), ("/healthz", basic(USER, PASSWORD)),
                                      ("/readyz", basic(USER, PASSWORD))], trusting(pki))
            refused = []
            for attempt, tls in ((f"http://127.0.0.1:{server.port}", None),  # plain http to the https port
                                 (url, ssl.create_default_context())):    # a client that does not trust the CA
                try:
                    await answers(attempt, [("/metrics", basic(USER, PASSWORD))], tls)
                    refused.append("answered")
                except aiohttp.ClientError as exc:
                    refused.append(type(exc).__name__)
            return got, refused
    got, refused = run(scenario)
    assert [status for status, _, _ in got] == [401, 401, 401, 401, 401, 401, 200, 200, 200]
    assert all(challenge == 'Basic realm="xgate", charset="UTF-8"' for _, challenge, _ in got[:6])
    assert "xgate_build_info" in got[6][2] and got[7][2] == "ok\n" and '"ready": true' in got[8][2]
    assert PASSWORD not in "".join(body for _, _, body in got[:6])
    assert refused[0] != "answered" and refused[1] == "ClientConnectorCertificateError"


def test_probes_may_stay_open_while_metrics_need_credentials() -> None:
    access = MetricsSettings(username=USER, password=PASSWORD, probes_need_auth=False)

    async def scenario() -> list[int]:
        async with serving(access) as server:
            got = await answers(f"http://127.0.0.1:{server.port}",
                                [("/healthz", {}), ("/readyz", {}), ("/metrics", {}), ("/metrics", basic(USER, PASSWORD))])
            return [status for status, _, _ in got]
    assert run(scenario) == [200, 200, 401, 200]


def test_mutual_tls_requires_a_client_certificate_of_the_ca(pki: Pki) -> None:
    access = MetricsSettings(str(pki.server_cert), str(pki.server_key), str(pki.ca))

    async def scenario() -> tuple[int, str]:
        async with serving(access) as server:
            url = f"https://127.0.0.1:{server.port}"
            [(status, _, _)] = await answers(url, [("/metrics", {})], trusting(pki, client_certificate=True))
            try:
                await answers(url, [("/metrics", {})], trusting(pki))
                without = "answered"
            except aiohttp.ClientError as exc:
                without = type(exc).__name__
            return status, without
    status, without = run(scenario)
    assert status == 200 and without != "answered"


# -- through `xgate run` and gateway.yaml --------------------------------------------------------------------


def _config(directory: Path, metrics: dict[str, Any]) -> Path:
    """An HTTP ingress route (no broker needed) and the given `metrics:` section."""
    directory.mkdir()
    ingress, egress = free_port(), free_port()
    document = {"endpoints": {
        "in": {"usage": ["consumer"], "protocol": "HTTP",
               "protocoloptions": {"endpoints": [{"uri": f"http://127.0.0.1:{ingress}/in"}]}},
        "out": {"usage": ["producer"], "protocol": "HTTP",
                "protocoloptions": {"endpoints": [{"uri": f"http://127.0.0.1:{egress}/out"}]}}}}
    (directory / "registry.yaml").write_text(yaml.safe_dump(document))
    (directory / "gateway.yaml").write_text(yaml.safe_dump({
        "routes": [{"source": "in", "conformant": "out", "nonconformant": "out"}], "metrics": metrics}))
    return directory


def _xgate_run(config: Path, port: int, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "gateway.cli", "run", "--config", str(config), "--no-watch",
                             "--metrics-address", f"127.0.0.1:{port}"], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, **env})


def _get(url: str, tls: ssl.SSLContext, headers: dict[str, str]) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5, context=tls) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_xgate_run_takes_tls_and_basic_auth_from_gateway_yaml(pki: Pki, tmp_path: Path) -> None:
    secret = tmp_path / "metrics-password"
    secret.write_text(PASSWORD + "\n")  # the trailing newline of a mounted secret is not part of it
    config = _config(tmp_path / "config", {
        "tls": {"cert": str(pki.server_cert), "key": str(pki.server_key)},
        "username": "${XGATE_TEST_METRICS_USER}", "password_file": str(secret)})
    port = free_port()
    process = _xgate_run(config, port, {"XGATE_TEST_METRICS_USER": USER})
    try:
        url, tls, statuses = f"https://127.0.0.1:{port}/metrics", trusting(pki), []
        deadline = time.monotonic() + 20
        while True:
            try:
                statuses = [_get(url, tls, {}), _get(url, tls, basic(USER, PASSWORD)),
                            _get(url, tls, basic(USER, PASSWORD + "\n"))]
                break
            except urllib.error.URLError:
                assert process.poll() is None and time.monotonic() < deadline, "xgate run did not serve metrics"
                time.sleep(0.2)
    finally:
        process.terminate()
        output = process.communicate(timeout=30)[0]
    assert statuses == [401, 200, 401], output
    assert f"on https://127.0.0.1:{port}" in output and "basic auth required" in output
    assert PASSWORD not in output


def test_xgate_run_refuses_to_start_with_broken_metrics_settings(tmp_path: Path) -> None:
    config = _config(tmp_path / "config", {"tls": {"cert": str(tmp_path / "missing.pem"),
                                                   "key": str(tmp_path / "missing.key")},
                                           "username": USER})
    process = _xgate_run(config, free_port(), {})
    output = process.communicate(timeout=60)[0]
    assert process.returncode == 2, output
    assert "gateway.yaml#/metrics/tls" in output and "missing.pem" in output and "No such file" in output
    assert "gateway.yaml#/metrics" in output and "needs both a username and a password" in output
