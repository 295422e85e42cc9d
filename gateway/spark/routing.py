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

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from gateway.compiler.core import NativeJudge
from gateway.routes.resolve import Route
from gateway.runtime.remap import dead_letter_headers, outgoing
from gateway.runtime.router import Action, Kind, decide, decide_kind
from gateway.spark.headers import header_pairs, headers_array
from gateway.spark.shipping import RegistryBundle, native_judge_for
from gateway.spark.validate import RESULT_COLUMNS, verdict_columns
from protocol_adapters.kafka.mapping import forwarded, kafka_envelope, outgoing_record
from protocol_adapters.kafka.options import Connection, sink_options

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import DataFrame

# a micro-batch's counts are kept by these (the single pass's progress lines and summary)
GROUP_COLUMNS = ("verdict", "action", "destination")
# the local property Spark's micro-batch execution sets on its jobs' tasks
BATCH_ID = "streaming.sql.batchId"
ROUTE_COLUMNS = ("action", "destination", "out_topic", "out_partition", "out_key", "out_value", "out_headers")
# the record to produce as Spark's Kafka sink reads it: ROUTE_COLUMNS' last five, renamed
SINK_COLUMNS = ("topic", "partition", "key", "value", "headers")


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


def _millis(column: pa.Array) -> pa.Array:
    """A timestamp column as int64 milliseconds since the epoch, null before it (as a Kafka Envelope holds a
    timestamp): its integer count of the column's unit, scaled, no datetime made per row."""
    import pyarrow as pa
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    counts = column.cast(pa.int64())
    per_milli = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}[column.type.unit]
    scaled = pc.multiply(counts, 1000) if per_milli is None else pc.divide(counts, per_milli)
    return pc.if_else(pc.less(counts, 0), pa.scalar(None, pa.int64()), scaled)


def route_batches(bundle: RegistryBundle, table: RoutingTable, produced: bool, counts: Any,
                  batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The mapInArrow function: Kafka rows in, rows with verdict and routing columns out; with `produced`, only
    the records that go somewhere, in `SINK_COLUMNS`. With `counts` (an accumulator of `BatchCounts`), the
    task adds its rows per micro-batch and group once, when its input ends."""
    import pyarrow as pa

    router = BatchRouter(native_judge_for(bundle), table, explain=not produced)
    tally: Counter[tuple[Any, ...]] = Counter()
    for batch in batches:
        routed = router.route(batch)
        if counts is not None and routed.num_rows:
            groups = pa.Table.from_batches([routed.select(list(GROUP_COLUMNS))]).group_by(
                list(GROUP_COLUMNS), use_threads=False).aggregate([([], "count_all")])
            for verdict, action, destination, count in zip(*(groups.column(n).to_pylist() for n in
                                                              (*GROUP_COLUMNS, "count_all")), strict=True):
                tally[(verdict, action, destination)] += count
        if produced:
            routed = routed.filter(routed.column("destination").is_valid()).select(list(ROUTE_COLUMNS[2:]))
            routed = routed.rename_columns(list(SINK_COLUMNS))
        yield routed
    if counts is not None and tally:
        from pyspark import TaskContext

        context = TaskContext.get()
        batch_id = context.getLocalProperty(BATCH_ID) if context is not None else None
        counts.add({(batch_id, *group): count for group, count in tally.items()})


class BatchCounts:
    """An accumulator's parameter (pyspark's AccumulatorParam protocol): rows by (micro-batch id, verdict,
    action, destination), summed in place on the driver."""

    def zero(self, value: dict[tuple[Any, ...], int]) -> dict[tuple[Any, ...], int]:
        return {}

    def addInPlace(self, total: dict[tuple[Any, ...], int],  # pyspark names it so
                   more: dict[tuple[Any, ...], int]) -> dict[tuple[Any, ...], int]:
        for group, count in more.items():
            total[group] = total.get(group, 0) + count
        return total


Entry = tuple[Any, ...]  # one row's output columns: RESULT_COLUMNS, then ROUTE_COLUMNS (headers as pairs)


class BatchRouter:
    """Judges and routes Arrow batches of Kafka rows on one executor.

    With the native core, a batch's columns go to it as buffers (`Core.judge_arrow`, no Python object per row),
    and a conformant row forwarded as it came keeps its own key, value and headers: its output columns are
    taken from one shared entry per (route, definition) and from the input columns, column-wise. Only the
    other rows (nonconformant, unmatched, left to the Python judge, or sent to a destination that adds a
    default key or headers) are read into Python and routed one by one, as `xgate run` routes them."""

    def __init__(self, judge: NativeJudge, table: RoutingTable, explain: bool = True) -> None:
        self.judge = judge
        # False: only the records to produce leave (route_batches' `produced`): a dead letter's verdict columns
        # are not made (its reasons travel in its `xgate-*` headers), only the outcome the counts need
        self.explain = explain
        self.routes = dict(table.routes)
        self.destinations = dict(table.destinations)
        self.names = list(self.routes)  # a route's number: its source endpoint's place here
        self.positions = [judge.endpoint_position(name) for name in self.names]
        self.definitions = max(len(judge.ids), 1)
        # routes whose conformant records change on the way (a default key or headers): routed row by row
        self.rewriting = [number for number, name in enumerate(self.names)
                          if self._rewrites(decide_kind(self.routes[name], Kind.CONFORMANT).destination)]
        self._conformant: dict[int, Entry] = {}  # route number * definitions + definition -> its rows' entry
        self._columns: dict[int, tuple[Any, ...]] = {}  # definition -> its conformant verdict's columns

    def _rewrites(self, target: Any) -> bool:
        if target is None:
            return False
        destination = self.destinations[target.endpoint_id]
        return destination.default_key is not None or bool(destination.default_headers)

    def route(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        import pyarrow as pa
        import pyarrow.compute as pc

        rows = batch.num_rows
        if not self.judge.available or rows == 0:
            return _assemble(batch, self._route_rows(batch, [None] * rows))
        number = pc.fill_null(pc.index_in(batch.column("endpoint"), value_set=pa.array(self.names)), 0)
        positions = pa.array([-1 if p is None else p for p in self.positions], pa.int32()).take(number)
        found, others = self.judge.core.judge_arrow(rows, _values(positions, 4), *_record_buffers(batch))
        definition = pa.Array.from_buffers(pa.int32(), rows, [None, pa.py_buffer(found)])
        key = pc.add(pc.multiply(number.cast(pa.int64()), self.definitions), definition.cast(pa.int64()))
        conformant = pc.greater_equal(definition, 0)
        outcomes = dict(others)
        if self.rewriting:  # their conformant rows are routed row by row too
            rewritten = pc.and_(conformant, pc.is_in(number, value_set=pa.array(self.rewriting, pa.int32())))
            conformant = pc.and_not(conformant, rewritten)
            for row, found_definition in zip(pc.indices_nonzero(rewritten).to_pylist(),
                                             pc.filter(definition, rewritten).to_pylist()):
                outcomes[row] = found_definition
        keys = pc.unique(pc.filter(key, conformant))
        entries = [self._conformant_entry(k) for k in keys.to_pylist()]
        singles = sorted(outcomes)
        entries += self._route_rows(batch.take(pa.array(singles, pa.int64())), [outcomes[row] for row in singles])
        codes = pc.index_in(key, value_set=keys)
        if singles:
            chosen = [False] * rows
            for row in singles:
                chosen[row] = True
            codes = pc.replace_with_mask(codes, pa.array(chosen),
                                         pa.array(range(len(keys), len(entries)), pa.int32()))
        return _assemble(batch, entries, codes, conformant)

    def _conformant_entry(self, key: int) -> Entry:
        """The output of every row of one route that conforms to one definition: forwarded as it came (its
        key, value and headers filled in from the input) or dropped."""
        entry = self._conformant.get(key)
        if entry is None:
            number, definition = divmod(key, self.definitions)
            verdict = self.judge.conformant[definition]
            judged = self._columns.get(definition)
            if judged is None:
                judged = self._columns[definition] = verdict_columns(verdict)
            decision = decide(self.routes[self.names[number]], verdict)
            target = decision.destination
            if target is None:
                entry = (*judged, decision.action.value, None, None, None, None, None, None)
            else:
                destination = self.destinations[target.endpoint_id]
                entry = (*judged, decision.action.value, target.endpoint_id, destination.topic,
                         destination.partition, None, None, None)
            self._conformant[key] = entry
        return entry

    def _route_rows(self, batch: pa.RecordBatch, outcomes: list[Any]) -> list[Entry]:
        """Entries for rows one by one, each with its raw result from the core (an int: conformant; None: the
        Python judge decides)."""
        data = {name: batch.column(name).to_pylist() for name in
                ("key", "value", "topic", "partition", "offset", "endpoint")}
        rows = zip(data["key"], data["value"], data["topic"], data["partition"], data["offset"],
                   _millis(batch.column("timestamp")).to_pylist(), header_pairs(batch.column("headers")),
                   data["endpoint"], strict=True)
        judge = self.judge
        entries: list[Entry] = []
        for (key, value, topic, partition, offset, timestamp, headers, endpoint), outcome in zip(rows, outcomes):
            envelope = None
            if outcome.__class__ is int:
                verdict = judge.conformant[outcome]
                judged = self._columns.get(outcome)
                if judged is None:
                    judged = self._columns[outcome] = verdict_columns(verdict)
            else:
                envelope = kafka_envelope(topic, partition, offset, key, value, headers or (), timestamp, endpoint)
                verdict = judge.verdict(outcome, envelope)  # type: ignore[assignment]  # given an envelope: a Verdict
                judged = verdict_columns(verdict) if self.explain else (verdict.outcome.value, None, None, "", None)
            decision = decide(self.routes[endpoint], verdict)
            target = decision.destination
            if target is None:
                entries.append((*judged, decision.action.value, None, None, None, None, None, None))
                continue
            destination = self.destinations[target.endpoint_id]
            if envelope is None:  # conformant, Kafka to Kafka: the record as it came
                record = forwarded(key, value, headers or (), timestamp, destination.default_key,
                                   destination.default_headers)
            else:
                extra = dead_letter_headers(envelope, verdict, endpoint) if decision.action is Action.DEAD_LETTER \
                    else None
                record = outgoing_record(outgoing(envelope, "KAFKA", extra), destination.default_key,
                                         destination.default_headers)
            entries.append((*judged, decision.action.value, target.endpoint_id, destination.topic,
                            destination.partition, record.key, record.value, record.headers))
        return entries


def _assemble(batch: pa.RecordBatch, entries: list[Entry], codes: pa.Array | None = None,
              forwarded_as_is: pa.Array | None = None) -> pa.RecordBatch:
    """The input columns and the output ones: row i's are entries[codes[i]] (entries[i] without codes), where
    `forwarded_as_is` rows take key, value and headers from the input."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = list(batch.columns)
    names = list(batch.schema.names)
    types = [pa.string()] * (len(RESULT_COLUMNS) + 3) + [pa.int32(), pa.binary(), pa.binary()]
    values = list(zip(*entries)) if entries else [()] * (len(types) + 1)  # the entries column by column
    made = [pa.array(column, type=kind) for kind, column in zip(types, values, strict=False)]
    made.append(headers_array(values[-1]))
    if codes is not None:
        made = [column.take(codes) for column in made]
    if forwarded_as_is is not None:
        inputs = {"out_key": batch.column("key"), "out_value": batch.column("value"),
                  "out_headers": _forwarded_headers(batch.column("headers"))}
        for index, name in enumerate(ROUTE_COLUMNS[4:], start=len(RESULT_COLUMNS) + 4):
            made[index] = pc.if_else(forwarded_as_is, inputs[name].cast(made[index].type), made[index])
    return pa.RecordBatch.from_arrays(columns + made, names=names + [*RESULT_COLUMNS, *ROUTE_COLUMNS])


def _forwarded_headers(column: pa.Array) -> pa.Array:
    """Headers as `forwarded` leaves them: as they came, null values included; a null list becomes an empty
    one (rare: rebuilt then)."""
    if column.null_count == 0:
        return column
    return headers_array([forwarded(None, None, pairs or (), None).headers for pairs in header_pairs(column)])


def _values(array: pa.Array, width: int) -> bytes:
    """A fixed-width array without nulls as its little-endian bytes, from its first element to its last."""
    return array.buffers()[1].to_pybytes()[array.offset * width:(array.offset + len(array)) * width]  # type: ignore[no-any-return]


def _record_buffers(batch: pa.RecordBatch) -> tuple[Any, ...]:
    """The buffers `Core.judge_arrow` reads after the endpoint positions (native/src/lib.rs), in its order."""
    import pyarrow as pa

    def variable(array: pa.Array, kind: Any) -> tuple[bytes | None, bytes, bytes, int]:
        if array.type != kind:
            array = array.cast(kind)  # large_binary, say: 32-bit offsets as the core reads them
        validity, offsets, data = array.buffers()[:3]
        return (validity.to_pybytes() if validity is not None and array.null_count else None, offsets.to_pybytes(),
                data.to_pybytes() if data is not None else b"", array.offset)

    def fixed(array: pa.Array, kind: Any) -> tuple[bytes | None, bytes, int]:
        if array.type != kind:
            array = array.cast(kind)
        validity, data = array.buffers()[:2]
        return (validity.to_pybytes() if validity is not None and array.null_count else None,
                data.to_pybytes() if data is not None else b"", array.offset)

    headers = batch.column("headers")
    entries = headers.values
    list_validity, list_offsets = headers.buffers()[:2]
    return (variable(batch.column("topic"), pa.string()), fixed(batch.column("partition"), pa.int32()),
            variable(batch.column("key"), pa.binary()), variable(batch.column("value"), pa.binary()),
            (list_validity.to_pybytes() if list_validity is not None and headers.null_count else None,
             list_offsets.to_pybytes(), headers.offset),
            variable(entries.field("key"), pa.string()), variable(entries.field("value"), pa.binary()),
            fixed(_millis(batch.column("timestamp")), pa.int64()))


def route_frame(df: DataFrame, bundle: RegistryBundle, table: RoutingTable, produced: bool = False,
                counts: Any = None) -> DataFrame:
    """Kafka rows with an `endpoint` column -> the same rows judged and routed (see the module docstring);
    `produced`: only the records to produce, as Spark's Kafka sink reads them (`SINK_COLUMNS`), no more to
    carry back to the JVM; with `counts`, an accumulator of `BatchCounts`, each micro-batch's rows are
    counted there."""
    from pyspark.sql.types import BinaryType, IntegerType, StringType, StructField, StructType

    header_type = df.schema["headers"].dataType
    fields = list(df.schema.fields)
    fields += [StructField(name, StringType(), True) for name in (*RESULT_COLUMNS, "action", "destination",
                                                                   "out_topic")]
    fields += [StructField("out_partition", IntegerType(), True), StructField("out_key", BinaryType(), True),
               StructField("out_value", BinaryType(), True), StructField("out_headers", header_type, True)]
    if produced:
        fields = [StructField(sink, field.dataType, True) for sink, field in
                  zip(SINK_COLUMNS, fields[-len(SINK_COLUMNS):], strict=True)]
    return df.mapInArrow(partial(route_batches, bundle, table, produced, counts), StructType(fields))
