"""The Kafka end-to-end bench's setting (bench/kafka_e2e.py runs it): the seeded records as they go on the
wire, a broker (the shared one, or a private one per run), the raw pass-through candidate, the xgate
candidates as subprocesses with their configuration, and the consumer that counts and times what arrives.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # type: ignore[import-untyped]
from aiokafka.admin import AIOKafkaAdminClient, NewTopic  # type: ignore[import-untyped]

from bench import workload
from gateway.ports import ephemeral_port

ROOT = Path(__file__).resolve().parents[1]
KAFKA_SCRIPT = ROOT / "deploy" / "brokers" / "kafka.sh"
SEQ_HEADER = "bench-seq"
CANDIDATES = ("raw", "xgate")
# max-rate runs also measure `xgate run --workers 2` (issues 18 and 31: >= 0.8 of raw on this 2-core machine)
RATE_CANDIDATES = (*CANDIDATES, "xgate-w2")
# the counting consumer's fetch wait: Kafka answers a held fetch as soon as a record arrives, so this only
# bounds how often an idle consumer asks
OUTPUT_FETCH_WAIT_MS = {"shared": 100, "private": 100}
# the probe records of a latency run are sent this often until one has come through the candidate
PROBE_INTERVAL = 0.1
WARMUP_SECONDS = 1.0
# give up on a run after this long without a new output record (before the first one: STARTUP_SECONDS)
STALL_SECONDS = 30.0
STARTUP_SECONDS = 60.0
STOP_SECONDS = 20.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
BIG_BATCHES = {"linger_ms": 5, "max_batch_size": 1 << 20, "max_request_size": 4 << 20}


@dataclass(frozen=True, slots=True)
class Wire:
    """One record as produced to the input topic."""

    partition: int
    key: bytes | None
    value: bytes
    headers: list[tuple[str, bytes]]
    timestamp_ms: int | None


def wire_records(count: int, partitions: int) -> tuple[list[Wire], int]:
    """`count` workload records in their Kafka form, `bench-seq` first; and how many were made conformant."""
    from gateway.compiler import compile_registry
    from gateway.loader import load_snapshot
    from gateway.recorded import envelope_from_record
    from protocol_adapters.kafka.mapping import kafka_envelope, outgoing_record

    with tempfile.TemporaryDirectory(prefix="xgate-bench-") as folder:
        path = Path(folder) / "workload.xreg.json"
        path.write_text(json.dumps(workload.registry_document()), "utf-8")
        snapshot = load_snapshot([path])
    classify = compile_registry(snapshot.registry, snapshot.digest).classify
    wires: list[Wire] = []
    conformant = 0
    for seq, sample in enumerate(workload.samples(count)):
        record = sample.record
        out = outgoing_record(envelope_from_record(record))
        wire = Wire(record["partition"] % partitions, out.key, out.value,
                    [(SEQ_HEADER, str(seq).encode()), *out.headers], out.timestamp_ms)
        wires.append(wire)
        # judged as the gateway's source will see it: a Kafka envelope, bench header included
        envelope = kafka_envelope("in", wire.partition, seq, wire.key, wire.value, wire.headers, wire.timestamp_ms,
                                  workload.ENDPOINT)
        # the expected split comes from what the generator made each message to be; classify must agree
        intended = sample.kind == workload.OK
        if classify(envelope).conformant != intended:
            raise RuntimeError(f"record {seq} ({sample.kind}): classify disagrees with the generator")
        conformant += intended
    return wires, conformant


def cycled(wires: list[Wire], count: int) -> Iterator[tuple[int, Wire]]:
    """(seq, record) for seq in [0, count): the records reused in turn, `bench-seq` rewritten."""
    for seq in range(count):
        wire = wires[seq % len(wires)]
        yield seq, Wire(wire.partition, wire.key, wire.value, [(SEQ_HEADER, str(seq).encode()), *wire.headers[1:]],
                        wire.timestamp_ms)


# -- the broker -----------------------------------------------------------------------------------------------


class Broker:
    """Where the run talks to, and the fresh (uuid-named) topics and consumer groups it made there.

    `clean` deletes them (after every round, and at the end): on the S3-backed broker every object left in
    the bucket is one more for moto to walk on later LISTs, so later rounds would run on a slower broker.
    """

    def __init__(self, bootstrap: str, kind: str, partitions: int) -> None:
        self.bootstrap = bootstrap
        self.kind = kind
        self.partitions = partitions
        self.run = uuid.uuid4().hex[:8]
        self.created: list[str] = []
        self.groups: list[str] = []

    async def create(self, *names: str) -> list[str]:
        topics = [f"bench-e2e-{self.run}-{name}-{uuid.uuid4().hex[:4]}" for name in names]
        admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, self.partitions, 1) for topic in topics])
        finally:
            await admin.close()
        self.created += topics
        return topics

    def group(self) -> str:
        self.groups.append(f"bench-e2e-{self.run}-{uuid.uuid4().hex[:8]}")
        return self.groups[-1]

    async def clean(self) -> None:
        """Delete what was made so far; best effort (what stays costs the broker some memory, nothing else)."""
        topics, self.created = self.created, []
        groups, self.groups = self.groups, []
        if topics:
            admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap)
            with contextlib.suppress(Exception):
                await admin.start()
                await admin.delete_topics(topics)
            with contextlib.suppress(Exception):
                await admin.close()
        if groups:
            with contextlib.suppress(Exception):  # aiokafka has no DeleteGroups; confluent-kafka (bench extra) has
                await asyncio.to_thread(delete_groups, self.bootstrap, groups)

    def producer(self, **settings: Any) -> Any:
        return make_producer(self.bootstrap, **settings)

    async def consumer(self, topics: list[str], **settings: Any) -> Any:
        return await assigned_consumer(self.bootstrap, topics, self.partitions, **settings)


def delete_topics_named(bootstrap: str, prefix: str) -> None:
    """Delete every topic whose name starts with `prefix` (a bench run's own, on the shared broker); best effort:
    what stays costs the broker disk and memory, and a broker kept across runs otherwise grows with each."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    with contextlib.suppress(Exception):
        names = [name for name in admin.list_topics(timeout=10).topics if name.startswith(prefix)]
        for future in (admin.delete_topics(names, operation_timeout=30).values() if names else ()):
            future.result(60)


def delete_groups(bootstrap: str, groups: list[str]) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})  # no info lines on stderr
    for future in admin.delete_consumer_groups(groups, request_timeout=10).values():
        future.result()


def make_producer(bootstrap: str, **settings: Any) -> Any:
    # as xgate's sink: acks=all, idempotent
    return AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, **settings)


# how long the broker may hold a fetch of either candidate's source consumer (aiokafka's and xgate's default:
# 500 ms); --fetch-wait-ms sets it for both through the environment, which their subprocesses inherit
FETCH_WAIT_ENV = "XGATE_BENCH_FETCH_WAIT_MS"


def source_fetch_wait_ms() -> int:
    return int(os.environ.get(FETCH_WAIT_ENV, "500"))


async def assigned_consumer(bootstrap: str, topics: list[str], partitions: int, **settings: Any) -> Any:
    """A started consumer without a group, assigned every partition of `topics` from its beginning."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False, **settings)
    await consumer.start()
    tps = [TopicPartition(topic, p) for topic in topics for p in range(partitions)]
    consumer.assign(tps)
    await consumer.seek_to_beginning(*tps)
    return consumer


@contextlib.asynccontextmanager
async def broker(kind: str, partitions: int, properties: str = "") -> AsyncIterator[Broker]:
    """The shared Kafka (started when it is not running), or a private one for this run only (`properties`:
    server.properties lines it is started with, after the script's own)."""
    if kind == "shared":
        await asyncio.to_thread(subprocess.run, ["bash", str(KAFKA_SCRIPT), "start"], check=True)
        yield Broker(workload.BOOTSTRAP, kind, partitions)
        return
    port = ephemeral_port()
    with tempfile.TemporaryDirectory(prefix="xgate-bench-kafka-") as state:
        env = {**os.environ, "XGATE_KAFKA_PORT": str(port), "XGATE_KAFKA_CONTROLLER_PORT": str(ephemeral_port()),
               "XGATE_BROKER_STATE": state}
        if properties:
            extra = Path(state) / "extra.properties"
            extra.write_text(properties.format(port=port, controller=env["XGATE_KAFKA_CONTROLLER_PORT"]), "utf-8")
            env["XGATE_KAFKA_PROPERTIES"] = str(extra)
        try:
            await asyncio.to_thread(subprocess.run, ["bash", str(KAFKA_SCRIPT), "start"], env=env, check=True)
            yield Broker(f"127.0.0.1:{port}", kind, partitions)
        finally:
            # the script stops the broker of its own state directory: only the one started here
            await asyncio.to_thread(subprocess.run, ["bash", str(KAFKA_SCRIPT), "stop"], env=env, check=False)


async def preload(broker: Broker, topic: str, records: list[Wire]) -> None:
    """Everything in as few requests as possible: one big batch after another per partition."""
    sender = broker.producer(**BIG_BATCHES)
    await sender.start()
    try:
        by_partition: dict[int, list[Wire]] = {}
        for wire in records:
            by_partition.setdefault(wire.partition, []).append(wire)
        delivered = []
        for partition, wires in by_partition.items():
            batch = sender.create_batch()
            for wire in wires:
                if batch.append(timestamp=wire.timestamp_ms, key=wire.key, value=wire.value,
                                headers=wire.headers) is None:
                    delivered.append(await sender.send_batch(batch, topic, partition=partition))
                    batch = sender.create_batch()
                    batch.append(timestamp=wire.timestamp_ms, key=wire.key, value=wire.value, headers=wire.headers)
            delivered.append(await sender.send_batch(batch, topic, partition=partition))
        await asyncio.gather(*delivered)
    finally:
        await sender.stop()


# -- the raw candidate ----------------------------------------------------------------------------------------


async def forward(bootstrap: str, source: str, target: str, partitions: int) -> None:
    """The raw candidate: every record of `source` to the same partition of `target`, until SIGTERM."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    # linger 5 ms as xgate's sink; batches up to 1 MiB where xgate's sink keeps 128 KiB by default (xgate with 1 MiB
    # batches was measured no faster: docs/performance.md)
    sender = make_producer(bootstrap, **BIG_BATCHES)
    await sender.start()
    consumer = await assigned_consumer(bootstrap, [source], partitions, fetch_max_wait_ms=source_fetch_wait_ms())
    pending: list[asyncio.Future[Any]] = []
    try:
        while not stop.is_set():
            fetched = await consumer.getmany(timeout_ms=200)  # xgate's source polls with 200 ms as well
            for tp, records in fetched.items():
                batch = sender.create_batch()
                for record in records:
                    headers = list(record.headers)  # the batch builder wants a list, the consumer gives a tuple
                    if batch.append(timestamp=record.timestamp, key=record.key, value=record.value,
                                    headers=headers) is None:
                        pending.append(await sender.send_batch(batch, target, partition=tp.partition))
                        batch = sender.create_batch()
                        batch.append(timestamp=record.timestamp, key=record.key, value=record.value, headers=headers)
                # send_batch waits while this partition still has a batch queued: that is the backpressure
                pending.append(await sender.send_batch(batch, target, partition=tp.partition))
            for future in pending:
                if future.done():
                    future.result()  # a failed delivery ends the run (and shows as lost records)
            pending = [future for future in pending if not future.done()]
        await asyncio.gather(*pending)
    finally:
        await consumer.stop()
        await sender.stop()


# -- candidates as subprocesses -------------------------------------------------------------------------------


def xgate_config(folder: Path, bootstrap: str, group: str, source: str, valid: str, dlq: str) -> None:
    """The workload registry and a gateway.yaml that routes it between this run's topics."""
    folder.mkdir(parents=True)
    (folder / "workload.xreg.json").write_text(json.dumps(workload.registry_document(bootstrap=bootstrap)), "utf-8")
    settings = {
        "routes": [{"source": workload.ENDPOINT, "conformant": "workload.valid", "nonconformant": "workload.dlq"}],
        # a new group per run: without a committed offset it starts at `autooffsetreset` (earliest)
        "endpoints": {workload.ENDPOINT: {"options": {"topic": source, "consumergroup": group,
                                                      "fetch_max_wait_ms": source_fetch_wait_ms()}},
                      "workload.valid": {"options": {"topic": valid}},
                      "workload.dlq": {"options": {"topic": dlq}}},
        "runtime": {"drain_timeout": 10},
    }
    (folder / "gateway.yaml").write_text(yaml.safe_dump(settings), "utf-8")


class Process:
    """One candidate subprocess; `stop` sends SIGTERM (both candidates drain on it) and kills what lingers."""

    def __init__(self, name: str, command: list[str], log: Path, readyz: str | None = None) -> None:
        self.name = name
        self.log = log
        self.readyz = readyz
        self.spawned = time.perf_counter()
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        with log.open("wb") as out:
            self.popen = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "PYTHONPATH": path},
                                          stdout=out, stderr=subprocess.STDOUT)

    def tail(self) -> str:
        return self.log.read_text("utf-8", "replace")[-3000:]

    def check(self) -> None:
        if self.popen.poll() is not None:
            raise RuntimeError(f"{self.name} exited with {self.popen.returncode}:\n{self.tail()}")

    def cpu_seconds(self) -> float:
        """User and system CPU time of the candidate so far, all its threads and child processes (the workers
        of `--workers N`), 0 once it is gone."""
        total = 0.0
        for pid in _process_tree(self.popen.pid):
            try:
                with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
                    fields = stat.read().rpartition(")")[2].split()  # the fields after the name, `state` first
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
        return total

    async def ready_after(self) -> float | None:
        """Seconds from spawn until /readyz answers 200 (None: no readiness endpoint, or it exited first)."""
        if self.readyz is None:
            return None
        while self.popen.poll() is None:
            with contextlib.suppress(OSError):
                answer = await asyncio.to_thread(urllib.request.urlopen, self.readyz, timeout=1)
                if answer.status == 200:
                    return time.perf_counter() - self.spawned
            await asyncio.sleep(0.05)
        return None

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


def _process_tree(pid: int) -> list[int]:
    found = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return found
    for child in children:
        found += _process_tree(int(child))
    return found


def workers_of(name: str) -> int:
    """How many processes a candidate runs (`xgate-w2`: two workers in one consumer group)."""
    return int(name.split("-w")[1]) if "-w" in name else 1


def spawn(name: str, broker: Broker, source: str, outputs: list[str], work: Path, group: str = "") -> Process:
    log = work / f"{name}-{uuid.uuid4().hex[:6]}.log"
    if name == "raw":
        return Process(name, [sys.executable, "-m", "bench.kafka_e2e", "--forward", source, outputs[0],
                              "--bootstrap", broker.bootstrap, "--partitions", str(broker.partitions)], log)
    folder = work / f"xgate-{uuid.uuid4().hex[:6]}"
    xgate_config(folder, broker.bootstrap, group or broker.group(), source, *outputs)
    address = f"127.0.0.1:{ephemeral_port()}"
    workers = ["--workers", str(workers_of(name))] if "-w" in name else []
    return Process(name, [sys.executable, "-m", "gateway.cli", "run", "--config", str(folder),
                          "--metrics-address", address, *workers], log, f"http://{address}/readyz")


def output_roles(name: str) -> tuple[str, ...]:
    return ("out",) if name == "raw" else ("valid", "dlq")


# -- counting what arrives ------------------------------------------------------------------------------------


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine, every core, from /proc/stat."""
    with open("/proc/stat", encoding="ascii") as stat:
        ticks = [int(value) for value in stat.readline().split()[1:]]
    idle = ticks[3] + ticks[4]  # idle and iowait
    return (sum(ticks) - idle) / CLOCK_TICKS, sum(ticks) / CLOCK_TICKS


@dataclass(slots=True)
class Arrivals:
    """What the consumer of the output topics saw: which sequence numbers, when, and on which topic."""

    expected: int
    seen: bytearray  # per sequence number: arrived yet
    roles: dict[str, str]  # topic -> what it is for (`out`, `valid`, `dlq`)
    by_topic: dict[str, int] = field(default_factory=dict)
    unique: int = 0
    duplicates: int = 0
    first: float | None = None
    first_count: int = 0
    last: float | None = None
    arrived_ns: dict[int, int] = field(default_factory=dict)  # a latency run's arrivals (bench/light_traffic.py)
    # (candidate CPU, machine busy, machine total) seconds at the first output record and at the last
    cpu_first: tuple[float, float, float] | None = None
    cpu_last: tuple[float, float, float] | None = None

    @classmethod
    def of(cls, expected: int, outputs: list[str], name: str) -> Arrivals:
        return cls(expected, bytearray(expected), dict(zip(outputs, output_roles(name), strict=True)))

    @property
    def complete(self) -> bool:
        return self.unique >= self.expected

    def arrived(self, seq: int) -> bool:
        """Note one arrival of record `seq`: True the first time, False (counted) for a duplicate."""
        if self.seen[seq]:
            self.duplicates += 1
            return False
        self.seen[seq] = 1
        self.unique += 1
        return True

    def accounting(self) -> dict[str, Any]:
        return {"sent": self.expected, "arrived": self.unique, "lost": self.expected - self.unique,
                "duplicates": self.duplicates, "by_topic": {self.roles[t]: n for t, n in self.by_topic.items()}}


def sequence(headers: Any) -> int:
    if headers and headers[0][0] == SEQ_HEADER:
        return int(headers[0][1])
    for name, value in headers:  # a candidate that reordered headers is still counted
        if name == SEQ_HEADER:
            return int(value)
    raise ValueError(f"output record without a {SEQ_HEADER} header")


async def collect(consumer: Any, arrivals: Arrivals, process: Process) -> None:
    """Fetch until every expected record arrived; returns early (`arrivals` incomplete) after a stall. A max-rate
    run's reader: it notes the CPU at the first and the last arrival (a latency run times each arrival instead,
    bench/light_traffic.py)."""
    progress = time.perf_counter()
    patience = STARTUP_SECONDS
    while not arrivals.complete:
        fetched = await consumer.getmany(timeout_ms=100)
        now = time.perf_counter()
        if not fetched:
            process.check()
            if now - progress > patience:
                return
            continue
        count = 0
        for tp, records in fetched.items():
            arrivals.by_topic[tp.topic] = arrivals.by_topic.get(tp.topic, 0) + len(records)
            count += len(records)
            for record in records:
                arrivals.arrived(sequence(record.headers))
        if arrivals.first is None:
            arrivals.first, arrivals.first_count = now, count
            arrivals.cpu_first = (process.cpu_seconds(), *machine_cpu())
        arrivals.last = progress = now
        arrivals.cpu_last = (process.cpu_seconds(), *machine_cpu())
        patience = STALL_SECONDS


async def group_stable(broker: Broker, group: str, members: int, process: Process) -> float:
    """Wait until `group` is Stable with `members` members (every one has its partitions: the SyncGroup round
    is over); seconds waited. The broker's own answer, not a guess from a timer."""
    started = time.perf_counter()
    admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
    await admin.start()
    try:
        while True:
            process.check()
            (response,) = await admin.describe_consumer_groups([group])
            _, _, state, _, _, joined, *_ = response.groups[0]
            if state == "Stable" and len(joined) == members:
                return time.perf_counter() - started
            if time.perf_counter() - started > STARTUP_SECONDS:
                raise RuntimeError(f"consumer group {group} not Stable with {members} members: {state}, "
                                   f"{len(joined)} members")
            await asyncio.sleep(0.1)
    finally:
        await admin.close()
