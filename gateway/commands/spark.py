"""`xgate spark`: the Spark runner's command line (pyspark is the `spark` extra, imported late).

Streaming (the default) runs the Kafka routes of a config directory; `--batch` judges data at rest.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from typing import Any, TextIO

from gateway.commands.startup import Loaded, unusable
from gateway.exit_code import ExitCode
from gateway.settings import Settings, load_settings
from gateway.spark.batch import DEFAULT_MASTER


def cmd_spark(args: argparse.Namespace) -> ExitCode:
    from gateway.compiler import compile_registry
    from gateway.spark.shipping import bundle_from_paths

    missing = [name for name in ("pyspark", "pyarrow") if importlib.util.find_spec(name) is None]
    if missing:
        print(f"xgate spark: {', '.join(missing)} missing: pip install 'xgate[spark]'", file=sys.stderr)
        return ExitCode.USAGE
    # not the shared start-up: executors compile the shipped document bytes alone, so the driver judges without
    # gateway.yaml's remote fetching, sources or limits too
    snapshot, bundle = bundle_from_paths(args.config)
    loaded = Loaded(snapshot, compile_registry(snapshot.registry, snapshot.digest), Settings())
    refused = unusable("spark", loaded, strict=args.strict, endpoint=args.endpoint)
    if refused is not None:
        return refused
    if args.batch:
        return _run_batch(args, bundle)
    if args.input != "-":
        print("xgate spark: an input file is for --batch; streaming reads the Kafka source endpoints",
              file=sys.stderr)
        return ExitCode.USAGE
    return _run_stream(args, snapshot, bundle)


def _run_stream(args: argparse.Namespace, snapshot: Any, bundle: Any) -> ExitCode:
    import tempfile

    from gateway.spark.batch import build_session
    from gateway.spark.connector import ConnectorError
    from gateway.spark.streaming import BatchWriter, PlanError, plan_stream, require_connector, start_query

    if len(args.config) != 1:
        print("xgate spark: streaming takes one --config directory (its gateway.yaml holds the routes)",
              file=sys.stderr)
        return ExitCode.USAGE
    settings, problems = load_settings(args.config[0])
    for problem in problems:
        print(problem, file=sys.stderr)
    try:
        if problems:
            raise PlanError("fix the settings above first")
        plan = plan_stream(snapshot, settings, bundle)
    except PlanError as exc:
        print(f"xgate spark: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    for note in plan.notes:
        print(f"xgate spark: {note}", file=sys.stderr)
    checkpoint = args.checkpoint
    if checkpoint is None:
        checkpoint = tempfile.mkdtemp(prefix="xgate-spark-checkpoint-")
        print(f"xgate spark: no --checkpoint: using {checkpoint}; a restart starts again from the source "
              "endpoints' autooffsetreset", file=sys.stderr)
    try:
        spark = build_session(args.master, kafka=True)
    except ConnectorError as exc:
        print(f"xgate spark: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    try:
        try:
            require_connector(spark)
        except PlanError as exc:
            print(f"xgate spark: {exc}", file=sys.stderr)
            return ExitCode.USAGE
        writer = BatchWriter(plan, args.parquet)
        query = start_query(spark, plan, writer, checkpoint=checkpoint, starting=args.starting_offsets,
                            max_offsets=args.max_offsets_per_trigger, trigger_seconds=args.trigger_interval,
                            available_now=args.available_now)
        print(f"xgate spark: reading {len(plan.sources)} Kafka source endpoint(s) with Spark's Kafka connector; "
              f"checkpoint {checkpoint}" + (f", audit Parquet {args.parquet}" if args.parquet else ""),
              file=sys.stderr, flush=True)
        try:
            writer.follow(query)
        except KeyboardInterrupt:
            query.stop()
            writer.follow(query, timeout=0)  # the batches that ended before the stop are counted
        failure = query.exception()
        print(writer.totals.render(), file=sys.stdout, flush=True)
        if failure is not None:
            print(f"xgate spark: the query failed: {failure}", file=sys.stderr)
            return ExitCode.FAILED
        return ExitCode.OK
    finally:
        spark.stop()


def _run_batch(args: argparse.Namespace, bundle: Any) -> ExitCode:
    from gateway.spark.batch import build_session, is_parquet, judged_rows, read_lines, read_parquet, write_results

    parquet = args.input != "-" and is_parquet(args.input)
    text: TextIO | None = None
    if not parquet:
        try:
            text = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")
        except OSError as exc:
            print(f"xgate spark: cannot read {args.input}: {exc.strerror}", file=sys.stderr)
            return ExitCode.USAGE
    spark = build_session(args.master)
    try:
        if text is not None:
            with text:
                df = read_lines(spark, text)
        else:
            try:
                df = read_parquet(spark, args.input)
            except ValueError as exc:
                print(f"xgate spark: {exc}", file=sys.stderr)
                return ExitCode.USAGE
        summary = write_results(judged_rows(df, bundle, args.endpoint), args.format, sys.stdout)
        sys.stdout.flush()
    finally:
        spark.stop()
    return ExitCode.OK if summary.by_verdict.get("nonconformant", 0) == 0 else ExitCode.NONCONFORMANT


def add_command(commands: Any) -> None:
    spark = commands.add_parser("spark", help="run the Kafka routes on Spark Structured Streaming, or judge data at "
                                              "rest (--batch)")
    spark.add_argument("--config", action="append", required=True, metavar="DIR",
                       help="registry documents and gateway.yaml (directory; --batch also takes files, repeatable)")
    spark.add_argument("--master", help=f"Spark master URL (default: spark-submit's, else {DEFAULT_MASTER})")
    spark.add_argument("--strict", action="store_true", help="exit 2 when any document has an error")
    stream = spark.add_argument_group("streaming (Kafka routes)")
    stream.add_argument("--checkpoint", metavar="DIR",
                        help="checkpoint directory: offsets and committed batches survive a restart (default: a "
                             "new temporary directory)")
    stream.add_argument("--parquet", metavar="DIR", help="also write every judged record here (exactly-once audit)")
    stream.add_argument("--available-now", action="store_true",
                        help="process what the topics hold now, then stop")
    stream.add_argument("--trigger-interval", type=float, default=0.0, metavar="SECONDS",
                        help="start a micro-batch at most this often (default 0: as soon as the last one ends)")
    stream.add_argument("--max-offsets-per-trigger", type=int, metavar="N", help="records per micro-batch at most")
    stream.add_argument("--starting-offsets", choices=("earliest", "latest"),
                        help="where a new checkpoint starts (default: each source endpoint's autooffsetreset)")
    batch = spark.add_argument_group("batch (data at rest)")
    batch.add_argument("--batch", action="store_true",
                       help="judge a recorded-messages file or a Parquet dataset instead of streaming")
    batch.add_argument("--endpoint", help="endpoint id for messages that name none")
    batch.add_argument("--format", choices=("json", "table"), default="json")
    batch.add_argument("input", nargs="?", default="-",
                       help="recorded messages (JSON lines, - is stdin) or a Parquet dataset with a 'record' column")
    spark.set_defaults(handler=cmd_spark)
