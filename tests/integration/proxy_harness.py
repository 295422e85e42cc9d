"""What the `xgate proxy` tests share: a proxy process on free ports in front of the Apache Kafka of
deploy/brokers/kafka.sh, its config folder on fresh topics, and aiokafka producing and reading."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError

from gateway.recorded import envelope_from_record
from protocol_adapters.kafka.mapping import outgoing_record
from tests.conftest import free_port, port_is_free
from tests.integration import traffic as it_traffic

REPO = Path(__file__).resolve().parents[2]
BROKER = "127.0.0.1:9092"
NODE_ID = 1  # deploy/brokers/kafka.sh's node.id


def proxy_port() -> int:
    """A bootstrap port whose broker port (port + 1 + node id) is free too."""
    for _ in range(100):
        port = free_port()  # below the ephemeral range, as every port a test listens on
        if port_is_free(port + 1 + NODE_ID):
            return port
    raise AssertionError("no pair of free ports")


def create_topics(*names: str, partitions: int = 1, bootstrap: str = BROKER) -> None:
    async def create() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(name, partitions, 1) for name in names])
        finally:
            await admin.close()
    asyncio.run(create())


class ProxyProcess:
    """`xgate proxy --config FOLDER` on `port`, its /metrics on a free port of its own; `wait`: until it answers
    the protocol (a proxy whose upstream is down never does)."""

    def __init__(self, folder: Path, port: int, *extra: str, wait: bool = True) -> None:
        self.port = port
        self.metrics_port = free_port()
        self.log_file = folder.parent / "proxy.log"
        with open(self.log_file, "w") as log:
            self.process = subprocess.Popen([sys.executable, "-m", "gateway.cli", "proxy", "--config", str(folder),
                                             "--metrics-address", f"127.0.0.1:{self.metrics_port}", *extra],
                                            stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
                                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + 60
        while wait and not self.answers():
            assert self.process.poll() is None, self.output()
            assert time.monotonic() < deadline, f"the proxy did not answer within 60 s: {self.output()}"
            time.sleep(0.2)

    def answers(self) -> bool:
        """The proxy answers the protocol (a Metadata round trip through it), not only a port that listens."""
        async def probe() -> bool:
            producer = AIOKafkaProducer(bootstrap_servers=f"127.0.0.1:{self.port}", request_timeout_ms=3000)
            try:
                await producer.start()
            except KafkaError:
                await producer.stop()
                return False
            await producer.stop()
            return True
        return asyncio.run(probe())

    def output(self) -> str:
        return self.log_file.read_text()[-4000:]

    def scrape(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}{path}", timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()
        except OSError as exc:  # not listening yet
            return 0, str(exc)

    def stop(self) -> str:
        """SIGTERM (unless it already ended) and its exit code 0; the log."""
        if self.process.poll() is None:
            self.process.terminate()
        assert self.process.wait(30) == 0, self.output()
        return self.output()


def config(tmp_path: Path, topics: dict[str, str], port: int, labels: dict[str, str] | None = None,
           upstream: str = BROKER, **proxy: Any) -> Path:
    """The integration registry on `topics` (`in` judged) and a gateway.yaml whose `proxy` section fronts
    `upstream` on `port`, with `proxy`'s other settings."""
    document = it_traffic.registry("KAFKA", {name: {"uris": [f"tcp://{BROKER}"], "topic": topic}
                                             for name, topic in topics.items()})
    if labels:
        document["endpoints"]["in"]["labels"] = labels
    folder = tmp_path / "config"
    folder.mkdir()
    (folder / "it.xreg.json").write_text(json.dumps(document), "utf-8")
    section = {"upstream": upstream, "listen": f"127.0.0.1:{port}", **proxy}
    (folder / "gateway.yaml").write_text(yaml.safe_dump({"proxy": section}), "utf-8")
    return folder


def fresh(run: str) -> dict[str, str]:
    topics = {name: f"proxy-{run}-{name}" for name in ("in", "valid", "dlq", "unknown")}
    create_topics(*topics.values())
    return topics


async def produce_each(bootstrap: str, topic: str, records: list[dict[str, Any]]) -> list[Exception | None]:
    """Each record in a batch of its own (sent and awaited one at a time); per record, the error or None."""
    outcomes: list[Exception | None] = []
    async with AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0) as producer:
        for record in records:
            out = outgoing_record(envelope_from_record(record))
            try:
                await producer.send_and_wait(topic, out.value, key=out.key, headers=out.headers)
                outcomes.append(None)
            except KafkaError as exc:
                outcomes.append(exc)
    return outcomes


async def read_all(bootstrap: str, topic: str, at_least: int, timeout: float = 30) -> list[Any]:
    """Every record of the topic's one partition, once it holds at least `at_least` (copies land a little after
    the produce they come from)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        await consumer.seek_to_beginning(partition)
        deadline = time.monotonic() + timeout
        while (end := (await consumer.end_offsets([partition]))[partition]) < at_least:
            assert time.monotonic() < deadline, f"{topic} holds {end} records after {timeout} s, {at_least} expected"
            await asyncio.sleep(0.2)
        found: list[Any] = []
        while len(found) < end and time.monotonic() < deadline:
            batch = await consumer.getmany(partition, timeout_ms=500)
            found.extend(batch.get(partition, []))
        return found
    finally:
        await consumer.stop()


def java_tools(folder: Path) -> list[str]:
    """The command line before one of Apache Kafka's Java tools' main class: java, a log4j2 config (WARN and up
    to stderr, written into `folder`), the jars deploy/brokers/kafka.sh resolved."""
    found = subprocess.run(["bash", str(REPO / "deploy" / "brokers" / "kafka.sh"), "libs"], check=True,
                           capture_output=True, text=True)
    libs = Path(found.stdout.strip().splitlines()[-1])
    assert list(libs.glob("kafka-tools-*.jar")), f"no kafka-tools jar in {libs}"
    log_config = folder / "tools-log4j2.properties"
    log_config.write_text("rootLogger.level=WARN\nrootLogger.appenderRef.err.ref=err\n"
                          "appender.err.type=Console\nappender.err.name=err\nappender.err.target=SYSTEM_ERR\n"
                          "appender.err.layout.type=PatternLayout\nappender.err.layout.pattern=%p %m (%c)%n\n")
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
    return [java, "-XX:TieredStopAtLevel=1", f"-Dlog4j2.configurationFile={log_config}", "-cp", f"{libs}/*"]


def run_tool(java: list[str], main: str, *args: str, stdin: str | None = None,
             timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """One Java tool run to its end: its exit code, stdout and stderr."""
    return subprocess.run([*java, main, *args], input=stdin, capture_output=True, text=True, timeout=timeout,
                          check=False)


def console_line(record: dict[str, Any]) -> str:
    """The console producer's line for a record with parse.headers=true: `key:value,...<TAB>value`."""
    out = outgoing_record(envelope_from_record(record))
    return ",".join(f"{k}:{bytes(v).decode()}" for k, v in out.headers) + "\t" + bytes(out.value).decode()
