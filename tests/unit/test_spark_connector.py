"""gateway/spark/connector.py offline: which resolved jars Spark gets, and what a missing Maven says."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.spark import connector


def test_jars_pyspark_ships_are_left_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = tmp_path / "pyspark-jars"
    shipped.mkdir()
    for name in ("scala-library-2.13.16.jar", "hadoop-client-runtime-3.4.1.jar", "spark-core_2.13-4.2.0.jar"):
        (shipped / name).touch()
    libs = tmp_path / "cache" / "spark-kafka-4.2.0" / "libs"
    libs.mkdir(parents=True)
    resolved = ("spark-sql-kafka-0-10_2.13-4.2.0.jar", "kafka-clients-3.9.2.jar", "commons-pool2-2.13.1.jar",
                "scala-library-2.13.15.jar", "hadoop-client-runtime-3.5.0.jar")
    for name in resolved:
        (libs / name).touch()
    (libs / ".complete").touch()
    monkeypatch.setenv("XGATE_SPARK_JARS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(connector, "_pyspark_jars", lambda: shipped)
    assert [jar.name for jar in connector.kafka_connector_jars("4.2.0")] == [
        "commons-pool2-2.13.1.jar", "kafka-clients-3.9.2.jar", "spark-sql-kafka-0-10_2.13-4.2.0.jar"]


def test_without_maven_the_error_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XGATE_SPARK_JARS_CACHE", str(tmp_path))
    monkeypatch.setattr(connector.shutil, "which", lambda name: None)
    with pytest.raises(connector.ConnectorError, match="install Maven"):
        connector.kafka_connector_jars("4.2.0")


@pytest.mark.parametrize("name, artifact", [("kafka-clients-3.9.2.jar", "kafka-clients"),
                                            ("spark-sql-kafka-0-10_2.13-4.2.0.jar", "spark-sql-kafka-0-10_2.13"),
                                            ("jsr305-3.0.0.jar", "jsr305"), ("odd.jar", "odd.jar")])
def test_artifact_names_drop_the_version(name: str, artifact: str) -> None:
    assert connector._artifact(name) == artifact


def test_a_session_without_kafka_takes_only_what_is_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XGATE_SPARK_JARS_CACHE", str(tmp_path))
    monkeypatch.setattr(connector.shutil, "which", lambda name: pytest.fail("must not run Maven"))
    assert connector.kafka_connector_jars("4.2.0", resolve=False) == []
