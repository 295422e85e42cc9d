"""`xgate spark --batch`: the Spark runner's command line (pyspark is the `spark` extra, imported late)."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from typing import Any, TextIO

EXIT_OK, EXIT_NONCONFORMANT, EXIT_USAGE = 0, 1, 2


def cmd_spark(args: argparse.Namespace) -> int:
    from gateway.cli import unusable
    from gateway.compiler import compile_registry
    from gateway.spark.shipping import bundle_from_paths

    if not args.batch:
        print("xgate spark: only --batch is available (streaming is not built yet)", file=sys.stderr)
        return EXIT_USAGE
    missing = [name for name in ("pyspark", "pyarrow") if importlib.util.find_spec(name) is None]
    if missing:
        print(f"xgate spark: {', '.join(missing)} missing: pip install 'xgate[spark]'", file=sys.stderr)
        return EXIT_USAGE
    snapshot, bundle = bundle_from_paths(args.config)
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    refused = unusable("spark", snapshot, ruleset, strict=args.strict, endpoint=args.endpoint)
    if refused is not None:
        return refused
    return _run_batch(args, bundle)


def _run_batch(args: argparse.Namespace, bundle: Any) -> int:
    from gateway.spark.batch import build_session, is_parquet, judged_rows, read_lines, read_parquet, write_results

    parquet = args.input != "-" and is_parquet(args.input)
    text: TextIO | None = None
    if not parquet:
        try:
            text = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            print(f"xgate spark: cannot read {args.input}: {exc.strerror}", file=sys.stderr)
            return EXIT_USAGE
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
                return EXIT_USAGE
        summary = write_results(judged_rows(df, bundle, args.endpoint), args.format, sys.stdout)
        sys.stdout.flush()
    finally:
        spark.stop()
    return EXIT_OK if summary.by_verdict.get("nonconformant", 0) == 0 else EXIT_NONCONFORMANT


def add_commands(commands: Any) -> None:
    spark = commands.add_parser("spark", help="judge recorded messages on Spark executors (batch)")
    spark.add_argument("--batch", action="store_true", required=True,
                       help="judge data at rest: a recorded-messages file or a Parquet dataset")
    spark.add_argument("--config", action="append", required=True, metavar="DIR",
                       help="registry documents (directory or file; repeatable)")
    spark.add_argument("--endpoint", help="endpoint id for messages that name none")
    spark.add_argument("--master", default="local[2]", help="Spark master URL (default local[2])")
    spark.add_argument("--format", choices=("json", "table"), default="json")
    spark.add_argument("--strict", action="store_true", help="exit 2 when any document has an error")
    spark.add_argument("input", nargs="?", default="-",
                       help="recorded messages (JSON lines, - is stdin) or a Parquet dataset with a 'record' column")
    spark.set_defaults(handler=cmd_spark)
