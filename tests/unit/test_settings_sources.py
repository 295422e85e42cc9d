"""gateway.yaml `sources:`: registries followed beside the local files; off by default, allow-listed hosts only."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.errors import Severity
from gateway.loader.sources import RegistrySource
from gateway.settings import load_settings, load_sources

ALLOW = "remote:\n  allow: [127.0.0.1, registry.example.com]\n"


def _settings(tmp_path: Path, text: str) -> tuple[tuple[RegistrySource, ...], list[tuple[str, str]]]:
    (tmp_path / "gateway.yaml").write_text(text)
    settings, diagnostics = load_settings(tmp_path)
    assert all(d.file == str(tmp_path / "gateway.yaml") and d.severity is Severity.ERROR for d in diagnostics)
    return settings.sources, [(d.pointer, d.message) for d in diagnostics]


def test_no_section_follows_nothing(tmp_path: Path) -> None:
    assert _settings(tmp_path, ALLOW) == ((), [])


def test_a_source_with_defaults_and_a_bearer_token_from_a_file(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "token").write_text("s3cret\n")
    monkeypatch.setenv("REGISTRY_HOST", "registry.example.com")
    sources, problems = _settings(tmp_path, ALLOW + f"""sources:
  - url: HTTP://127.0.0.1:9464/registry/
  - url: https://${{REGISTRY_HOST}}/registry
    interval: ${{POLL:-5}}
    bearer_token_file: {tmp_path / 'token'}
  - url: https://registry.example.com/other
    username: xgate
    password: pw
""")
    assert problems == []
    first, second, third = sources
    assert (first.url, first.interval, first.headers()) == ("http://127.0.0.1:9464/registry", 30.0, {})
    assert first.request_url == "http://127.0.0.1:9464/registry?inline"
    assert (second.url, second.interval) == ("https://registry.example.com/registry", 5.0)
    assert second.headers() == {"Authorization": "Bearer s3cret"}
    assert third.headers() == {"Authorization": "Basic eGdhdGU6cHc="}
    assert "s3cret" not in repr(second) and "pw" not in repr(third)


def test_a_host_off_the_allow_list_is_a_settings_error_naming_the_field(tmp_path: Path) -> None:
    sources, problems = _settings(tmp_path, ALLOW + "sources:\n  - url: http://10.1.2.3:8080/registry\n")
    assert sources == ()
    assert problems == [("/sources/0/url", ("http://10.1.2.3:8080/registry cannot be followed: "
                                           "host 10.1.2.3:8080 is not on gateway.yaml `remote.allow`"))]


def test_sources_need_remote_fetching_on(tmp_path: Path) -> None:
    _, problems = _settings(tmp_path, "sources:\n  - url: http://127.0.0.1/registry\n")
    assert problems == [("/sources/0/url", ("http://127.0.0.1/registry cannot be followed: remote fetching is off "
                                           "(gateway.yaml `remote.allow` lists no host)"))]


@pytest.mark.parametrize(("entry", "pointer", "words"), [
    ("{url: http://127.0.0.1/r, interval: 0.5}", "/sources/0/interval", "at least 1"),
    ("{url: http://127.0.0.1/r, interval: soon}", "/sources/0/interval", "at least 1"),
    ("{url: 'http://127.0.0.1/r?inline'}", "/sources/0/url", "without query"),
    ("{url: 'ftp://127.0.0.1/r'}", "/sources/0/url", "http(s) URL"),
    ("{interval: 3}", "/sources/0/url", "http(s) URL"),
    ("{url: http://127.0.0.1/r, polling: 3}", "/sources/0/polling", "unknown setting"),
    ("{url: http://127.0.0.1/r, username: x}", "/sources/0", "both a username and a password"),
    ("{url: http://127.0.0.1/r, bearer_token: t, username: x, password: y}", "/sources/0", "not both"),
    ("{url: http://127.0.0.1/r, bearer_token: t, bearer_token_file: /nope}", "/sources/0/bearer_token_file",
     "not both"),
    ("just-a-string", "/sources/0", "expected a mapping"),
])
def test_each_mistake_names_its_field(tmp_path: Path, entry: str, pointer: str, words: str) -> None:
    sources, problems = _settings(tmp_path, ALLOW + f"sources:\n  - {entry}\n")
    assert sources == ()
    assert [p for p, _ in problems] == [pointer]
    assert words in problems[0][1]


def test_a_url_listed_twice_and_a_section_that_is_not_a_list(tmp_path: Path) -> None:
    sources, problems = _settings(tmp_path, ALLOW + "sources:\n  - url: http://127.0.0.1/r\n  - url: http://127.0.0.1:80/r/\n")
    assert len(sources) == 1 and problems == [("/sources/1/url", "http://127.0.0.1/r is already listed")]
    assert _settings(tmp_path, ALLOW + "sources: {url: http://127.0.0.1/r}\n")[1][0][0] == "/sources"


def test_the_offline_commands_read_the_section_alone(tmp_path: Path) -> None:
    path = tmp_path / "gateway.yaml"
    path.write_text(ALLOW + "sources:\n  - url: http://127.0.0.1:1/registry\n  - url: http://10.0.0.1/registry\n")
    sources, diagnostics = load_sources(path)
    assert [s.url for s in sources] == ["http://127.0.0.1:1/registry"]
    assert [(d.file, d.pointer, d.code) for d in diagnostics] == [(str(path), "/sources/1/url", "settings")]
