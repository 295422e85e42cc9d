"""The streaming runner on a standalone Spark cluster: one master and two one-core workers started by
deploy/spark/cluster.sh (pyspark's own jars), the job submitted with deploy/spark/submit.sh as a user would.

The executors run the workers' Python, which has the native core installed (`spark.pyspark.python`: the wheel
installed on the workers, deploy/spark/README.md); submit.sh sets XGATE_REQUIRE_CORE on them, so an executor that
cannot import xgate_core fails its tasks, and the second test shows that it does. What the runner routed must
be what `xgate check` says of the same records: the conformant ones on the valid topic as they came, the others
on the dead-letter topic with check's message id and violations as their reasons.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("pyspark")

from gateway.spark.connector import kafka_connector_jars
from gateway.testing.traffic import generate
from tests.conftest import free_port
from tests.integration.harness import start_broker
from tests.spark.test_streaming import STAMP, audit_rows, produce, read_topic

pytestmark = pytest.mark.integration  # Apache Kafka and a Spark cluster on 127.0.0.1

REPO = Path(__file__).resolve().parents[2]
CLUSTER = REPO / "deploy" / "spark" / "cluster.sh"
SUBMIT = REPO / "deploy" / "spark" / "submit.sh"
DEMO = REPO / "config" / "demo"
BOOTSTRAP = "127.0.0.1:9092"


class Cluster:
    """A private cluster: free ports and a state directory of its own (logs, pids, the workers' work dirs)."""

    def __init__(self, state: Path) -> None:
        self.port = free_port()
        self.state = state
        self.env = {**os.environ, "XGATE_SPARK_PORT": str(self.port), "XGATE_SPARK_WEBUI_PORT": str(free_port()),
                    "XGATE_BROKER_STATE": str(state), "PYTHON": sys.executable}
        self.master = f"spark://127.0.0.1:{self.port}"

    def script(self, verb: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(CLUSTER), verb], env=self.env, cwd=REPO, capture_output=True, text=True,
                              timeout=180, check=False)

    def executor_dirs(self) -> dict[str, list[Path]]:
        """Each worker's executor directories (work-N/APP_ID/EXECUTOR_ID) of every application it served."""
        base = self.state / f"spark-{self.port}"
        return {worker.name: sorted(worker.glob("app-*/*")) for worker in sorted(base.glob("work-*"))}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    start_broker("kafka")
    kafka_connector_jars()  # resolved once, before the clock of the first submit
    cluster = Cluster(tmp_path_factory.mktemp("spark-cluster"))
    started = cluster.script("start")
    try:
        assert started.returncode == 0, started.stderr
        status = cluster.script("status")
        assert status.returncode == 0 and status.stdout.count(" ALIVE: 1 core(s)") == 2, status.stdout
        yield cluster
    finally:
        stopped = cluster.script("stop")
        assert stopped.returncode == 0, stopped.stderr
    assert cluster.script("status").returncode != 0  # nothing of it left running


@pytest.fixture(scope="module")
def demo_topic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], list[dict[str, Any]],
                                                                   list[str]]:
    """The demo's Kafka telemetry (~15% with a defect) on a fresh topic, a route to a valid and a dead-letter
    topic, and `xgate check`'s verdict line for each record as the runner reads it back."""
    run = uuid.uuid4().hex[:8]
    topics = {name: f"spark-cluster-{run}-{name}" for name in ("in", "valid", "dlq")}
    folder = tmp_path_factory.mktemp("config")
    for item in DEMO.iterdir():
        if item.is_file() and item.name != "gateway.yaml":
            # the demo's contract names its topic: this run's topic instead, so the traffic is judged as the demo's
            text = item.read_text("utf-8").replace('"xgate-demo-telemetry"', json.dumps(topics["in"]))
            (folder / item.name).write_text(text, "utf-8")
    gateway = {"routes": [{"source": "telemetry.in", "conformant": "telemetry.valid",
                           "nonconformant": "telemetry.dlq"}],
               "endpoints": {f"telemetry.{name}": {"uris": [f"tcp://{BOOTSTRAP}"], "options": {"topic": topic}}
                             for name, topic in topics.items()}}
    (folder / "gateway.yaml").write_text(yaml.safe_dump(gateway), "utf-8")
    records = [r for r in generate(1200, seed=31) if r.get("protocol") == "KAFKA"][:400]
    assert len(records) == 400
    placed = produce(topics["in"], records)
    # as read back: this topic, the partition it landed on, the timestamp it was produced with
    read_back = folder.parent / f"records-{run}.jsonl"
    read_back.write_text("".join(json.dumps({**r, "topic": topics["in"], "partition": partition,
                                             "timestamp": STAMP + index}) + "\n"
                                 for index, (r, (partition, _)) in enumerate(zip(records, placed, strict=True))))
    check = subprocess.run([sys.executable, "-m", "gateway.cli", "check", "--registry", str(folder), "--format",
                            "json", str(read_back)], capture_output=True, text=True, cwd=REPO, timeout=120, check=False)
    assert check.returncode == 1, check.stderr  # some are nonconformant
    lines = check.stdout.splitlines()
    assert len(lines) == len(records)
    return folder, topics, records, lines


def submit(cluster: Cluster, folder: Path, work: Path, *spark_conf: str) -> subprocess.CompletedProcess[str]:
    """`xgate spark --available-now` on the cluster through submit.sh, the connector's jars given with --jars."""
    jars = ",".join(str(jar) for jar in kafka_connector_jars())
    env = {**os.environ, "XGATE_SPARK_PACKAGES": "", "PYTHON": sys.executable, "PYSPARK_PYTHON": sys.executable,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "SPARK_LOCAL_IP": "127.0.0.1"}
    command = ["bash", str(SUBMIT), "--master", cluster.master, "--jars", jars,
               # the workers' Python, where xgate and its core are installed
               "--conf", f"spark.pyspark.python={sys.executable}", "--conf", "spark.ui.enabled=false",
               "--conf", "spark.executor.memory=1g", *spark_conf, "--",
               "--config", str(folder), "--checkpoint", str(work / "checkpoint"), "--parquet", str(work / "audit"),
               "--starting-offsets", "earliest", "--available-now"]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=work, timeout=240, check=False)


def test_runner_on_two_workers_routes_as_check_judges(cluster: Cluster, demo_topic: Any, tmp_path: Path) -> None:
    folder, topics, records, lines = demo_topic
    done = submit(cluster, folder, tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]

    # the executors were the two workers', not a local one: the newest application ran an executor on each
    served = cluster.executor_dirs()
    newest = max(d.parent.name for dirs in served.values() for d in dirs)
    assert sorted(served) == ["work-1", "work-2"], served
    assert all(any(d.parent.name == newest for d in dirs) for dirs in served.values()), served

    expected = [json.loads(line) for line in lines]
    rows = audit_rows(tmp_path / "audit")
    assert len(rows) == len(records)
    by_offset = sorted(rows, key=lambda r: r["timestamp"])  # produced with increasing timestamps, in input order
    for index, (row, want) in enumerate(zip(by_offset, expected, strict=True)):
        got = {"verdict": row["verdict"], "messagegroupid": row["messagegroupid"], "messageid": row["messageid"],
               "violations": json.loads(row["violations"])}
        assert got == {k: want.get(k) for k in got}, f"record {index}"

    # what reached the destinations: the conformant records as they came, the others dead-lettered with check's
    # reasons
    verdicts = Counter(v["verdict"] for v in expected)
    assert verdicts["conformant"] > 250 and verdicts["nonconformant"] > 25, verdicts
    assert set(verdicts) == {"conformant", "nonconformant"}
    valid = read_topic(topics["valid"], verdicts["conformant"])
    dlq = read_topic(topics["dlq"], verdicts["nonconformant"])
    # Kafka destinations are at least once (docs/spark.md): a task the cluster ran again (a busy machine's
    # executor timing out) produces its records again. Every record must be there, and anything more must be
    # one of them written again, never another
    conformant_bodies = Counter(r["body"].encode() for r, v in zip(records, expected, strict=True)
                                if v["verdict"] == "conformant")
    arrived = Counter(m.value for m in valid)
    assert set(arrived) == set(conformant_bodies) and not conformant_bodies - arrived
    by_position = {(row["partition"], row["offset"]): want for row, want in zip(by_offset, expected, strict=True)}
    dead_lettered = {position for position, want in by_position.items() if want["verdict"] == "nonconformant"}
    positions = [json.loads(dict(m.headers)["xgate-source-position"].decode()) for m in dlq]
    assert {(p["partition"], p["offset"]) for p in positions} == dead_lettered
    rules: Counter[str] = Counter()
    for message in dlq:
        headers = {name: value.decode() for name, value in message.headers}
        position = json.loads(headers["xgate-source-position"])
        want = by_position[(position["partition"], position["offset"])]
        assert headers["xgate-verdict"] == "nonconformant"
        assert headers["xgate-messageid"] == (want["messageid"] or "")
        assert json.loads(headers["xgate-violations"]) == want["violations"]
        rules.update(v["rule"] for v in want["violations"])
    assert len(rules) >= 3, rules  # several kinds of defect, not one


def test_executor_without_the_core_fails_the_run(cluster: Cluster, demo_topic: Any, tmp_path: Path) -> None:
    """An executor whose Python cannot import xgate_core fails its tasks (XGATE_REQUIRE_CORE, set by submit.sh)
    rather than judging in Python: the executors get a PYTHONPATH entry whose `xgate_core` raises ImportError."""
    folder, _, _, _ = demo_topic
    shadow = tmp_path / "shadow" / "xgate_core"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text('raise ImportError("hidden from the executors by the test")\n')
    done = submit(cluster, folder, tmp_path, "--conf", f"spark.executorEnv.PYTHONPATH={shadow.parent}",
                  "--conf", "spark.task.maxFailures=1")
    assert done.returncode == 1, done.stderr[-4000:]
    assert "XGATE_REQUIRE_CORE=1 but the native core (xgate_core) cannot be imported" in done.stderr, \
        done.stderr[-4000:]
