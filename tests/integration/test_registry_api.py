"""`xgate run` serves the registry it loaded under /registry on its metrics address, and follows reloads.

The gateway runs as a real process on an HTTP source (no broker needed); the API is asked over real HTTP.
What is proved: the registry root and its collections answer; `?inline` gives a document that loads again
and judges recorded traffic as the configuration directory does (what a second xgate following this one
would load); a reload that changes one message raises that message's epoch and leaves the others; and the
metrics server's basic auth guards /registry as it guards /metrics.
"""

from __future__ import annotations

import asyncio
import base64
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.check import judge_record
from gateway.compiler import compile_registry
from gateway.loader import load_snapshot
from tests.conftest import free_port
from tests.integration.harness import Gateway, prepare
from tests.integration.profiles import PROFILES
from tests.integration.test_reload import until
from tests.integration.traffic import mixed

pytestmark = pytest.mark.integration
CE = "CloudEvents/1.0"


def other_group(source: str) -> dict[str, Any]:
    return {"messagegroups": {"it.other": {"envelope": CE, "messages": {
        "first": {"envelope": CE, "envelopemetadata": {"type": {"value": "com.example.it.first"},
                                                       "source": {"type": "uritemplate", "value": source}}},
        "second": {"envelope": CE, "envelopemetadata": {"type": {"value": "com.example.it.second"}}}}}}}


def get(gateway: Gateway, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(f"http://127.0.0.1:{gateway.metrics_port}{path}", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.headers["Content-Type"] == "application/json; charset=utf-8"
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        body = exc.read()
        return exc.code, json.loads(body) if exc.headers.get("Content-Type", "").startswith("application/json") \
            else body.decode()
    except OSError:
        return 0, None


def epoch(gateway: Gateway, path: str) -> int:
    status, body = get(gateway, path)
    return int(body["epoch"]) if status == 200 else 0


def test_registry_api_on_a_running_gateway(tmp_path: Path) -> None:
    world = prepare(PROFILES["HTTP"], tmp_path)
    (world.config_dir / "other.xreg.json").write_text(json.dumps(other_group("/it/{shard}")))
    gateway = Gateway(world.config_dir)

    async def scenario() -> None:
        await until(lambda: get(gateway, "/registry")[0] == 200, 60, "/registry answering")
        status, root = get(gateway, "/registry")
        assert root["self"] == f"http://127.0.0.1:{gateway.metrics_port}/registry/"
        assert (root["endpointscount"], root["messagegroupscount"], root["schemagroupscount"]) == (4, 1, 0)
        status, endpoint = get(gateway, "/registry/endpoints/in?inline=messages")
        assert status == 200 and list(endpoint["messages"]) == ["reading"]
        status, problem = get(gateway, "/registry/endpoints/nope")
        assert status == 404 and problem["subject"] == "/endpoints/nope"

        # what a follower would load: the same verdicts on recorded traffic
        _, everything = get(gateway, "/registry?inline")
        copy = tmp_path / "follower" / "registry.xreg.json"
        copy.parent.mkdir()
        copy.write_text(json.dumps(everything))
        original, followed = load_snapshot([world.config_dir]), load_snapshot([copy])
        assert not followed.errors, followed.errors
        records = mixed("HTTP", 70)
        assert [judge_record(compile_registry(followed.registry), r).as_dict() for r in records] == \
            [judge_record(compile_registry(original.registry), r).as_dict() for r in records]

        # a reload that changes one message: its epoch rises, its sibling's and its group's do not
        first, second = "/registry/messagegroups/it.other/messages/first", "/registry/messagegroups/it.other/messages/second"
        assert (epoch(gateway, first), epoch(gateway, second)) == (1, 1)
        (world.config_dir / "other.xreg.json").write_text(json.dumps(other_group("/elsewhere/{shard}")))
        await until(lambda: epoch(gateway, first) == 2, 20, "the edited message's epoch rising")
        assert epoch(gateway, second) == 1 and epoch(gateway, "/registry/messagegroups/it.other") == 1
        _, changed = get(gateway, first)
        assert changed["envelopemetadata"]["source"]["value"] == "/elsewhere/{shard}"
        assert changed["modifiedat"] > changed["createdat"]

    try:
        asyncio.run(scenario())
    finally:
        assert gateway.stop() == 0, gateway.output()


def test_registry_api_needs_the_metrics_credentials(tmp_path: Path) -> None:
    world = prepare(PROFILES["HTTP"], tmp_path)
    settings_file = world.config_dir / "gateway.yaml"
    settings = yaml.safe_load(settings_file.read_text())
    settings["metrics"] = {"username": "reader", "password": "s3cret", "probes_need_auth": False}
    settings_file.write_text(yaml.safe_dump(settings))
    gateway = Gateway(world.config_dir)
    token = {"Authorization": "Basic " + base64.b64encode(b"reader:s3cret").decode()}

    async def scenario() -> None:
        await until(lambda: get(gateway, "/registry")[0] == 401, 60, "the gateway answering")
        assert get(gateway, "/registry/endpoints/in")[0] == 401
        status, root = get(gateway, "/registry", token)
        assert status == 200 and root["endpointscount"] == 4

    try:
        asyncio.run(scenario())
    finally:
        assert gateway.stop() == 0, gateway.output()


def own_root(port: int) -> tuple[Any, str]:
    """GET / on the registry's own address: the body and the `Link` header."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
        return json.loads(response.read()), response.headers["Link"]


def test_epochs_and_createdat_survive_a_restart_and_the_registry_has_an_address_of_its_own(tmp_path: Path) -> None:
    """Issue 19, points 8 and 12: a real `xgate run` restarted keeps epoch 2 at 2 and `createdat` as it was (state
    beside the config directory, the default); `registry.address` serves the API at the root of its own address."""
    world = prepare(PROFILES["HTTP"], tmp_path)
    (world.config_dir / "other.xreg.json").write_text(json.dumps(other_group("/it/{shard}")))
    own_port = free_port()
    settings_file = world.config_dir / "gateway.yaml"
    settings = yaml.safe_load(settings_file.read_text())
    settings["registry"] = {"address": f"127.0.0.1:{own_port}"}
    settings_file.write_text(yaml.safe_dump(settings))
    first_path = "/registry/messagegroups/it.other/messages/first"
    seen: dict[str, Any] = {}

    async def first_life(gateway: Gateway) -> None:
        await until(lambda: epoch(gateway, first_path) == 1, 60, "/registry answering")
        (world.config_dir / "other.xreg.json").write_text(json.dumps(other_group("/elsewhere/{shard}")))
        await until(lambda: epoch(gateway, first_path) == 2, 20, "the edited message's epoch rising")
        seen["message"], seen["root"] = get(gateway, first_path)[1], get(gateway, "/registry")[1]
        seen["own"], seen["link"] = own_root(own_port)

    async def second_life(gateway: Gateway) -> None:
        await until(lambda: get(gateway, first_path)[0] == 200, 60, "/registry answering again")
        seen["again"], seen["root again"] = get(gateway, first_path)[1], get(gateway, "/registry")[1]

    for life in (first_life, second_life):
        gateway = Gateway(world.config_dir)
        try:
            asyncio.run(life(gateway))
        finally:
            assert gateway.stop() == 0, gateway.output()
    message, again = seen["message"], seen["again"]
    assert (again["epoch"], again["createdat"], again["modifiedat"]) == \
        (2, message["createdat"], message["modifiedat"])
    assert (seen["root again"]["epoch"], seen["root again"]["createdat"]) == \
        (seen["root"]["epoch"], seen["root"]["createdat"])
    assert (tmp_path / ".config.xgate-state" / "registry-state.json").is_file()
    assert seen["own"]["self"] == f"http://127.0.0.1:{own_port}/" and seen["own"]["messagegroupscount"] == 1
    assert seen["link"] == f"<http://127.0.0.1:{own_port}>;rel=xregistry-root"
