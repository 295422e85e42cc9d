"""One validation for `xgate lint`, `xgate run` and a reload (issue 19 item 4): each configuration below is
refused by all three, with the same file, pointer and reason, before anything connects, without a traceback."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gateway.cli import main
from gateway.compiler import compile_registry
from gateway.loader import load_snapshot
from gateway.metrics import names
from gateway.runtime.engine import Engine
from gateway.runtime.reload import Reloader
from gateway.settings import load_settings
from gateway.testing import memory

ROOT = Path(__file__).resolve().parents[2]


def endpoint(protocol: str, usage: str, uri: str | None, **options: Any) -> dict[str, Any]:
    entries = {"endpoints": [{"uri": uri}]} if uri is not None else {}
    return {"usage": [usage], "protocol": protocol, "protocoloptions": {**entries, **options}}


def documents(**overrides: dict[str, Any]) -> dict[str, Any]:
    endpoints = {
        "n.in": endpoint("NATS", "consumer", "nats://127.0.0.1:4222", subject="cfgcheck.in"),
        "n.out": endpoint("NATS", "producer", "nats://127.0.0.1:4222", subject="cfgcheck.out"),
        "h.in": endpoint("HTTP", "subscriber", "http://127.0.0.1:18777/in"),
    }
    endpoints["n.in"]["messages"] = {"m": {"envelope": "CloudEvents/1.0",
                                           "envelopemetadata": {"type": {"value": "t"}}}}
    return {"endpoints": {**endpoints, **overrides}}


ROUTE = "routes:\n  - {source: n.in, conformant: n.out}\n"
DOC = "endpoints.xreg.json"

# (case id, gateway.yaml, endpoint overrides, file the problem is in, its pointer, words of the reason)
CASES: list[tuple[str, str, dict[str, Any], str, str, str]] = [
    ("unknown-endpoint", "routes:\n  - {source: n.in, conformant: n.nowhere}\n", {},
     "gateway.yaml", "/routes/0/conformant", "conformant destination 'n.nowhere' is not in the registry"),
    ("label-policy", "", {"n.in": {**documents()["endpoints"]["n.in"],
                                   "labels": {"xgate.route.conformant": "n.out", "xgate.route.policy": "bounce"}}},
     DOC, "/endpoints/n.in/labels/xgate.route.policy", "policy 'bounce' is not one of"),
    ("list-for-one-id", "routes:\n  - {source: n.in, conformant: [n.out, h.in]}\n", {},
     "gateway.yaml", "/routes/0/conformant", "expected one endpoint id"),
    ("unknown-policy", "routes:\n  - {source: n.in, conformant: n.out, policy: bounce}\n", {},
     "gateway.yaml", "/routes/0/policy", "expected one of forward, observe, reject, drop"),
    ("runtime", ROUTE + "runtime:\n  inflight: lots\n", {},
     "gateway.yaml", "/runtime/inflight", "expected an integer of at least 1, found 'lots'"),
    ("metrics", ROUTE + "metrics:\n  probes_need_auth: maybe\n", {},
     "gateway.yaml", "/metrics/probes_need_auth", "expected true or false"),
    ("maxbodysize", "routes:\n  - {source: h.in, conformant: n.out}\n",
     {"h.in": endpoint("HTTP", "subscriber", "http://127.0.0.1:18777/in", maxbodysize="1MB")},
     DOC, "/endpoints/h.in/protocoloptions/maxbodysize", "option 'maxbodysize': expected an integer"),
    ("subject-list", ROUTE, {"n.out": endpoint("NATS", "producer", "nats://127.0.0.1:4222", subject=["x"])},
     DOC, "/endpoints/n.out/protocoloptions/subject", "option 'subject': expected text, found ['x']"),
    ("endpoints-text", ROUTE, {"n.out": {"usage": ["producer"], "protocol": "NATS",
                                         "protocoloptions": {"endpoints": "nats://127.0.0.1:4222",
                                                             "subject": "cfgcheck.out"}}},
     DOC, "/endpoints/n.out/protocoloptions/endpoints", "expected a list of address entries"),
    ("no-address", ROUTE, {"n.out": endpoint("NATS", "producer", None, subject="cfgcheck.out")},
     DOC, "/endpoints/n.out/protocoloptions/endpoints", "no server uri"),
    ("protocol-natz", ROUTE, {"n.out": {**endpoint("NATS", "producer", "nats://127.0.0.1:4222",
                                                   subject="cfgcheck.out"), "protocol": "NATZ"}},
     DOC, "/endpoints/n.out/protocol", "xgate connects with KAFKA"),
    ("settings-option", ROUTE + "endpoints:\n  n.out:\n    options: {publishtimeout: soon}\n", {},
     "gateway.yaml", "/endpoints/n.out/options/publishtimeout", "expected a number above 0, found 'soon'"),
]
IDS = [case[0] for case in CASES]


def write(directory: Path, settings: str, overrides: dict[str, Any], only: tuple[str, ...] = ()) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    document = documents(**overrides)
    if only:
        document["endpoints"] = {k: v for k, v in document["endpoints"].items() if k in only}
    (directory / DOC).write_text(json.dumps(document))
    (directory / "gateway.yaml").write_text(settings)
    return directory


def located(text: str, directory: Path, file: str, pointer: str, reason: str) -> bool:
    """One line of `text` names the file, the pointer and the reason."""
    where = f"{directory / file}#{pointer}" if pointer else f"{directory / file}:"
    return any(where in line and reason in line for line in text.splitlines())


def test_the_valid_configuration_is_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = write(tmp_path / "c", ROUTE, {})
    assert main(["lint", str(directory)]) == 0
    assert "0 errors" in capsys.readouterr().out


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_lint_reports_it(case: tuple[str, str, dict[str, Any], str, str, str], tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    _, settings, overrides, file, pointer, reason = case
    directory = write(tmp_path / "c", settings, overrides)
    assert main(["lint", str(directory)]) == 1
    out = capsys.readouterr().out
    assert located(out, directory, file, pointer, reason), out


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_run_refuses_it_before_connecting(case: tuple[str, str, dict[str, Any], str, str, str], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    _, settings, overrides, file, pointer, reason = case
    directory = write(tmp_path / "c", settings, overrides)
    assert main(["run", "--config", str(directory), "--metrics-address", "", "--no-watch"]) == 2
    err = capsys.readouterr().err
    assert located(err, directory, file, pointer, reason), err
    assert "Traceback" not in err


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_reload_refuses_it(case: tuple[str, str, dict[str, Any], str, str, str], tmp_path: Path,
                             caplog: pytest.LogCaptureFixture) -> None:
    _, settings, overrides, file, pointer, reason = case
    # starts clean, with no route (nothing connects); a broken document falls back to this content
    directory = write(tmp_path / "c", "", {}, only=("n.in",))
    snapshot = load_snapshot([directory])
    start, _ = load_settings(directory)
    engine = Engine([], compile_registry(snapshot.registry, snapshot.digest), create_source=memory.create_source,
                    create_sink=memory.create_sink)
    reloader = Reloader(directory, engine, snapshot, start)
    write(directory, settings, overrides)
    with caplog.at_level(logging.ERROR, logger="xgate.reload"):
        outcome = asyncio.run(reloader.reload("test"))
    assert outcome == "failed"
    assert engine.metrics[names.RELOADS].labels("failed")._value.get() == 1
    assert located(caplog.text, directory, file, pointer, reason), caplog.text


def test_the_command_line_says_it_in_a_line_without_a_traceback(tmp_path: Path) -> None:
    directory = write(tmp_path / "c", "routes:\n  - {source: n.in, conformant: [n.out, h.in]}\n", {})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "gateway.cli", "run", "--config", str(directory),
                           "--metrics-address", ""], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "TypeError" not in done.stderr
    expected = (f"{directory / 'gateway.yaml'}#/routes/0/conformant: error [settings]: expected one endpoint id, "
                "found ['n.out', 'h.in']")
    assert [line for line in done.stderr.splitlines() if "/routes/0/conformant" in line] == [expected]


@pytest.mark.parametrize("command, endpoint_id", [("capture", "n.in"), ("replay", "n.out")])
def test_capture_and_replay_check_their_endpoint_the_same_way(command: str, endpoint_id: str, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    bad = endpoint("NATS", "consumer", None, subject="cfgcheck.x")
    directory = write(tmp_path / "c", "", {endpoint_id: bad})
    assert main([command, "--config", str(directory), "--endpoint", endpoint_id]) == 2
    err = capsys.readouterr().err
    assert located(err, directory, DOC, f"/endpoints/{endpoint_id}/protocoloptions/endpoints", "no server uri"), err
