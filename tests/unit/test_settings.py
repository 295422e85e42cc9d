"""gateway.yaml: secrets come from the environment or secret files, TLS settings are checked, `metrics:` is read.

Every problem is a diagnostic naming gateway.yaml and the JSON pointer of the setting; secret values never
appear in a diagnostic or a repr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.settings import MetricsSettings, Settings, load_settings
from tests.certificates import make_pki


def load(tmp_path: Path, document: dict[str, Any]) -> tuple[Settings, list[str]]:
    (tmp_path / "gateway.yaml").write_text(yaml.safe_dump(document))
    settings, diagnostics = load_settings(tmp_path)
    return settings, [str(d) for d in diagnostics]


def test_secrets_from_the_environment_and_from_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XGATE_TEST_PASSWORD", "from-env")
    monkeypatch.setenv("XGATE_TEST_APIKEY", "key-from-env")
    (tmp_path / "token").write_text("token-from-file\n")
    (tmp_path / "user").write_text("svc\n")
    settings, problems = load(tmp_path, {"endpoints": {
        "a": {"username": "xgate", "password": "${XGATE_TEST_PASSWORD}", "apikey": "${XGATE_TEST_APIKEY}"},
        "b": {"username_file": str(tmp_path / "user"), "password": "${XGATE_TEST_UNSET:-fallback}",
              "token_file": str(tmp_path / "token"), "apikey_file": str(tmp_path / "token")}}})
    assert problems == []
    a, b = settings.endpoints["a"], settings.endpoints["b"]
    assert (a.username, a.password, a.extra["apikey"]) == ("xgate", "from-env", "key-from-env")
    # a mounted secret's trailing newline is not part of the secret
    assert (b.username, b.password, b.extra["token"], b.extra["apikey"]) == ("svc", "fallback", "token-from-file",
                                                                               "token-from-file")
    assert "apikey_file" not in b.extra
    assert "from-env" not in repr(a) and "token-from-file" not in repr(b)  # secrets stay out of logs


def test_secret_problems_name_the_setting_and_never_the_value(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("s3cret")
    _, problems = load(tmp_path, {"endpoints": {
        "a": {"password": "${XGATE_TEST_CERTAINLY_UNSET}"},
        "b": {"password_file": str(tmp_path / "nope")},
        "c": {"password": "s3cret", "password_file": str(tmp_path / "pw")},
        "d": {"apikey_file": str(tmp_path / "nope")}}})
    assert any("gateway.yaml#/endpoints/a/password: error [settings]: environment variable "
               "XGATE_TEST_CERTAINLY_UNSET is not set" in p for p in problems), problems
    assert any("#/endpoints/b/password_file" in p and "No such file or directory" in p for p in problems), problems
    assert any("#/endpoints/c/password_file" in p and "either password or password_file" in p for p in problems)
    assert any("#/endpoints/d/apikey_file" in p and "cannot read" in p for p in problems), problems
    assert not any("s3cret" in p for p in problems)


def test_tls_settings_are_checked(tmp_path: Path) -> None:
    settings, problems = load(tmp_path, {"endpoints": {
        "a": {"tls": {"ca": "/etc/ca.pem", "verify": "false"}},
        "b": {"tls": {"cafile": "/etc/ca.pem", "verify": "sometimes"}}}})
    assert settings.endpoints["a"].tls == {"ca": "/etc/ca.pem", "verify": False}
    # a misspelt key would otherwise leave the connection verified against the system CAs, silently
    assert any("#/endpoints/b/tls/cafile: error [settings]: unknown setting (known: ca, cert, key, verify)" in p
               for p in problems), problems
    assert any("#/endpoints/b/tls/verify" in p and "expected true or false" in p for p in problems), problems


def test_metrics_defaults_to_no_tls_and_no_auth(tmp_path: Path) -> None:
    settings, problems = load(tmp_path, {"routes": []})
    assert problems == [] and settings.metrics == MetricsSettings()
    assert settings.runtime.metrics_address == "127.0.0.1:9464"


def test_metrics_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pki = make_pki(tmp_path / "pki")
    (tmp_path / "pw").write_text("scrape-me\n")
    monkeypatch.setenv("XGATE_TEST_METRICS_USER", "prometheus")
    settings, problems = load(tmp_path, {"metrics": {
        "tls": {"cert": str(pki.server_cert), "key": str(pki.server_key), "ca": str(pki.ca)},
        "username": "${XGATE_TEST_METRICS_USER}", "password_file": str(tmp_path / "pw"), "probes_need_auth": False}})
    assert problems == []
    assert settings.metrics == MetricsSettings(str(pki.server_cert), str(pki.server_key), str(pki.ca), "prometheus",
                                               "scrape-me", probes_need_auth=False)
    assert "scrape-me" not in repr(settings.metrics)


@pytest.mark.parametrize(("metrics", "expected"), [
    ({"username": "prometheus"}, "#/metrics: error [settings]: basic auth needs both a username and a password"),
    ({"password": "x"}, "#/metrics: error [settings]: basic auth needs both a username and a password"),
    ({"username": "a:b", "password": "x"}, "#/metrics: error [settings]: the basic auth username must be"),
    ({"tls": {"cert": "/nonexistent/c.pem"}}, "#/metrics/tls: error [settings]: https needs both cert and key"),
    ({"tls": {"cert": "/nonexistent/c.pem", "key": "/nonexistent/k.pem"}},
     "#/metrics/tls: error [settings]: cannot load cert '/nonexistent/c.pem', key '/nonexistent/k.pem': No such file"),
    ({"tls": {"cert": "c", "key": "k", "client_ca": "x"}}, "#/metrics/tls/client_ca: error [settings]: unknown"),
    ({"probes_need_auth": "maybe"}, "#/metrics/probes_need_auth: error [settings]: expected true or false"),
    ({"user": "prometheus"}, "#/metrics/user: error [settings]: unknown setting"),
    ("on", "#/metrics: error [settings]: expected a mapping"),
])
def test_metrics_problems_name_the_setting(tmp_path: Path, metrics: Any, expected: str) -> None:
    _, problems = load(tmp_path, {"metrics": metrics})
    assert any(expected in p for p in problems), problems


def test_runtime_values_are_checked_and_name_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XGATE_TEST_INFLIGHT", "250")
    settings, problems = load(tmp_path, {"runtime": {
        "inflight": "${XGATE_TEST_INFLIGHT}", "drain_timeout": 12.5, "reload_debounce": "0.2",
        "limits": {"max_body_bytes": 4096, "max_batch_events": 10}}})
    assert problems == []
    runtime = settings.runtime
    assert (runtime.inflight, runtime.drain_timeout, runtime.reload_debounce) == (250, 12.5, 0.2)
    assert (runtime.limits.max_body_bytes, runtime.limits.max_batch_events, runtime.limits.max_headers) == (4096, 10, 100)

    settings, problems = load(tmp_path, {"runtime": {
        "inflight": "lots", "drain_timeout": -1, "summary_interval": float("nan"), "metrics_address": 9464,
        "workers": 0,  # at least one process
        "limits": {"max_headers": 0, "max_header_bytes": True, "max_bodybytes": 5}}})
    assert settings.runtime == type(settings.runtime)()  # every bad value falls back to its default
    pointers = sorted(p.split("#", 1)[1].split(":", 1)[0] for p in problems)
    assert pointers == ["/runtime/drain_timeout", "/runtime/inflight", "/runtime/limits/max_bodybytes",
                        "/runtime/limits/max_header_bytes", "/runtime/limits/max_headers",
                        "/runtime/metrics_address", "/runtime/summary_interval", "/runtime/workers"]
    assert all(p.startswith(str(tmp_path / "gateway.yaml")) for p in problems)
    assert any("expected an integer of at least 1, found 'lots'" in p for p in problems)
