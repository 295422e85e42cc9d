"""`xgate init`: the scaffold loads and compiles without a warning, its routes resolve, its definitions judge
recorded messages on every protocol's source, it never overwrites without --force and names bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gateway.check import judge_record
from gateway.cli import main
from gateway.commands.scaffold import DEFAULT_PROTOCOLS, PROTOCOLS
from gateway.compiler import compile_registry
from gateway.loader import load_snapshot
from gateway.routes.resolve import resolve_routes
from gateway.settings import load_settings

CE_HEADERS = {"ce_specversion": "1.0", "ce_id": "1", "ce_type": "com.example.reading",
              "ce_source": "/sites/berlin/sensors/t-1", "ce_time": "2026-11-25T10:00:00Z",
              "content-type": "application/json"}


def structured(data: object, **attributes: str) -> str:
    event = {"specversion": "1.0", "id": "1", "type": "com.example.reading", "source": "/sites/berlin/sensors/t-1",
             "time": "2026-11-25T10:00:00Z", "datacontenttype": "application/json", "data": data, **attributes}
    return json.dumps(event)


# one structured-mode recorded message per protocol, in the section 7 form
def record(protocol: str, body: str) -> dict[str, object]:
    base: dict[str, object] = {"endpoint": f"{protocol}.in", "body": body}
    if protocol == "kafka":
        return {**base, "protocol": "KAFKA", "topic": "events",
                "headers": {"content-type": "application/cloudevents+json"}}
    if protocol in ("mqtt", "mqtt3"):
        version = "MQTT/5.0" if protocol == "mqtt" else "MQTT/3.1.1"
        extra = {"content_type": "application/cloudevents+json"} if protocol == "mqtt" else {}
        return {**base, "protocol": version, "topic_name": "events/t-1", **extra}
    if protocol == "amqp":
        return {**base, "protocol": "AMQP/1.0", "properties": {"content-type": "application/cloudevents+json"}}
    if protocol == "nats":
        return {**base, "protocol": "NATS", "subject": "events.t-1",
                "headers": {"Content-Type": "application/cloudevents+json"}}
    return {**base, "protocol": "HTTP", "method": "POST", "headers": {"Content-Type": "application/cloudevents+json"}}


@pytest.fixture(scope="module")
def scaffold(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("init") / "config"
    assert main(["init", str(directory), *PROTOCOLS]) == 0
    return directory


def test_every_protocol_gets_a_commented_document_and_the_settings(scaffold: Path) -> None:
    names = sorted(p.name for p in scaffold.iterdir())
    assert names == sorted(["gateway.yaml", "messages.xreg.yaml", *(f"{p}.xreg.yaml" for p in PROTOCOLS)])
    for path in scaffold.iterdir():
        text = path.read_text()
        assert text.startswith("# "), path.name
        assert isinstance(yaml.safe_load(text), dict), path.name


def test_the_scaffold_loads_compiles_and_routes_without_a_diagnostic(scaffold: Path) -> None:
    snapshot = load_snapshot([scaffold])
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    assert list(snapshot.diagnostics) + list(ruleset.diagnostics) == []
    settings, problems = load_settings(scaffold)
    assert problems == []
    routes, route_problems = resolve_routes(snapshot.registry, settings)
    assert route_problems == []
    assert sorted(r.source.endpoint_id for r in routes) == sorted(f"{p}.in" for p in PROTOCOLS)
    http = next(r for r in routes if r.source.endpoint_id == "http.in")
    assert http.policy == "reject" and http.nonconformant is None
    kafka = next(r for r in routes if r.source.endpoint_id == "kafka.in")
    assert kafka.policy == "forward" and kafka.nonconformant is not None
    assert kafka.nonconformant.endpoint_id == "kafka.dlq"
    assert settings.runtime.metrics_address.startswith("127.0.0.1:")
    assert settings.remote.allow == ()
    assert settings.console is not None and settings.console.show_bodies  # on, for loopback (issue 37)


def test_lint_reports_no_error_and_no_warning(scaffold: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", str(scaffold)]) == 0
    assert "0 errors, 0 warnings" in capsys.readouterr().out


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_each_source_judges_by_the_example_definition(scaffold: Path, protocol: str) -> None:
    snapshot = load_snapshot([scaffold])
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    good = judge_record(ruleset, record(protocol, structured({"value": 21.5, "unit": "C"})), None).as_dict()
    assert good["verdict"] == "conformant", good
    assert (good["messagegroupid"], good["messageid"]) == ("example.events", "example.reading")
    out_of_range = judge_record(ruleset, record(protocol, structured({"value": 900, "unit": "C"})), None).as_dict()
    assert out_of_range["verdict"] == "nonconformant"
    assert any(v["path"].startswith("data") for v in out_of_range["violations"]), out_of_range
    wrong_source = judge_record(ruleset, record(protocol, structured({"value": 1, "unit": "C"}, source="x")), None).as_dict()
    assert wrong_source["verdict"] == "nonconformant"
    assert [v["path"] for v in wrong_source["violations"]] == ["envelopemetadata.source"]


def test_binary_mode_on_kafka(scaffold: Path) -> None:
    snapshot = load_snapshot([scaffold])
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    message = {"endpoint": "kafka.in", "protocol": "KAFKA", "topic": "events", "headers": CE_HEADERS,
               "body": json.dumps({"value": 3, "unit": "F"})}
    assert judge_record(ruleset, message, None).as_dict()["verdict"] == "conformant"


def test_default_protocols_and_a_chosen_subset(tmp_path: Path) -> None:
    assert main(["init", str(tmp_path / "all")]) == 0
    assert sorted(p.name for p in (tmp_path / "all").iterdir()) == sorted(
        ["gateway.yaml", "messages.xreg.yaml", *(f"{p}.xreg.yaml" for p in DEFAULT_PROTOCOLS)])
    assert main(["init", str(tmp_path / "two"), "NATS", "mqtt3", "nats"]) == 0
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == [
        "gateway.yaml", "messages.xreg.yaml", "mqtt3.xreg.yaml", "nats.xreg.yaml"]
    settings, problems = load_settings(tmp_path / "two")
    assert problems == []
    assert [r.source for r in settings.routes] == ["mqtt3.in", "nats.in"]
    assert "endpoints" not in yaml.safe_load((tmp_path / "two" / "gateway.yaml").read_text())  # no AMQP logins


def test_nothing_is_overwritten_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "config"
    target.mkdir()
    (target / "gateway.yaml").write_text("# mine\n")
    assert main(["init", str(target), "kafka"]) == 2
    error = capsys.readouterr().err
    assert "gateway.yaml" in error and "--force" in error
    assert (target / "gateway.yaml").read_text() == "# mine\n"
    assert not (target / "kafka.xreg.yaml").exists()  # nothing at all was written
    assert main(["init", str(target), "kafka", "--force"]) == 0
    assert (target / "gateway.yaml").read_text().startswith("# xgate settings")


def test_unknown_protocol_and_a_file_in_the_way(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path / "x"), "kafka", "smtp"]) == 2
    error = capsys.readouterr().err
    assert "'smtp'" in error and all(p in error for p in PROTOCOLS)
    assert not (tmp_path / "x").exists()
    (tmp_path / "file").write_text("")
    assert main(["init", str(tmp_path / "file")]) == 2
    assert "not a directory" in capsys.readouterr().err
