"""Shared test fixtures: where the external conformance material lives."""

from __future__ import annotations

import contextlib
import logging
import os
import random
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.ports import port_is_free

REPO = Path(__file__).resolve().parents[1]
# the external conformance material: $XGATE_CONFORMANCE, or ../shared/conformance beside the checkout
SHARED_CONFORMANCE = Path(os.environ.get("XGATE_CONFORMANCE") or REPO.parent / "shared" / "conformance")
ABSENT_HINT = "clone the project with shared/ beside it, or set XGATE_CONFORMANCE to the conformance folder"


# The JVMs the tests start (Spark's driver, which is the whole of Spark in local mode, and a standalone
# cluster's master, workers and executors) live for a test or a module: C1 alone and the serial collector spend
# less CPU warming up than C2 and G1 would win back in that time (user CPU 57 s -> 44 s, wall 84 s -> 74 s, for
# two Spark tests in an A/B here), and `make test` is short of CPU, not of waiting. The shared brokers are
# started before the session and keep their own settings; a variable the caller set is left as it is.
_SHORT_LIVED_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
os.environ.setdefault("SPARK_SUBMIT_OPTS", _SHORT_LIVED_JVM)
os.environ.setdefault("SPARK_DAEMON_JAVA_OPTS", _SHORT_LIVED_JVM)
os.environ.setdefault("PYSPARK_SUBMIT_ARGS",
                      f'--conf "spark.executor.defaultJavaOptions={_SHORT_LIVED_JVM}" pyspark-shell')


def conformance_dir(*parts: str) -> Path:
    """A folder of the conformance material, or skip the test when the material is not there."""
    path = SHARED_CONFORMANCE.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"conformance material not found at {path} ({ABSENT_HINT})")
    return path


# Ports the tests listen on are drawn below the kernel's ephemeral range: a port the kernel handed out (bind to
# port 0) is one it also hands to the next client connection of any process, and with three workers one such
# connection took a gateway's metrics port between the choice and the gateway's bind ("address already in use").
_LISTEN_PORTS = range(20000, 32768)  # Linux's ephemeral range starts at 32768 unless the machine says otherwise


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, outside the range client sockets take."""
    while True:
        port = random.choice(_LISTEN_PORTS)
        if port_is_free(port):
            return port


# `make test` runs every test in one pytest session on three pytest-xdist workers (Makefile, `--dist loadgroup`).
# The broker tests (marked `brokers`) run a file at a time on a worker: a file's module fixtures (a Spark cluster,
# a private broker) start once. Spark's tests run together on one worker (one JVM at a time: their session is one
# per worker). Every other test goes wherever a worker is free: the broker tests mostly wait on brokers and
# processes, and the tests without brokers use the cores meanwhile (the two steps this was, one after the other,
# took 367 s + 704 s here; one session 1,005 s). Broker tests run beside each other, so none may stop or restart
# a broker another test uses: a test that does so starts a broker of its own (a private Kafka, NATS server,
# Mosquitto or RabbitMQ node). Prometheus' checks install promtool where the scrape test runs it, so they go with
# the broker tests.
_BROKERS = ("tests/contract/", "tests/integration/", "tests/deploy/test_prometheus_and_grafana.py")
_SPARK = ("tests/spark/", "tests/deploy/test_spark_submit.py")
# the groups that take longest (a minute or more each, `--durations`), first: xdist hands out groups in
# collection order (with `--no-loadscope-reorder`; its default orders them by their number of tests), and a long
# one handed out last would leave one worker running it alone at the end
# (each a file, or a tuple of the paths of one group: `str.startswith` takes either)
_LONGEST_FIRST: tuple[str | tuple[str, ...], ...] = (
    _SPARK, "tests/integration/test_faults.py", "tests/integration/test_spark_cluster.py",
    "tests/integration/test_routing.py", "tests/integration/test_kafka_faults.py",
    "tests/integration/test_demo_broker_readiness.py", "tests/integration/test_proxy_faults.py",
    "tests/integration/test_workers.py", "tests/unit/test_imports_alone.py")


def _path(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def _rank(item: pytest.Item) -> int:
    path = _path(item)
    return next((rank for rank, start in enumerate(_LONGEST_FIRST) if path.startswith(start)), len(_LONGEST_FIRST))


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = _path(item)
        if path.startswith(_BROKERS):
            item.add_marker(pytest.mark.brokers)
            item.add_marker(pytest.mark.xdist_group(path))
        elif path.startswith(_SPARK):
            item.add_marker(pytest.mark.xdist_group("spark"))
    items.sort(key=_rank)  # stable: every other test keeps its place


def _skip_location(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # (path, line, reason)
        return f"{os.path.relpath(longrepr[0], REPO)}:{longrepr[1]}"
    return report.nodeid


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """A green run without the conformance material is partial: say so, with how much was skipped."""
    absent = not SHARED_CONFORMANCE.is_dir()
    skipped = [report for report in terminalreporter.stats.get("skipped", [])
               if ABSENT_HINT in str(report.longrepr)
               or (absent and "got empty parameter set" in str(report.longrepr))]
    if not skipped:
        return
    # a module that skips as a whole, or a suite generated from the material (an empty parameter set without
    # it), reports once, whatever number of tests it holds
    wholes = sorted({_skip_location(r) for r in skipped
                     if "::" not in r.nodeid or "got empty parameter set" in str(r.longrepr)})
    tests = len(skipped) - len(wholes)
    terminalreporter.write_sep("=", "PARTIAL RUN: conformance tests skipped", yellow=True, bold=True)
    terminalreporter.write_line(f"{tests} conformance tests skipped, plus {len(wholes)} modules or generated suites "
                                f"skipped whole ({', '.join(wholes)}); material looked for at {SHARED_CONFORMANCE}: "
                                f"{ABSENT_HINT}")


@pytest.fixture(autouse=True)
def root_logging_restored() -> Iterator[None]:
    """The root logger as the test found it. `xgate run` in-process (gateway/logs.py `configure`) puts a handler
    there on the stream pytest captured for that test; left behind, a record logged after the stream closed
    (py4j's, as its connection closes at exit) printed a "Logging error" traceback under the run's summary."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def private_rabbitmq_node() -> Iterator[dict[str, str]]:
    """A RabbitMQ node of the test's own, AMQP 1.0 on (tests/rabbitmq_node.py): the environment that names it.
    A test that restarts RabbitMQ restarts this one, and the shared node serves the other tests meanwhile."""
    from tests.rabbitmq_node import private_rabbitmq

    with private_rabbitmq(amqp10=True) as env:
        yield env


# The topics a session of broker tests made on the shared Kafka (deploy/brokers/kafka.sh, 127.0.0.1:9092) are
# deleted when it ends: every broker test names its topics afresh, and a broker kept across runs otherwise holds
# every run's partitions (a thousand of them, many GiB, seen on a development machine). Only when the broker
# answered before the session: then whatever it holds that it did not hold then goes. Under pytest-xdist this is
# the controller's work, once every worker is done: a worker that finished first would delete topics the other
# one is still using.
_TOPICS_BEFORE = pytest.StashKey["set[str] | None"]()


def _xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _kafka_port() -> int:
    return int(os.environ.get("XGATE_KAFKA_PORT", "9092"))


def _before_broker_tests(config: pytest.Config, any_selected: bool) -> None:
    """Once collection says broker tests will run, and before the first does: what the shared Kafka holds."""
    if any_selected and _TOPICS_BEFORE not in config.stash:
        config.stash[_TOPICS_BEFORE] = _kafka_topics(_kafka_port())


def pytest_collection_finish(session: pytest.Session) -> None:
    """Without xdist: the tests left to run (after -m)."""
    if not _xdist_worker(session.config):
        _before_broker_tests(session.config, any(item.get_closest_marker("brokers") for item in session.items))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: object, ids: list[str]) -> None:
    """With xdist, in the controller, before it hands out any test: what a worker collected (after -m)."""
    _before_broker_tests(node.config, any(test.startswith(_BROKERS) for test in ids))  # type: ignore[attr-defined]


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    before = config.stash.get(_TOPICS_BEFORE, None)
    if _xdist_worker(config) or before is None:
        return
    port = _kafka_port()
    after = _kafka_topics(port) or set()
    made = sorted(name for name in after - before if not name.startswith("__"))
    if made:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        for future in admin.delete_topics(made, operation_timeout=30).values():
            with contextlib.suppress(Exception):  # one already gone, or a broker stopping: nothing to keep
                future.result(60)


def _kafka_topics(port: int) -> set[str] | None:
    """The topics of the Kafka on 127.0.0.1:`port`; None when nothing listens there or it does not answer."""
    with socket.socket() as probe:
        probe.settimeout(0.5)
        if probe.connect_ex(("127.0.0.1", port)) != 0:
            return None
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    try:
        return set(AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"}).list_topics(timeout=10).topics)
    except KafkaException:
        return None
