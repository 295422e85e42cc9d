"""Spark's Kafka connector is resolved before the first session of the run: a session's driver classpath is
fixed when its JVM starts, and every module of tests/spark shares that JVM. The modules share one local
SparkSession too (with the connector): a second one costs a SparkContext and its Python workers again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session", autouse=True)
def kafka_connector() -> None:
    pytest.importorskip("pyspark")
    from gateway.spark.connector import kafka_connector_jars

    kafka_connector_jars()


@pytest.fixture(scope="session")
def spark_session(kafka_connector: None) -> Iterator[Any]:
    """One local SparkSession (local[2], Spark's Kafka connector on its classpath) for every module here."""
    from gateway.spark.batch import build_session

    session = build_session("local[2]", "xgate-tests", kafka=True)
    yield session
    session.stop()
