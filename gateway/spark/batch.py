"""`xgate spark --batch`: judge recorded messages at rest (JSON lines or Parquet) on Spark executors."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from gateway.check import Summary
from gateway.compiler.core import native_available
from gateway.spark.shipping import REQUIRE_CORE, RegistryBundle
from gateway.spark.validate import validate_frame
from gateway.verdict import Outcome, Rule, Verdict, Violation

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

DEFAULT_MASTER = "local[*]"


def under_spark_submit() -> bool:
    """Started by spark-submit: the JVM exists already and its --master and --conf rule."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def build_session(master: str | None = None, app_name: str = "xgate", kafka: bool = False) -> SparkSession:
    """A quiet SparkSession: no UI, a deep driver stack (-Xss16m), executors on this Python.

    `master` None means spark-submit's master when run by spark-submit, else `DEFAULT_MASTER`.
    When this Python judges with the native core, executors must too (`XGATE_REQUIRE_CORE`, shipping.py): a
    cluster's executor without it fails its task with a message naming its Python rather than judging slowly.
    `kafka`: with Spark's own Kafka connector on the classpath (gateway/spark/connector.py resolves it).
    Without it the connector is still added when an earlier run resolved it: the driver's classpath is fixed
    when its JVM starts, and a later session in the same process (a test run) may want Kafka.
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name).config("spark.sql.execution.arrow.pyspark.enabled", "true")
    if master is None and under_spark_submit():
        return builder.getOrCreate()  # the cluster's settings, UI and logging as spark-submit configured them
    master = master or DEFAULT_MASTER
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master.startswith(("local", "spark://127.0.0.1:", "spark://localhost:")):  # this machine only: bind loopback
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from gateway.spark.connector import kafka_connector_jars

    jars = kafka_connector_jars(resolve=kafka)
    if jars:
        builder = builder.config("spark.jars", ",".join(str(jar) for jar in jars))
    if native_available():
        builder = builder.config(f"spark.executorEnv.{REQUIRE_CORE}", "1")
    spark = (builder.master(master)
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.log.level", "ERROR")
             .config("spark.driver.extraJavaOptions", "-Xss16m")
             .config("spark.executor.extraJavaOptions", "-Xss16m")
             .config("spark.sql.shuffle.partitions", "4")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def is_parquet(path: str) -> bool:
    candidate = Path(path)
    if candidate.is_dir():
        return any(p.suffix == ".parquet" for p in candidate.rglob("*.parquet"))
    return candidate.suffix == ".parquet"


def read_lines(spark: SparkSession, source: TextIO) -> DataFrame:
    """Non-blank lines as (index, record), kept byte-for-byte as `xgate check` reads them (line ends included)."""
    import pyarrow as pa  # type: ignore[import-untyped]

    records = [line for line in source if line.strip()]
    table = pa.table({"index": pa.array(range(len(records)), type=pa.int64()),
                      "record": pa.array(records, type=pa.string())})
    return spark.createDataFrame(table)


def read_parquet(spark: SparkSession, path: str) -> DataFrame:
    """A Parquet dataset with a string column `record`; an `index` column is added when it has none."""
    from pyspark.sql import functions as F

    df = spark.read.parquet(path)
    if "record" not in df.columns:
        raise ValueError(f"{path}: a Parquet input needs a string column 'record' (has: {', '.join(df.columns)})")
    if "index" not in df.columns:
        df = df.withColumn("index", F.monotonically_increasing_id())
    return df.select("index", "record")


def judged_rows(df: DataFrame, bundle: RegistryBundle, endpoint: str | None) -> Iterator[Any]:
    """Result rows in input order (by `index`), streamed to the driver a partition at a time."""
    result = validate_frame(df, bundle, endpoint).select("index", "verdict", "messagegroupid", "messageid",
                                                         "violations", "events")
    return result.orderBy("index").toLocalIterator()


def verdict_of(row: Any) -> Verdict:
    """Rebuild the Verdict a row holds, enough for `Summary.add` (and equal to `xgate check`'s as_dict)."""
    violations = tuple(Violation(v["path"], Rule(v["rule"]), v["expected"], v["actual"], v["message"])
                       for v in json.loads(row["violations"]))
    events = None
    if row["events"] is not None:
        events = tuple(_verdict_from_dict(e) for e in json.loads(row["events"]))
    return Verdict(Outcome(row["verdict"]), row["messagegroupid"], row["messageid"], violations, events)


def _verdict_from_dict(data: dict[str, Any]) -> Verdict:
    violations = tuple(Violation(v["path"], Rule(v["rule"]), v["expected"], v["actual"], v["message"])
                       for v in data["violations"])
    events = tuple(_verdict_from_dict(e) for e in data["events"]) if data.get("events") is not None else None
    return Verdict(Outcome(data["verdict"]), data["messagegroupid"], data["messageid"], violations, events)


def write_results(rows: Iterator[Any], fmt: str, out: TextIO) -> Summary:
    """Write `xgate check` output (one JSON verdict a line, or the table) and return the counts."""
    from gateway.spark.validate import verdict_line

    summary = Summary()
    for row in rows:
        summary.add(verdict_of(row))
        if fmt == "json":
            out.write(verdict_line(row) + "\n")
    if fmt == "table":
        out.write(summary.render() + "\n")
    return summary
