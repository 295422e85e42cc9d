"""Spark's own Kafka connector (spark-sql-kafka-0-10) for a local session: jars resolved once with Maven.

The connector's version must be the installed pyspark's. Spark's Ivy resolver (`spark.jars.packages`)
needs its own repository set-up; the machine's `mvn` already reaches Maven Central, so the connector and
its dependencies are copied with `mvn dependency:copy-dependencies` from a small pom into
~/.cache/xgate/spark-kafka-VERSION (XGATE_SPARK_JARS_CACHE moves it) and handed to Spark as `spark.jars`,
leaving out every artifact pyspark ships itself. A second session reuses the cache. Under spark-submit the
cluster's own `--packages` or `--jars` are used instead (deploy/spark/README.md).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from gateway.errors import GatewayError

ARTIFACT = "org.apache.spark:spark-sql-kafka-0-10_2.13"
_VERSIONED = re.compile(r"^(?P<artifact>.+?)-\d+(?:\.\d+)+(?:[-.][\w.]+)?\.jar$")


class ConnectorError(GatewayError):
    """The Kafka connector could not be resolved; the message says what to install or set."""


def pyspark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


def cache_dir(version: str) -> Path:
    root = os.environ.get("XGATE_SPARK_JARS_CACHE") or Path.home() / ".cache" / "xgate"
    return Path(root) / f"spark-kafka-{version}"


def kafka_connector_jars(version: str | None = None, resolve: bool = True) -> list[Path]:
    """The jars Spark needs beside its own to read and write Kafka, resolving them the first time
    (`resolve` False: only what an earlier resolution left in the cache, else none)."""
    version = version or pyspark_version()
    cache = cache_dir(version)
    libs = cache / "libs"
    if not (libs / ".complete").exists():
        if not resolve:
            return []
        _resolve(version, cache)
    shipped = {_artifact(jar.name) for jar in _pyspark_jars().glob("*.jar")}
    return sorted(jar for jar in libs.glob("*.jar") if _artifact(jar.name) not in shipped)


def _resolve(version: str, cache: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ConnectorError(f"Spark's Kafka connector {ARTIFACT}:{version} is resolved with Maven the first "
                             "time: install Maven (mvn) or run under spark-submit --packages")
    group, artifact = ARTIFACT.split(":")
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "pom.xml").write_text(
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>dev.xgate</groupId><artifactId>spark-kafka</artifactId><version>1</version>"
        f"<packaging>pom</packaging><dependencies><dependency><groupId>{group}</groupId>"
        f"<artifactId>{artifact}</artifactId><version>{version}</version></dependency></dependencies></project>")
    libs = cache / "libs"
    shutil.rmtree(libs, ignore_errors=True)
    done = subprocess.run([mvn, "-q", "-B", "-f", str(cache / "pom.xml"), "dependency:copy-dependencies",
                           "-DincludeScope=runtime", f"-DoutputDirectory={libs}"],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-5:])
        raise ConnectorError(f"mvn could not resolve {ARTIFACT}:{version} (pyspark's version; Maven Central must "
                             f"serve it):\n{tail}")
    (libs / ".complete").touch()


def _pyspark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def _artifact(name: str) -> str:
    match = _VERSIONED.match(name)
    return match.group("artifact") if match else name
