"""The Kafka latency run's sender and measuring consumer, on librdkafka (confluent-kafka), each on a thread.

They share the two cores with the broker and the candidate they measure, so they must cost little: written on
aiokafka (one `send` a record; then each 5 ms's records through the project's Outbox) this process kept 0.6-0.8
(then 0.4-0.6) of a core busy at 7,000-16,000 msg/s, as much as either candidate or more, and the machine 90-97%
busy in xgate's rounds. librdkafka does the
batching, the wire and the record parsing in C on its own threads; what stays in Python is one `produce` call a
record and reading each arrival's `bench-seq` header.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from bench.kafka_harness import STALL_SECONDS, STARTUP_SECONDS, Arrivals, Wire, sequence

# the paced sender hands the records whose time has come to librdkafka this often, and librdkafka waits 1 ms
# more for the rest of a burst: one batch a partition per tick, as the 5 ms linger of a `send` a record gave
TICK_SECONDS = 0.005
LINGER_MS = 1


class PacedSender:
    """Produces to one topic: single records now (probes), or a list of records on a fixed schedule."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.failures: list[str] = []
        # acks=all and idempotent as xgate's sink; only failed deliveries call back (one Python call a record less)
        self._producer = Producer({
            "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": LINGER_MS,
            "batch.size": 1 << 20, "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 4 << 20, "delivery.report.only.error": True,
            "on_delivery": self._delivered})

    def _delivered(self, error: Any, _message: Any) -> None:
        if error is not None:
            self.failures.append(str(error))

    def send(self, wire: Wire) -> None:
        produce = self._producer.produce
        while True:
            try:
                produce(self.topic, value=wire.value, key=wire.key, partition=wire.partition,
                        timestamp=wire.timestamp_ms or 0,
                        headers=wire.headers)  # type: ignore[arg-type]  # (str, bytes) pairs: a narrower list
                return
            except BufferError:  # librdkafka's queue is full: let it send, then try again
                self._producer.poll(0.001)

    def paced(self, records: list[tuple[int, Wire]], rate: float, warmup: int, sent_ns: dict[int, int],
              snapshot: Callable[[], tuple[float, ...]]) -> tuple[tuple[float, ...], tuple[float, ...], float]:
        """Record i is due at start + i / rate and timed from then: every TICK_SECONDS the records whose time has
        come are produced, so a late tick's records carry their wait (catching up, not skipping). Returns
        `snapshot()` taken as the warm-up ends and as the last record is produced, and the seconds it took."""
        total = len(records)
        start_ns = time.perf_counter_ns()
        before = snapshot()
        index = 0
        while index < total:
            due = min(total, int((time.perf_counter_ns() - start_ns) * rate / 1e9) + 1)
            if index <= warmup < due:
                before = snapshot()
            while index < due:
                seq, wire = records[index]
                sent_ns[seq] = start_ns + round(index * 1e9 / rate)
                self.send(wire)
                index += 1
            self._producer.poll(0)
            time.sleep(TICK_SECONDS)
        return before, snapshot(), (time.perf_counter_ns() - start_ns) / 1e9

    def flush(self, timeout: float = 60.0) -> None:
        """Wait until librdkafka delivered everything; a failed delivery ends the run (and would show as lost)."""
        left = self._producer.flush(timeout)
        if left or self.failures:
            raise RuntimeError(f"sender: {left} records undelivered, failures: {self.failures[:3]}")


class ArrivalWatch(threading.Thread):
    """Reads every partition of the output topics from the beginning and notes each record's arrival in
    `arrivals` (its time when `arrivals.arrived_ns` is wanted); stops once all expected arrived, on `stop()`, or
    after a stall."""

    def __init__(self, bootstrap: str, topics: list[str], partitions: int, arrivals: Arrivals,
                 fetch_wait_ms: int) -> None:
        super().__init__(name="arrival-watch", daemon=True)
        self.arrivals = arrivals
        self.error: BaseException | None = None
        self._stopping = threading.Event()
        # no group joins or commits (assigned partitions); librdkafka wants a group id all the same
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-watch-{uuid.uuid4().hex[:8]}",
                                   "enable.auto.commit": False, "fetch.wait.max.ms": fetch_wait_ms,
                                   "enable.partition.eof": False})
        self._consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING)
                               for topic in topics for p in range(partitions)])

    def run(self) -> None:
        try:
            self._watch()
        except BaseException as exc:  # noqa: BLE001 - read by the waiting side
            self.error = exc
        finally:
            self._consumer.close()

    def _watch(self) -> None:
        arrivals = self.arrivals
        by_topic, arrived_ns = arrivals.by_topic, arrivals.arrived_ns
        poll, consume = self._consumer.poll, self._consumer.consume
        progress = time.perf_counter()
        patience = STARTUP_SECONDS
        while not arrivals.complete and not self._stopping.is_set():
            # `consume` waits for its whole count or its timeout: the first record is awaited alone, and what
            # came with it taken without waiting, so that each arrival is timed as it comes
            first = poll(0.1)
            now_ns = time.perf_counter_ns()
            now = now_ns / 1e9
            if first is None:
                if now - progress > patience:
                    return
                continue
            messages = [first, *consume(num_messages=10_000, timeout=0)]
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        continue
                    raise RuntimeError(f"arrival watch: {error}")
                topic = message.topic() or ""
                by_topic[topic] = by_topic.get(topic, 0) + 1
                seq = sequence(message.headers() or ())
                if arrivals.arrived(seq):
                    arrived_ns[seq] = now_ns
            if arrivals.first is None:
                arrivals.first, arrivals.first_count = now, len(messages)
            arrivals.last = progress = now
            patience = STALL_SECONDS

    def stop(self) -> None:
        self._stopping.set()
