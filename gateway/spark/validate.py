"""Judge a DataFrame of recorded messages on the executors with mapInArrow over the shared compiler: each Arrow
batch's Kafka messages by the native core in one call per endpoint (gateway/compiler/core.py), the rest by
the Python judge, with `xgate check`'s verdicts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from gateway.check import read_line, unreadable
from gateway.compiler import Ruleset
from gateway.envelope import Envelope
from gateway.spark.shipping import RegistryBundle, native_judge_for
from gateway.verdict import Verdict

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import DataFrame

RESULT_COLUMNS = ("verdict", "messagegroupid", "messageid", "violations", "events")


def read_text(ruleset: Ruleset, text: str | None, endpoint: str | None = None) -> Envelope | Verdict:
    """One line's Envelope, or the verdict of a line that is not a recorded message (`None` and blank too)."""
    if text is None:
        return unreadable("record is null", None)
    if not text.strip():
        return unreadable("record is blank", text)
    return read_line(ruleset, text, endpoint)


def verdict_columns(verdict: Verdict) -> tuple[str, str | None, str | None, str, str | None]:
    """The result columns of one verdict; `violations` and `events` hold JSON as `xgate check` writes it."""
    as_dict = verdict.as_dict()
    events = as_dict.get("events")
    return (as_dict["verdict"], as_dict["messagegroupid"], as_dict["messageid"],
            json.dumps(as_dict["violations"], default=str),
            json.dumps(events, default=str) if events is not None else None)


def verdict_line(row: Any) -> str:
    """The `xgate check` JSON line of a result row (a Row, dict or anything indexable by column name)."""
    out: dict[str, Any] = {"verdict": row["verdict"], "messagegroupid": row["messagegroupid"],
                           "messageid": row["messageid"], "violations": json.loads(row["violations"])}
    if row["events"] is not None:
        out["events"] = json.loads(row["events"])
    return json.dumps(out, default=str)


def judge_batches(bundle: RegistryBundle, endpoint: str | None,
                  batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The mapInArrow function: input columns pass through, the five result columns are appended."""
    import pyarrow as pa

    judge = native_judge_for(bundle)
    ruleset = judge.ruleset
    for batch in batches:
        texts = batch.column(batch.schema.get_field_index("record")).to_pylist()
        read = [read_text(ruleset, text, endpoint) for text in texts]
        judged = iter(judge.judge([item for item in read if isinstance(item, Envelope)]))
        results = [verdict_columns(item if isinstance(item, Verdict) else next(judged)) for item in read]
        columns = list(batch.columns)
        names = list(batch.schema.names)
        for position, name in enumerate(RESULT_COLUMNS):
            columns.append(pa.array([r[position] for r in results], type=pa.string()))
            names.append(name)
        yield pa.RecordBatch.from_arrays(columns, names=names)


def validate_frame(df: DataFrame, bundle: RegistryBundle, endpoint: str | None = None) -> DataFrame:
    """`df` with a string column `record` (one recorded message, JSON) -> `df` plus the verdict columns.

    Every input column (an `index` for ordering, say) is carried through. Only `bundle` and
    `endpoint` travel with the task: `judge_batches` is a module-level function, pickled by name.
    """
    if "record" not in df.columns:
        raise ValueError(f"validate_frame needs a string column 'record' (columns: {', '.join(df.columns)})")
    return df.mapInArrow(partial(judge_batches, bundle, endpoint), _output_schema(df))


def _output_schema(df: DataFrame) -> Any:
    from pyspark.sql.types import StringType, StructField, StructType

    fields = list(df.schema.fields) + [StructField(name, StringType(), True) for name in RESULT_COLUMNS]
    return StructType(fields)
