"""A Kafka sink on Spark's Python Data Source API, over confluent-kafka (batch and streaming writes).

Takes the JVM sink's columns: `topic` (or the option `topic`), `value`, and the
optional `key`, `headers` (array of key/value structs) and `partition`. A task
returns only once every record it produced is acknowledged (`acks=all`); a record
the broker still refuses after a few retries fails the task, and Spark runs the task
(or, in a streaming query, the micro-batch) again: at-least-once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from gateway.spark.headers import header_pairs
from gateway.spark.kafka_options import client_config

FLUSH_TIMEOUT = 60.0
RETRY_ROUNDS = 3
RETRY_PAUSE = 0.5


class KafkaSinkError(RuntimeError):
    """Records the cluster did not acknowledge (the task fails, Spark retries it)."""


def write_batches(options: dict[str, str], batches: Iterator[Any]) -> int:
    """Produce every row of `batches`; return how many were acknowledged.

    Records the broker refuses are produced again (up to `RETRY_ROUNDS` times, with a
    pause), so a transient broker error does not fail the task; what is still refused
    then fails it. A retried record may land after records produced later.
    """
    from confluent_kafka import Producer

    client = client_config(options)
    producer = Producer({"acks": "all", "linger.ms": 5, "enable.idempotence": False, **client})
    default_topic = options.get("topic")
    refused: list[tuple[tuple[str, bytes | None, bytes | None, dict[str, Any]], str]] = []

    def send(record: tuple[str, bytes | None, bytes | None, dict[str, Any]]) -> None:
        def delivered(error: Any, message: Any) -> None:
            if error is not None:
                refused.append((record, f"{message.topic()}[{message.partition()}]: {error.str()}"))

        topic, key, value, extra = record
        while True:
            try:
                producer.produce(topic, value=value, key=key, on_delivery=delivered, **extra)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.1)
        producer.poll(0)

    sent = 0
    for batch in batches:
        columns = set(batch.schema.names)
        values = batch.column("value").to_pylist()
        count = len(values)
        topics = batch.column("topic").to_pylist() if "topic" in columns else [default_topic] * count
        keys = batch.column("key").to_pylist() if "key" in columns else [None] * count
        headers = header_pairs(batch.column("headers")) if "headers" in columns else [None] * count
        partitions = batch.column("partition").to_pylist() if "partition" in columns else [None] * count
        for value, topic, key, header, partition in zip(values, topics, keys, headers, partitions, strict=True):
            if topic is None:
                raise KafkaSinkError("a row has no topic (no `topic` column value and no `topic` option)")
            extra: dict[str, Any] = {}
            if partition is not None:
                extra["partition"] = partition
            if header:
                extra["headers"] = header
            send((topic, key, value, extra))
        sent += count
    for round_ in range(RETRY_ROUNDS + 1):
        remaining = producer.flush(FLUSH_TIMEOUT)
        if remaining:
            raise KafkaSinkError(f"{remaining} records not acknowledged within {FLUSH_TIMEOUT:.0f} s")
        if not refused:
            return sent
        if round_ == RETRY_ROUNDS:
            break
        again = [record for record, _ in refused]
        refused.clear()
        time.sleep(RETRY_PAUSE * (round_ + 1))
        for record in again:
            send(record)
    reasons = "; ".join(reason for _, reason in refused[:5])
    raise KafkaSinkError(f"the cluster refused {len(refused)} records after {RETRY_ROUNDS} retries: {reasons}")


class KafkaWriter(DataSourceArrowWriter):
    def __init__(self, options: dict[str, str]) -> None:
        self.options = {name.lower(): value for name, value in options.items()}  # Spark's options ignore case

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        write_batches(self.options, iterator)
        return WriterCommitMessage()


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: dict[str, str]) -> None:
        self.options = {name.lower(): value for name, value in options.items()}  # Spark's options ignore case

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        write_batches(self.options, iterator)
        return WriterCommitMessage()
