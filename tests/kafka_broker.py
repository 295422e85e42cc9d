"""Apache Kafka for the tests: the shared broker of deploy/brokers/kafka.sh, or a private one a test may stop.

The shared broker (127.0.0.1:9092, XGATE_KAFKA_PORT overrides) is started when it does not answer and is
never stopped or restarted by a test. A `PrivateKafka` runs the same script on free ports with a state
directory of its own (data, config, log), so a test may restart it, give it extra listeners (TLS, SASL)
and throw it away; it reuses the cached jars, so only the first start anywhere downloads them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Self

from tests.conftest import free_port

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "deploy" / "brokers" / "kafka.sh"
PORT = int(os.environ.get("XGATE_KAFKA_PORT", "9092"))
BOOTSTRAP = f"127.0.0.1:{PORT}"
# private brokers start and stop often: a small heap, and C1 only (the JIT's startup cost dominates a short life)
PRIVATE_JAVA = "-Xms64m -Xmx384m -XX:TieredStopAtLevel=1"


def shared_kafka() -> str:
    """The shared broker's bootstrap address, started when it is not running."""
    subprocess.run(["bash", str(SCRIPT), "start"], check=True, cwd=REPO,
                   env={**os.environ, "XGATE_KAFKA_PORT": str(PORT)})
    return BOOTSTRAP


class PrivateKafka:
    """A Kafka of one test on free ports; `properties` are server.properties lines appended last."""

    def __init__(self, properties: str = "", port: int | None = None) -> None:
        self.port = port or free_port()
        self.controller_port = free_port()
        self.state = Path(tempfile.mkdtemp(prefix="xgate-kafka-"))
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.env = {**os.environ, "XGATE_KAFKA_PORT": str(self.port),
                    "XGATE_KAFKA_CONTROLLER_PORT": str(self.controller_port),
                    "XGATE_BROKER_STATE": str(self.state), "XGATE_KAFKA_HEAP": PRIVATE_JAVA}
        if properties:
            extra = self.state / "extra.properties"
            extra.write_text(properties)
            self.env["XGATE_KAFKA_PROPERTIES"] = str(extra)

    def command(self, verb: str) -> None:
        subprocess.run(["bash", str(SCRIPT), verb], check=True, cwd=REPO, env=self.env)

    def start(self) -> None:
        self.command("start")

    def stop(self) -> None:
        self.command("stop")

    def restart(self) -> None:
        self.command("restart")

    def log(self) -> str:
        path = self.state / f"kafka-{self.port}" / "kafka.out"
        return path.read_text(errors="replace") if path.exists() else ""

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            subprocess.run(["bash", str(SCRIPT), "stop"], check=False, cwd=REPO, env=self.env)
        finally:
            shutil.rmtree(self.state, ignore_errors=True)
