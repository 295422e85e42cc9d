"""A Kafka source for Structured Streaming on Spark's Python Data Source API, over confluent-kafka.

Used where Spark's own `format("kafka")` (the JVM connector) is not on the classpath.
It has the JVM source's columns (key, value, topic, partition, offset, timestamp,
timestampType, headers) and options (`subscribe`, `startingOffsets` earliest|latest,
`maxOffsetsPerTrigger`, `failOnDataLoss`, `kafka.*` client settings).

Offsets are `{"topic": {"partition": next offset}}`. The driver plans each micro-batch
as one fixed offset range per partition and executors read exactly that range, so a
batch replayed from the checkpoint reads the same records: what makes the Parquet
sink exactly-once.

The latest offset is the larger of the broker's ListOffsets answer and the high
watermark of a fetch response. Apache Kafka answers ListOffsets correctly; Tansu 0.6
answers with the last batch's base offset + 1, which would leave the rest of that
batch unread until more records arrive. A small probe consumer on the driver, kept at
the last known high watermark, supplies the fetch-response value (it reads at most a
bounded queue of new records per micro-batch and throws them away).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from gateway.spark.headers import headers_array
from gateway.spark.kafka_options import client_config

SCHEMA = ("key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
          "timestampType int, headers array<struct<key: string, value: binary>>")
ARROW_BATCH_ROWS = 4096
METADATA_TIMEOUT = 10.0
# librdkafka reports the high watermark only after a fetch response; this bounds the wait for one
PROBE_TIMEOUT = 2.0
PROBE_QUEUE_KBYTES = 1024
# an executor gives up on a range it was promised after this long without a record
READ_STALL_TIMEOUT = 60.0


class KafkaSourceError(RuntimeError):
    """A planned offset range cannot be read as planned (names the topic, partition and offsets)."""


@dataclass(frozen=True, slots=True)
class OffsetRange(InputPartition):
    """One Spark task: records [start, end) of one topic partition, and how to reach the cluster."""

    topic: str
    partition: int
    start: int
    end: int
    client: tuple[tuple[str, str], ...]
    fail_on_data_loss: bool


def _flag(value: Any, default: bool) -> bool:
    return default if value is None else str(value).strip().lower() == "true"


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans offset ranges on the driver; `read` runs on executors and holds no state between calls."""

    def __init__(self, options: dict[str, str]) -> None:
        options = {name.lower(): value for name, value in options.items()}  # Spark's options ignore case
        self.client = client_config(options)
        if "bootstrap.servers" not in self.client:
            raise ValueError("xgate_kafka: the option kafka.bootstrap.servers is required")
        self.topics = tuple(t.strip() for t in str(options.get("subscribe") or "").split(",") if t.strip())
        if not self.topics:
            raise ValueError("xgate_kafka: the option subscribe (comma-separated topics) is required")
        self.starting = str(options.get("startingoffsets") or "latest").lower()
        if self.starting not in ("earliest", "latest"):
            raise ValueError(f"xgate_kafka: startingOffsets must be earliest or latest, not {self.starting!r}")
        limit = options.get("maxoffsetspertrigger")
        self.max_offsets = int(limit) if limit else None
        self.fail_on_data_loss = _flag(options.get("failondataloss"), True)
        self._admin: Any = None
        self._probe: Any = None
        self._probed: set[tuple[str, int]] = set()
        # Trigger.AvailableNow: the high watermarks when the query started; nothing past them is read
        self._target: dict[tuple[str, int], int] | None = None

    # -- driver side ------------------------------------------------------------------------------------------

    def _clients(self) -> tuple[Any, Any]:
        if self._admin is None:
            from confluent_kafka import Consumer
            from confluent_kafka.admin import AdminClient

            self._admin = AdminClient(dict(self.client))
            self._probe = Consumer({**self.client, "group.id": f"xgate-spark-probe-{uuid.uuid4().hex}",
                                    "enable.auto.commit": False, "auto.offset.reset": "latest",
                                    "fetch.wait.max.ms": 100, "queued.max.messages.kbytes": PROBE_QUEUE_KBYTES})
        return self._admin, self._probe

    def _partitions(self) -> list[tuple[str, int]]:
        """Every partition of the subscribed topics that exist now (a missing topic has none yet)."""
        admin, _ = self._clients()
        metadata = admin.list_topics(timeout=METADATA_TIMEOUT)
        found: list[tuple[str, int]] = []
        for topic in self.topics:
            described = metadata.topics.get(topic)
            if described is None or described.error is not None:
                continue
            found.extend((topic, partition) for partition in sorted(described.partitions))
        return found

    def _watermarks(self, partitions: list[tuple[str, int]], which: str) -> dict[tuple[str, int], int]:
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

        admin, _ = self._clients()
        spec = OffsetSpec.earliest() if which == "earliest" else OffsetSpec.latest()  # type: ignore[no-untyped-call]
        futures = admin.list_offsets({TopicPartition(t, p): spec for t, p in partitions},
                                     request_timeout=METADATA_TIMEOUT)
        return {(tp.topic, tp.partition): future.result().offset for tp, future in futures.items()}

    def _high_watermarks(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        from confluent_kafka import TopicPartition

        listed = self._watermarks(partitions, "latest")
        _, probe = self._clients()
        fresh = [tp for tp in partitions if tp not in self._probed]
        if fresh:
            probe.incremental_assign([TopicPartition(t, p, listed[(t, p)]) for t, p in fresh])
            self._probed.update(fresh)
        # drain what the probe fetched (it is read again by executors) and let one more fetch answer arrive
        deadline = time.monotonic() + PROBE_TIMEOUT
        probe.consume(num_messages=100000, timeout=0.25)
        while probe.consume(num_messages=100000, timeout=0):
            pass
        high = dict(listed)
        for topic, partition in partitions:
            while True:
                cached = probe.get_watermark_offsets(TopicPartition(topic, partition), cached=True)[1]
                if cached >= 0 or time.monotonic() > deadline:
                    break
                probe.consume(num_messages=100000, timeout=0.05)
            high[(topic, partition)] = max(listed[(topic, partition)], cached)
        return high

    def initialOffset(self) -> dict[str, dict[str, int]]:
        partitions = self._partitions()
        if self.starting == "earliest":
            offsets = self._watermarks(partitions, "earliest")
        else:
            offsets = self._high_watermarks(partitions)
        return _nested(offsets)

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_offsets) if self.max_offsets else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._high_watermarks(self._partitions())

    def latestOffset(self, start: dict[str, dict[str, int]], limit: ReadLimit) -> dict[str, dict[str, int]]:
        begun = _flat(start)
        if self._target is not None:
            partitions = sorted(self._target)
            high = self._target
        else:
            partitions = self._partitions()
            high = self._high_watermarks(partitions)
        # a partition that appeared after the query started is read from its beginning
        low = self._watermarks([tp for tp in partitions if tp not in begun], "earliest") if \
            any(tp not in begun for tp in partitions) else {}
        end = {tp: max(high[tp], begun.get(tp, low.get(tp, 0))) for tp in partitions}
        for tp, offset in begun.items():
            end.setdefault(tp, offset)
        if isinstance(limit, ReadMaxRows):
            end = _capped(begun, low, end, limit.max_rows)
        return _nested(end)

    def partitions(self, start: dict[str, dict[str, int]], end: dict[str, dict[str, int]]) -> Sequence[OffsetRange]:
        begun, until = _flat(start), _flat(end)
        client = tuple(sorted(self.client.items()))
        # a partition new in this batch starts where its log starts (as latestOffset counted it)
        new = [tp for tp in until if tp not in begun]
        low = self._watermarks(new, "earliest") if new else {}
        ranges = []
        for (topic, partition), stop in sorted(until.items()):
            first = begun.get((topic, partition), low.get((topic, partition), 0))
            if stop > first:
                ranges.append(OffsetRange(topic, partition, first, stop, client, self.fail_on_data_loss))
        return ranges

    def commit(self, end: dict[str, dict[str, int]]) -> None:
        """Offsets live in Spark's checkpoint; nothing is committed to the cluster."""

    def stop(self) -> None:
        if self._probe is not None:
            self._probe.close()
            self._probe = None
            self._admin = None

    # -- executor side ----------------------------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, OffsetRange)
        return read_range(partition)


def read_range(task: OffsetRange) -> Iterator[Any]:
    """The records of one planned range as Arrow record batches (offsets a compacted topic lacks are skipped)."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({**dict(task.client), "group.id": f"xgate-spark-{task.topic}", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "enable.partition.eof": True})
    try:
        if task.fail_on_data_loss:
            low = consumer.get_watermark_offsets(TopicPartition(task.topic, task.partition),
                                                 timeout=METADATA_TIMEOUT)[0]
            if low > task.start:
                raise KafkaSourceError(f"{task.topic}[{task.partition}]: offsets {task.start}..{low - 1} are gone "
                                       "(retention deleted them before they were read); the option "
                                       "failOnDataLoss=false skips them")
        consumer.assign([TopicPartition(task.topic, task.partition, task.start)])
        rows: list[Any] = []
        done = False
        position = task.start
        last_progress = time.monotonic()
        while not done:
            # ask for no more than the range still holds: consume() returns once it has that many
            wanted = max(1, min(ARROW_BATCH_ROWS - len(rows), task.end - position))
            messages = consumer.consume(num_messages=wanted, timeout=0.5)
            for message in messages:
                error = message.error()
                if error is not None and error.code() != KafkaError._PARTITION_EOF:
                    raise KafkaSourceError(f"{task.topic}[{task.partition}]: {error.str()}")
                # past `end` (also the partition-end event when the range's tail was compacted or markers)
                offset = message.offset() or 0  # set on records and on the partition-end event
                if offset >= task.end:
                    done = True
                    break
                if error is None:
                    rows.append(message)
                    position = offset + 1
                    done = position == task.end
                    if done:
                        break
            if messages:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > READ_STALL_TIMEOUT:
                raise KafkaSourceError(f"{task.topic}[{task.partition}]: no record for {READ_STALL_TIMEOUT:.0f} s; "
                                       f"planned offsets {task.start}..{task.end - 1}")
            if len(rows) >= ARROW_BATCH_ROWS or (done and rows):
                yield _arrow_batch(rows)
                rows = []
    finally:
        consumer.close()


def _arrow_batch(messages: list[Any]) -> Any:
    import pyarrow as pa  # type: ignore[import-untyped]

    timestamps, kinds = [], []
    for message in messages:
        kind, stamp = message.timestamp()
        timestamps.append(stamp * 1000 if kind != 0 and stamp >= 0 else None)
        kinds.append(kind - 1 if kind != 0 else -1)  # librdkafka: 1 create time, 2 log append; Java: 0 and 1
    return pa.RecordBatch.from_arrays([
        pa.array([m.key() for m in messages], type=pa.binary()),
        pa.array([m.value() for m in messages], type=pa.binary()),
        pa.array([m.topic() for m in messages], type=pa.string()),
        pa.array([m.partition() for m in messages], type=pa.int32()),
        pa.array([m.offset() for m in messages], type=pa.int64()),
        pa.array(timestamps, type=pa.timestamp("us", tz="UTC")),
        pa.array(kinds, type=pa.int32()),
        headers_array(m.headers() for m in messages),
    ], names=["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"])


def _flat(offsets: dict[str, dict[str, int]]) -> dict[tuple[str, int], int]:
    return {(topic, int(partition)): int(offset) for topic, by_partition in offsets.items()
            for partition, offset in by_partition.items()}


def _nested(offsets: dict[tuple[str, int], int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = offset
    return out


def _capped(begun: dict[tuple[str, int], int], low: dict[tuple[str, int], int], end: dict[tuple[str, int], int],
            budget: int) -> dict[tuple[str, int], int]:
    """Spread at most `budget` records over the partitions, round-robin, so none starves."""
    start = {tp: begun.get(tp, low.get(tp, 0)) for tp in end}
    capped = dict(start)
    pending = {tp for tp in end if end[tp] > start[tp]}
    while budget > 0 and pending:
        share = max(budget // len(pending), 1)
        for tp in sorted(pending):
            take = min(share, end[tp] - capped[tp], budget)
            capped[tp] += take
            budget -= take
            if capped[tp] >= end[tp]:
                pending.discard(tp)
            if budget == 0:
                break
    return capped
