"""Spark's Kafka connector is resolved before the first session of the run: a session's driver classpath is
fixed when its JVM starts, and every module of tests/spark shares that JVM."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def kafka_connector() -> None:
    pytest.importorskip("pyspark")
    from gateway.spark.connector import kafka_connector_jars

    kafka_connector_jars()
