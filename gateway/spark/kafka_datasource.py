"""`format("xgate_kafka")`: the Python Kafka source and sink registered as one Spark data source."""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource

from gateway.spark.kafka_options import PYTHON_FORMAT
from gateway.spark.kafka_sink import KafkaStreamWriter, KafkaWriter
from gateway.spark.kafka_source import SCHEMA, KafkaStreamReader


class XgateKafkaDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return PYTHON_FORMAT

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: Any) -> KafkaStreamReader:
        return KafkaStreamReader(dict(self.options))

    def writer(self, schema: Any, overwrite: bool) -> KafkaWriter:
        return KafkaWriter(dict(self.options))

    def streamWriter(self, schema: Any, overwrite: bool) -> KafkaStreamWriter:
        return KafkaStreamWriter(dict(self.options))


def register(spark: Any) -> None:
    spark.dataSource.register(XgateKafkaDataSource)
