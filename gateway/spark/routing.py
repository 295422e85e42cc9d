"""Judge and route Kafka records on the executors: the hot path's classify, decide and remap, in mapInArrow.

Input: the Kafka source's columns plus `endpoint` (the route's source endpoint id).
Output: the input columns, the verdict columns of `gateway.spark.validate`, and
where the record goes: `action`, `destination` (endpoint id or null), and the record
to produce there (`out_topic`, `out_partition`, `out_key`, `out_value`, `out_headers`),
built exactly as `xgate run` builds it (dead letters carry the `xgate-*` headers).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from gateway.runtime.remap import dead_letter_headers, outgoing
from gateway.runtime.router import Action, decide
from gateway.runtime.routes import Route
from gateway.spark.headers import header_pairs, headers_array
from gateway.spark.shipping import RegistryBundle, ruleset_for
from gateway.spark.validate import RESULT_COLUMNS, verdict_columns
from protocol_adapters.kafka.mapping import kafka_envelope, outgoing_record
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


def _millis(value: datetime | None) -> int | None:
    return None if value is None else int(value.timestamp() * 1000)


def route_batches(bundle: RegistryBundle, table: RoutingTable,
                  batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The mapInArrow function: Kafka rows in, rows with verdict and routing columns out."""
    import pyarrow as pa

    ruleset = ruleset_for(bundle)
    routes = dict(table.routes)
    destinations = dict(table.destinations)
    for batch in batches:
        data = {name: batch.column(name).to_pylist() for name in
                ("key", "value", "topic", "partition", "offset", "timestamp", "endpoint")}
        results: list[tuple[Any, ...]] = []
        for key, value, topic, partition, offset, timestamp, headers, endpoint in zip(
                data["key"], data["value"], data["topic"], data["partition"], data["offset"], data["timestamp"],
                header_pairs(batch.column("headers")), data["endpoint"], strict=True):
            envelope = kafka_envelope(topic, partition, offset, key, value, headers or (), _millis(timestamp),
                                      endpoint)
            verdict = ruleset.classify(envelope)
            decision = decide(routes[endpoint], verdict)
            judged = verdict_columns(verdict)
            target = decision.destination
            if target is None:
                results.append((*judged, decision.action.value, None, None, None, None, None, None))
                continue
            extra = dead_letter_headers(envelope, verdict, endpoint) if decision.action is Action.DEAD_LETTER else None
            destination = destinations[target.endpoint_id]
            record = outgoing_record(outgoing(envelope, "KAFKA", extra), destination.default_key,
                                     destination.default_headers)
            results.append((*judged, decision.action.value, target.endpoint_id, destination.topic,
                            destination.partition, record.key, record.value, record.headers))
        columns = list(batch.columns)
        names = list(batch.schema.names)
        types = [pa.string()] * (len(RESULT_COLUMNS) + 3) + [pa.int32(), pa.binary(), pa.binary()]
        for position, (name, kind) in enumerate(zip((*RESULT_COLUMNS, *ROUTE_COLUMNS[:-1]), types, strict=True)):
            columns.append(pa.array([r[position] for r in results], type=kind))
            names.append(name)
        columns.append(headers_array(r[-1] for r in results))
        names.append(ROUTE_COLUMNS[-1])
        yield pa.RecordBatch.from_arrays(columns, names=names)


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
