"""Judge and route Kafka records on the executors: the hot path's judging, decide and remap, in mapInArrow.

Each Arrow batch's records go to the native core in one call per endpoint (gateway/compiler/core.py), as
`xgate run` hands them over; a conformant record's output is built from its columns (no Envelope), the
others take the general remap with their `xgate-*` headers.

Input: the Kafka source's columns plus `endpoint` (the route's source endpoint id).
Output: the input columns, the verdict columns of `gateway.spark.validate`, and
where the record goes: `action`, `destination` (endpoint id or null), and the record
to produce there (`out_topic`, `out_partition`, `out_key`, `out_value`, `out_headers`),
built exactly as `xgate run` builds it (dead letters carry the `xgate-*` headers).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from gateway.compiler.core import NativeJudge
from gateway.runtime.remap import dead_letter_headers, outgoing
from gateway.runtime.router import Action, decide
from gateway.runtime.routes import Route
from gateway.spark.headers import header_pairs, headers_array
from gateway.spark.shipping import RegistryBundle, native_judge_for
from gateway.spark.validate import RESULT_COLUMNS, verdict_columns
from protocol_adapters.kafka.mapping import forwarded, kafka_envelope, outgoing_record
from protocol_adapters.kafka.options import Connection, sink_options

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import DataFrame

ROUTE_COLUMNS = ("action", "destination", "out_topic", "out_partition", "out_key", "out_value", "out_headers")


@dataclass(frozen=True, slots=True)
class KafkaDestination:
    """Where one destination endpoint's records are produced (its endpoint options, read on the driver)."""

    endpoint_id: str
    connection: Connection
    topic: str
    partition: int | None
    default_key: bytes | None
    default_headers: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class RoutingTable:
    """What travels to executors besides the registry bundle: routes by source endpoint, destinations by id."""

    routes: tuple[tuple[str, Route], ...]
    destinations: tuple[tuple[str, KafkaDestination], ...]


def routing_table(routes: list[Route]) -> RoutingTable:
    """Routes whose destinations are all Kafka endpoints (the caller refuses the others beforehand)."""
    destinations: dict[str, KafkaDestination] = {}
    for route in routes:
        for target in (route.conformant, route.nonconformant, route.unmatched):
            if target is not None and target.endpoint_id not in destinations:
                options = sink_options(target)
                destinations[target.endpoint_id] = KafkaDestination(
                    target.endpoint_id, options.connection, options.topic, options.partition, options.default_key,
                    options.default_headers)
    return RoutingTable(tuple((r.source.endpoint_id, r) for r in routes), tuple(destinations.items()))


def _millis(column: pa.Array) -> list[int | None]:
    """A timestamp column as milliseconds since the epoch, None before it (as a Kafka Envelope holds a
    timestamp): read as its integer count of the column's unit, no datetime made per row."""
    import pyarrow as pa

    per_milli = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}[column.type.unit]
    counts = column.cast(pa.int64()).to_pylist()
    if per_milli is None:
        return [None if v is None or v < 0 else v * 1000 for v in counts]
    return [None if v is None or v < 0 else v // per_milli for v in counts]


def route_batches(bundle: RegistryBundle, table: RoutingTable,
                  batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The mapInArrow function: Kafka rows in, rows with verdict and routing columns out."""
    import pyarrow as pa

    judge = native_judge_for(bundle)
    routes = dict(table.routes)
    destinations = dict(table.destinations)
    for batch in batches:
        data = {name: batch.column(name).to_pylist() for name in
                ("key", "value", "topic", "partition", "offset", "endpoint")}
        rows = list(zip(data["key"], data["value"], data["topic"], data["partition"], data["offset"],
                        _millis(batch.column("timestamp")), header_pairs(batch.column("headers")),
                        data["endpoint"], strict=True))
        outcomes = _judged(judge, rows)
        results: list[tuple[Any, ...]] = []
        conformant_columns: dict[int, tuple[Any, ...]] = {}  # one verdict's columns per definition
        for (key, value, topic, partition, offset, timestamp, headers, endpoint), outcome in zip(rows, outcomes):
            envelope = None
            if outcome.__class__ is int:
                verdict = judge.conformant[outcome]
                judged = conformant_columns.get(outcome)
                if judged is None:
                    judged = conformant_columns[outcome] = verdict_columns(verdict)
            else:
                envelope = kafka_envelope(topic, partition, offset, key, value, headers or (), timestamp, endpoint)
                verdict = judge.verdict(outcome, envelope)  # type: ignore[assignment]  # given an envelope: a Verdict
                judged = verdict_columns(verdict)
            decision = decide(routes[endpoint], verdict)
            target = decision.destination
            if target is None:
                results.append((*judged, decision.action.value, None, None, None, None, None, None))
                continue
            destination = destinations[target.endpoint_id]
            if envelope is None:  # conformant, Kafka to Kafka: the record as it came
                record = forwarded(key, value, headers or (), timestamp, destination.default_key,
                                   destination.default_headers)
            else:
                extra = dead_letter_headers(envelope, verdict, endpoint) if decision.action is Action.DEAD_LETTER \
                    else None
                record = outgoing_record(outgoing(envelope, "KAFKA", extra), destination.default_key,
                                         destination.default_headers)
            results.append((*judged, decision.action.value, target.endpoint_id, destination.topic,
                            destination.partition, record.key, record.value, record.headers))
        columns = list(batch.columns)
        names = list(batch.schema.names)
        types = [pa.string()] * (len(RESULT_COLUMNS) + 3) + [pa.int32(), pa.binary(), pa.binary()]
        values = list(zip(*results)) if results else [()] * (len(types) + 1)  # the results column by column
        for name, kind, column in zip((*RESULT_COLUMNS, *ROUTE_COLUMNS[:-1]), types, values, strict=False):
            columns.append(pa.array(column, type=kind))
            names.append(name)
        columns.append(headers_array(values[-1]))
        names.append(ROUTE_COLUMNS[-1])
        yield pa.RecordBatch.from_arrays(columns, names=names)


def _judged(judge: NativeJudge, rows: list[tuple[Any, ...]]) -> list[Any]:
    """Each row's raw result from the core (lib.rs: a definition's number, or a failure to make a Verdict of),
    the rows of each endpoint in one call; None for a row the Python judge decides."""
    positions = {endpoint: judge.endpoint_position(endpoint) for endpoint in {row[7] for row in rows}}
    return judge.results([positions[row[7]] for row in rows],
                         [(topic, partition, key, headers or [], value, timestamp)
                          for key, value, topic, partition, _, timestamp, headers, _ in rows])


def route_frame(df: DataFrame, bundle: RegistryBundle, table: RoutingTable) -> DataFrame:
    """Kafka rows with an `endpoint` column -> the same rows judged and routed (see the module docstring)."""
    from pyspark.sql.types import BinaryType, IntegerType, StringType, StructField, StructType

    header_type = df.schema["headers"].dataType
    fields = list(df.schema.fields)
    fields += [StructField(name, StringType(), True) for name in (*RESULT_COLUMNS, "action", "destination",
                                                                   "out_topic")]
    fields += [StructField("out_partition", IntegerType(), True), StructField("out_key", BinaryType(), True),
               StructField("out_value", BinaryType(), True), StructField("out_headers", header_type, True)]
    return df.mapInArrow(partial(route_batches, bundle, table), StructType(fields))
