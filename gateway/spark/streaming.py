"""`xgate spark`: the routes of a config directory as one Structured Streaming query, Kafka to Kafka.

Every route whose source is a Kafka endpoint is read (one stream per source endpoint,
unioned), judged and routed on the executors (`gateway.spark.routing`), and each
micro-batch is written:

- to the routes' Kafka destinations: at-least-once (a batch replayed after a crash is
  produced again);
- optionally to Parquet for audit, one directory per batch id written with overwrite,
  so a replayed batch (same id, same offsets from the checkpoint's offset log) replaces
  its own partial output: exactly-once.

Without an audit and with every destination on one cluster, the query is one pass: the
judged rows go straight to Spark's Kafka sink, and the executors count verdicts, actions
and destinations per micro-batch in an accumulator (`DataFrame.observe` cost a tenth of
the pass: its expressions are evaluated row by row). Otherwise `BatchWriter` runs per
micro-batch (persisted once: counted, produced per cluster, audited), so no record is
judged twice.

Routes from other protocols are left to `xgate run`; a Kafka route with a destination
of another protocol is refused (the Spark runner produces to Kafka only). A Kafka
consumer endpoint without a route is read too: judged, counted and audited, forwarded
nowhere.
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from gateway.errors import AdapterError, GatewayError
from gateway.loader import Snapshot
from gateway.routes.resolve import SOURCE_USAGES, Route, endpoint_config, resolve_routes
from gateway.settings import Settings
from gateway.spark.kafka_options import JVM_FORMAT, jvm_options
from gateway.spark.routing import BatchCounts, RoutingTable, route_frame, routing_table
from gateway.spark.shipping import RegistryBundle
from protocol_adapters.kafka.options import Connection, source_options

if TYPE_CHECKING:
    from pyspark.accumulators import AccumulatorParam
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

AUDIT_COLUMNS = ("endpoint", "topic", "partition", "offset", "timestamp", "key", "value", "headers", "verdict",
                 "messagegroupid", "messageid", "violations", "events", "action", "destination")
KAFKA_PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"


@dataclass(frozen=True, slots=True)
class KafkaSource:
    endpoint_id: str
    topics: tuple[str, ...]
    connection: Connection
    starting_offsets: str


@dataclass(frozen=True, slots=True)
class StreamPlan:
    """What the query reads, and how it judges and routes (the table names every destination and its cluster)."""

    bundle: RegistryBundle
    table: RoutingTable
    sources: tuple[KafkaSource, ...]
    # what the runner leaves to `xgate run` or reads without a route, and why (printed at start)
    notes: tuple[str, ...] = ()


class PlanError(GatewayError, ValueError):
    """The config cannot run on Spark; the message names the route or endpoint and what is wrong."""


def plan_stream(snapshot: Snapshot, settings: Settings, bundle: RegistryBundle) -> StreamPlan:
    routes, problems = resolve_routes(snapshot.registry, settings)
    if problems:
        raise PlanError("\n".join(str(p) for p in problems))
    kafka_routes: list[Route] = []
    notes: list[str] = []
    for route in routes:
        source = route.source
        if source.protocol != "KAFKA":
            notes.append(f"route from {source.endpoint_id!r}: a {source.protocol or 'protocol-less'} source is "
                           "served by `xgate run`, not the Spark runner")
            continue
        for role in ("conformant", "nonconformant", "unmatched"):
            target = getattr(route, role)
            if target is not None and target.protocol != "KAFKA":
                raise PlanError(f"route from {source.endpoint_id!r}: the {role} destination {target.endpoint_id!r} "
                                f"is {target.protocol}; the Spark runner produces to Kafka endpoints only")
        kafka_routes.append(route)
    kafka_routes += _unrouted(snapshot, settings, {route.source.endpoint_id for route in routes}, notes)
    if not kafka_routes:
        raise PlanError("no Kafka consumer endpoint with bootstrap servers and a topic: the Spark runner reads Kafka "
                        "topics (routes in gateway.yaml or `xgate.route.*` labels send its verdicts onward)")
    try:
        sources = tuple(_source(route) for route in kafka_routes)
        table = routing_table(kafka_routes)
    except AdapterError as exc:
        raise PlanError(str(exc)) from None
    return StreamPlan(bundle, table, sources, tuple(notes))


def _unrouted(snapshot: Snapshot, settings: Settings, routed: set[str], notes: list[str]) -> list[Route]:
    """Kafka consumer endpoints without a route: judged, counted and audited, forwarded nowhere."""
    found: list[Route] = []
    for endpoint_id, endpoint in sorted(snapshot.registry.endpoints.items()):
        usage = endpoint.attrs.get("usage") or []
        if endpoint_id in routed or endpoint.attrs.get("protocol") != "KAFKA" or \
                (usage and not set(usage) & set(SOURCE_USAGES)):
            continue
        config = endpoint_config(snapshot.registry, endpoint_id, settings)
        try:
            source_options(config)
        except AdapterError as exc:
            notes.append(f"{exc} (no route, so it is not read)")
            continue
        notes.append(f"Kafka endpoint {endpoint_id!r} has no route: its records are judged, counted and "
                       "audited, not forwarded")
        found.append(Route(config, None, None, None, "drop", settings.runtime.inflight))
    return found


def _source(route: Route) -> KafkaSource:
    options = source_options(route.source)
    reset = options.auto_offset_reset if options.auto_offset_reset != "none" else "earliest"
    return KafkaSource(route.source.endpoint_id, options.topics, options.connection, reset)


# -- the query ----------------------------------------------------------------------------------------------------

def jvm_kafka_available(spark: SparkSession) -> bool:
    """Is Spark's own Kafka connector (spark-sql-kafka-0-10) on the driver's classpath?"""
    try:
        jvm = spark.sparkContext._jvm
        if jvm is None:  # Spark Connect: no JVM in this process to ask
            return False
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(KAFKA_PROVIDER, False, loader)
        return True
    except Exception:
        return False


def require_connector(spark: SparkSession) -> None:
    """Spark's own Kafka connector must be on the classpath (build_session(kafka=True), or --packages)."""
    if not jvm_kafka_available(spark):
        raise PlanError(f"{KAFKA_PROVIDER} is not on the classpath (a local session resolves it with Maven; "
                        "under spark-submit add --packages org.apache.spark:spark-sql-kafka-0-10_2.13:<spark version>)")


def read_sources(spark: SparkSession, plan: StreamPlan, starting: str | None, max_offsets: int | None) -> DataFrame:
    """One stream per source endpoint, each tagged with its endpoint id, unioned."""
    from pyspark.sql import functions as F

    streams = []
    for source in plan.sources:
        reader = (spark.readStream.format(JVM_FORMAT).options(**jvm_options(source.connection))
                  .option("subscribe", ",".join(source.topics))
                  .option("startingOffsets", starting or source.starting_offsets)
                  .option("includeHeaders", "true"))
        if max_offsets:
            reader = reader.option("maxOffsetsPerTrigger", str(max_offsets))
        stream = reader.load().select("key", "value", "topic", "partition", "offset", "timestamp", "headers")
        streams.append(stream.withColumn("endpoint", F.lit(source.endpoint_id)))
    union = streams[0]
    for stream in streams[1:]:
        union = union.unionByName(stream)
    return union


@dataclass
class Totals:
    """Counts over the query's life, for the progress lines and the closing summary."""

    batches: int = 0
    records: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    actions: Counter[str] = field(default_factory=Counter)
    destinations: Counter[str] = field(default_factory=Counter)
    # seconds spent per phase of the micro-batches (BatchWriter's phases, or the single pass's addBatch)
    phases: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    started: float = field(default_factory=time.monotonic)

    def add(self, counts: list[tuple[str, str, str | None, int]]) -> Counter[str]:
        """One micro-batch's (verdict, action, destination, count) groups; returns its verdict counts."""
        verdicts: Counter[str] = Counter()
        self.batches += 1
        for verdict, action, destination, count in counts:
            self.records += count
            verdicts[verdict] += count
            self.actions[action] += count
            if destination is not None:
                self.destinations[destination] += count
        self.verdicts.update(verdicts)
        return verdicts

    def render(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = f"{self.records / elapsed:.0f}/s over {elapsed:.1f} s"
        lines = [f"batches: {self.batches}", f"records: {self.records} ({rate})"]
        lines += [f"  {name}: {count}" for name, count in sorted(self.verdicts.items())]
        lines += ["actions:"] + [f"  {name}: {count}" for name, count in sorted(self.actions.items())]
        if self.destinations:
            lines += ["destinations:"] + [f"  {name}: {count}" for name, count in sorted(self.destinations.items())]
        if self.phases:
            lines += ["seconds in micro-batches:"] + [f"  {name}: {seconds:.1f}" for name, seconds in
                                                      self.phases.items()]
        return "\n".join(lines)


class BatchWriter:
    """Writes and counts the query's micro-batches.

    `single_pass` names the one cluster the query can produce to directly (no audit, every destination on it);
    then the executors count into `counts`, read per micro-batch as its progress is reported (`follow`).
    Otherwise this object is the foreachBatch function (runs on the driver): counts, Kafka destinations per
    cluster, then the Parquet audit."""

    def __init__(self, plan: StreamPlan, parquet: str | None, out: TextIO = sys.stderr) -> None:
        self.plan = plan
        self.parquet = parquet
        self.out = out
        self.totals = Totals()
        # destinations by cluster (the first one's connection writes for all: client ids differ per endpoint)
        self._clusters: dict[Connection, list[str]] = {}
        first: dict[Connection, Connection] = {}
        for endpoint_id, destination in plan.table.destinations:
            connection = first.setdefault(replace(destination.connection, client_id=""), destination.connection)
            self._clusters.setdefault(connection, []).append(endpoint_id)
        self.single_pass: Connection | None = next(iter(self._clusters)) if parquet is None and \
            len(self._clusters) == 1 else None
        self._folded: set[int] = set()
        self.counts: Any = None  # the single pass's accumulator (routing.BatchCounts), made by start_query

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        started = clock = time.monotonic()
        phases = self.totals.phases

        def lap(phase: str) -> None:
            nonlocal clock
            now = time.monotonic()
            phases[phase] += now - clock
            clock = now

        batch.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            counts = batch.groupBy("verdict", "action", "destination").count().collect()
            lap("read and judge")
            routed = {row["destination"] for row in counts if row["destination"] is not None}
            # one write per cluster: the `topic` column says where each record goes
            for connection, endpoint_ids in self._clusters.items():
                wanted = [endpoint_id for endpoint_id in endpoint_ids if endpoint_id in routed]
                if wanted:
                    _kafka_columns(batch.where(F.col("destination").isin(wanted))).write.format(JVM_FORMAT) \
                        .options(**jvm_options(connection)).mode("append").save()
            lap("produce to Kafka")
            if self.parquet is not None:
                (batch.select(*AUDIT_COLUMNS).write.mode("overwrite")
                 .parquet(str(Path(self.parquet) / f"batch={batch_id}")))
                lap("write Parquet")
        finally:
            batch.unpersist()
        self._count(batch_id, [(row["verdict"], row["action"], row["destination"], row["count"]) for row in counts],
                    time.monotonic() - started)

    def follow(self, query: StreamingQuery, timeout: float | None = None) -> bool:
        """Wait for the query to end (or `timeout` seconds), counting each micro-batch as its progress is
        reported; True when it ended. A failed query ends too: its exception is `query.exception()`."""
        from pyspark.errors import StreamingQueryException

        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            # whole seconds (pyspark's signature), at most one between counts
            wait = 1 if deadline is None else math.ceil(max(0.0, min(1.0, deadline - time.monotonic())))
            try:
                ended = query.awaitTermination(wait)
            except StreamingQueryException:
                ended = True
            self._fold(query.recentProgress)
            if ended or (deadline is not None and time.monotonic() >= deadline):
                return bool(ended)

    def _fold(self, progress: list[Any]) -> None:
        """Count each single-pass micro-batch once it has ended (its progress reported): its rows as the
        executors' tasks added them to the accumulator, taken out of it here."""
        if self.single_pass is None or self.counts is None:
            return  # foreachBatch counted its batches itself
        for report in progress:
            # a trigger that found no new data reports the next batch's id without running it (no addBatch)
            if report.batchId in self._folded or "addBatch" not in report.durationMs:
                continue
            self._folded.add(report.batchId)
            tallied = self.counts.value  # the driver's dict: its entries for this batch are taken out
            mine = [group for group in list(tallied) if group[0] == str(report.batchId)]
            counts = [(*group[1:], tallied.pop(group)) for group in mine]
            seconds = report.durationMs["addBatch"] / 1000
            self.totals.phases["read, judge and produce"] += seconds
            if counts or report.numInputRows:
                self._count(report.batchId, counts, seconds)

    def _count(self, batch_id: int, counts: list[tuple[str, str, str | None, int]], seconds: float) -> None:
        verdicts = self.totals.add(counts)
        size = sum(verdicts.values())
        if size:
            parts = ", ".join(f"{name} {count}" for name, count in sorted(verdicts.items()))
            print(f"xgate spark: batch {batch_id}: {size} records in {seconds:.2f} s ({parts})", file=self.out,
                  flush=True)


def _kafka_columns(routed: DataFrame) -> DataFrame:
    """The columns Spark's Kafka sink writes: each record's destination topic, partition, key, value, headers."""
    from pyspark.sql import functions as F

    return routed.select(F.col("out_topic").alias("topic"), F.col("out_key").alias("key"),
                         F.col("out_value").alias("value"), F.col("out_headers").alias("headers"),
                         F.col("out_partition").alias("partition"))


def start_query(spark: SparkSession, plan: StreamPlan, writer: BatchWriter, *, checkpoint: str, starting: str | None,
                max_offsets: int | None, trigger_seconds: float, available_now: bool) -> StreamingQuery:
    """Start the query (one pass, or foreachBatch: see the module docstring); `writer.follow(query)` waits and
    counts."""
    sources = read_sources(spark, plan, starting, max_offsets)
    if writer.single_pass is not None:
        # BatchCounts follows pyspark's AccumulatorParam protocol without importing pyspark on executors' import path
        writer.counts = spark.sparkContext.accumulator({}, cast("AccumulatorParam[Any]", BatchCounts()))
        produced = route_frame(sources, plan.bundle, plan.table, produced=True, counts=writer.counts)
        query = produced.writeStream.queryName("xgate").format(JVM_FORMAT).options(
            **jvm_options(writer.single_pass))
    else:
        routed = route_frame(sources, plan.bundle, plan.table)
        query = routed.writeStream.queryName("xgate").foreachBatch(writer)
    query = query.option("checkpointLocation", checkpoint)
    if available_now:
        query = query.trigger(availableNow=True)
    else:
        query = query.trigger(processingTime=f"{trigger_seconds} seconds")
    return query.start()
