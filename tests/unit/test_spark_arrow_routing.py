"""The Spark runner's column-wise routing (gateway/spark/routing.py `BatchRouter` over `Core.judge_arrow`)
gives every output column exactly as routing row by row with the Python judge does, on Arrow batches shaped
as Spark's Kafka source gives them, with the awkward ones too: nulls, slices, other column types, a destination
that adds a default key and headers. Offline: no Spark session, no broker."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

pa = pytest.importorskip("pyarrow")

from gateway.compiler.core import native_available
from gateway.settings import load_settings
from gateway.spark import bundle_from_paths
from gateway.spark.headers import headers_array
from gateway.spark.routing import SINK_COLUMNS, BatchCounts, BatchRouter, route_batches
from gateway.spark.shipping import native_judge_for
from gateway.spark.streaming import plan_stream
from gateway.testing.traffic import generate
from protocol_adapters.kafka.mapping import outgoing_record

pytestmark = pytest.mark.skipif(not native_available(), reason="the native core is not built (make install)")

DEMO = Path(__file__).resolve().parents[2] / "config" / "demo"
TOPIC = "xgate-demo-telemetry"
URI = "tcp://127.0.0.1:9092"


def plan_for(tmp_path: Path, destination_options: dict[str, Any]) -> Any:
    for item in DEMO.iterdir():
        if item.is_file() and item.name != "gateway.yaml":
            shutil.copy(item, tmp_path / item.name)
    gateway = {"routes": [{"source": "telemetry.in", "conformant": "telemetry.valid", "nonconformant": "telemetry.dlq"}],
               "endpoints": {"telemetry.in": {"uris": [URI], "options": {"topic": TOPIC}},
                             "telemetry.valid": {"uris": [URI], "options": {"topic": "valid", **destination_options}},
                             "telemetry.dlq": {"uris": [URI], "options": {"topic": "dlq"}}}}
    (tmp_path / "gateway.yaml").write_text(yaml.safe_dump(gateway), "utf-8")
    snapshot, bundle = bundle_from_paths([tmp_path])
    settings, problems = load_settings(tmp_path)
    assert not problems
    return plan_stream(snapshot, settings, bundle)


def kafka_batch(count: int, unit: str = "us", large: bool = False) -> Any:
    """Demo traffic as Spark's Kafka source hands it to mapInArrow, with nulls sprinkled in."""
    records = [outgoing_record(r) for r in _envelopes(count)]
    keys: list[bytes | None] = [r.key for r in records]
    values: list[bytes | None] = [r.value for r in records]
    headers: list[Any] = [list(r.headers) for r in records]
    keys[1] = None
    values[2] = None  # a tombstone
    headers[3] = None
    headers[4] = [*(headers[4] or []), ("trace", None)]  # a header without a value
    per_second = {"s": 1, "ms": 1000, "us": 1_000_000}[unit]
    stamps = [1_700_000_000 * per_second + i * per_second // 1000 for i in range(count)]
    stamps[5] = -per_second  # before the epoch: no timestamp
    binary = pa.large_binary() if large else pa.binary()
    return pa.RecordBatch.from_arrays(
        [pa.array(keys, binary), pa.array(values, binary), pa.array([TOPIC] * count),
         pa.array([i % 4 for i in range(count)], pa.int32()), pa.array(range(count), pa.int64()),
         pa.array(stamps, pa.timestamp(unit, tz="UTC")), headers_array(headers),
         pa.array(["telemetry.in"] * count)],
        names=["key", "value", "topic", "partition", "offset", "timestamp", "headers", "endpoint"])


def _envelopes(count: int) -> list[Any]:
    from gateway.recorded import envelope_from_record

    records = [r for r in generate(count * 3, seed=31) if r.get("protocol") == "KAFKA"][:count]
    assert len(records) == count
    return [envelope_from_record(r) for r in records]


def routed_both_ways(plan: Any, batch: Any) -> tuple[Any, Any]:
    judge = native_judge_for(plan.bundle)
    by_columns = BatchRouter(judge, plan.table).route(batch)
    judge.available = False  # the same router without the core: row by row, the Python judge
    try:
        by_rows = BatchRouter(judge, plan.table).route(batch)
    finally:
        judge.available = True
    return by_columns, by_rows


def assert_same(by_columns: Any, by_rows: Any) -> None:
    assert by_columns.schema == by_rows.schema
    for name in by_rows.schema.names:
        assert by_columns.column(name).to_pylist() == by_rows.column(name).to_pylist(), name


@pytest.mark.parametrize(("unit", "large"), [("us", False), ("ms", True), ("s", False)])
def test_column_wise_routing_equals_row_by_row(tmp_path: Path, unit: str, large: bool) -> None:
    plan = plan_for(tmp_path, {})
    by_columns, by_rows = routed_both_ways(plan, kafka_batch(600, unit, large))
    assert_same(by_columns, by_rows)
    actions = set(by_rows.column("action").to_pylist())
    assert actions == {"forwarded", "deadlettered"}  # both kinds of rows were there to compare
    # null stays null (issue 35): row 2 is a tombstone, row 4 has a header without a value
    assert by_columns.column("out_value")[2].as_py() is None
    assert {"key": "trace", "value": None} in by_columns.column("out_headers")[4].as_py()


def test_sliced_batch_and_a_destination_that_adds_key_and_headers(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, {"key": "fixed", "headers": {"x-origin": "xgate"}})
    batch = kafka_batch(400).slice(3, 300)  # an array offset into every buffer
    by_columns, by_rows = routed_both_ways(plan, batch)
    assert_same(by_columns, by_rows)
    forwarded = [i for i, a in enumerate(by_rows.column("action").to_pylist()) if a == "forwarded"]
    headers = by_rows.column("out_headers").to_pylist()
    assert forwarded and all({"key": "x-origin", "value": b"xgate"} in headers[i] for i in forwarded)


def test_produced_rows_and_counts_per_micro_batch(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, {})
    batch = kafka_batch(300)
    full = BatchRouter(native_judge_for(plan.bundle), plan.table).route(batch)

    class Counts:  # what an accumulator's `add` receives on an executor
        def __init__(self) -> None:
            self.value: dict[tuple[Any, ...], int] = {}

        def add(self, more: dict[tuple[Any, ...], int]) -> None:
            BatchCounts().addInPlace(self.value, more)

    counts = Counts()
    produced = list(route_batches(plan.bundle, plan.table, True, counts, iter([batch.slice(0, 100), batch.slice(100)])))
    assert produced[0].schema.names == list(SINK_COLUMNS)
    rows = pa.Table.from_batches(produced).to_pylist()
    going = [r for r in full.to_pylist() if r["destination"] is not None]
    assert rows == [{"topic": r["out_topic"], "partition": r["out_partition"], "key": r["out_key"],
                     "value": r["out_value"], "headers": r["out_headers"]} for r in going]
    expected: dict[tuple[Any, ...], int] = {}
    for r in full.to_pylist():
        group = (None, r["verdict"], r["action"], r["destination"])  # no micro-batch outside Spark: None
        expected[group] = expected.get(group, 0) + 1
    assert counts.value == expected
