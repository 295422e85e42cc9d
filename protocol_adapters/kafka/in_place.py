"""A Kafka source's fetched batches read in place: a Kafka to Kafka route moves records, not objects (issue 31).

aiokafka's fetcher makes a ConsumerRecord of every record it fetched, a Python loop and a dozen objects a
record; at a route's rates that was a sixth of its CPU, and as much again went to letting those objects go.
For a source that reads in place (KafkaSource.read_in_place, the record lane's: gateway/runtime/record_lane.py)
each plain batch of a fetch (native/src/fetched.rs `split_batches`: magic 2, uncompressed, not a control batch,
its CRC-32C matching, records in it) is handed on whole as one `InPlaceBatch`, a span of the bytes the broker
sent, which the native core judges and the sink's batch writer copies from. Any other batch still goes through
aiokafka's own reader record by record, so what it refuses (a bad CRC: the source's unreadable path), skips
(control batches) or decodes (codecs, older magics) stays aiokafka's, and so does a batch that begins before
the fetch position (records before it are skipped there).

The hook: aiokafka's fetcher makes `MemoryRecords(data)` and `PartitionRecords(...)` by their names in its
module; `install()` puts subclasses there. The first keeps its `data`; the second reads in place only for a
consumer whose value deserializer is `read_in_place`, and is aiokafka's own for every other consumer.
"""

from __future__ import annotations

from typing import Any

from aiokafka.consumer import fetcher  # type: ignore[import-untyped]  # untyped library
# aiokafka's own class, whatever install() later puts in the fetcher's module
from aiokafka.consumer.fetcher import PartitionRecords as _PartitionRecords  # type: ignore[import-untyped]
from aiokafka.record.memory_records import MemoryRecords  # type: ignore[import-untyped]
from aiokafka.structs import ConsumerRecord  # type: ignore[import-untyped]

try:  # built by `make install`; without it every batch is aiokafka's to read
    from xgate_core import split_batches
except ImportError:  # pragma: no cover - exercised where the extension is absent
    split_batches = None


def available() -> bool:
    """Whether batches can be read in place here: the core built, and aiokafka's fetcher as install() expects it."""
    return split_batches is not None and all(hasattr(fetcher, name) for name in (
        "PartitionRecords", "MemoryRecords", "READ_UNCOMMITTED"))


def read_in_place(value: bytes) -> Any:
    """The value deserializer that marks a consumer whose plain batches are read in place; never called as one."""
    raise TypeError("read_in_place marks a consumer; it deserializes nothing")


class InPlaceBatch:
    """A plain batch of a fetch: `data[start:end]` of the fetch's partition data, `count` records from offset
    `first` on. `offset` is its last offset: the source tracks and acknowledges the batch by it, as it does a
    record by its own (protocol_adapters/kafka/offsets.py), so committing past it commits past the batch."""

    __slots__ = ("count", "data", "end", "first", "offset", "start")

    def __init__(self, data: bytes, start: int, end: int, first: int, offset: int, count: int) -> None:
        self.data, self.start, self.end = data, start, end
        self.first, self.offset, self.count = first, offset, count

    def __repr__(self) -> str:
        return f"InPlaceBatch(offsets {self.first}-{self.offset}, {self.count} records)"


def records_of(tp: Any, batch: InPlaceBatch) -> list[Any]:
    """The batch's records as aiokafka's reader makes them (a batch that must be settled record by record)."""
    reader = _PartitionRecords(tp, MemoryRecords(batch.data[batch.start:batch.end]), None, batch.first, None, None,
                               True, fetcher.READ_UNCOMMITTED)
    return list(reader)


def consumer_record(tp: Any, fields: tuple[Any, ...]) -> Any:
    """A ConsumerRecord from `Fetched.record`'s fields, as aiokafka's reader makes one (records_of)."""
    offset, timestamp, timestamp_type, key, value, headers = fields
    return ConsumerRecord(tp.topic, tp.partition, offset, timestamp, timestamp_type, key, value, None,
                          -1 if key is None else len(key), -1 if value is None else len(value), headers)


class _KeptMemoryRecords(MemoryRecords):  # type: ignore[misc]  # aiokafka's compiled class
    """aiokafka's MemoryRecords, keeping the data it reads."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.data = data


class _InPlacePartitionRecords(_PartitionRecords):  # type: ignore[misc]
    """aiokafka's PartitionRecords; a consumer marked `read_in_place` gets its plain batches whole."""

    next_fetch_offset: int  # aiokafka's: where the consumer's position moves once what was handed out is taken

    def _unpack_records(self) -> Any:
        if self._value_deserializer is not read_in_place or not isinstance(self._records, _KeptMemoryRecords):
            return super()._unpack_records()
        return self._in_place(self._records.data)

    def _in_place(self, data: bytes) -> Any:
        for start, end, first, after, count in split_batches(data):
            position: int = self.next_fetch_offset
            if count > 0 and first >= position:
                # the position moves past the batch before it is handed out, as aiokafka's moves past a record
                self.next_fetch_offset = after
                yield InPlaceBatch(data, start, end, first, after - 1, count)
                continue
            reader = _PartitionRecords(self._tp, MemoryRecords(data[start:end]), self._aborted_transactions,
                                       position, self._key_deserializer, None, self._check_crcs,
                                       self._isolation_level)
            for record in reader:
                self.next_fetch_offset = reader.next_fetch_offset
                yield record
            self.next_fetch_offset = max(self.next_fetch_offset, reader.next_fetch_offset)


def install() -> None:
    """Put the classes above in aiokafka's fetcher module (idempotent)."""
    fetcher.MemoryRecords = _KeptMemoryRecords
    fetcher.PartitionRecords = _InPlacePartitionRecords
