"""Kafka headers as Arrow `array<struct<key: string, value: binary>>`, without a dict per header.

Building or reading one Python dict per header costs more than the rest of a record's
handling; these cut the column from (or build it out of) flat key and value arrays.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

Pairs = Sequence[tuple[str, bytes | None]]


def header_type() -> Any:
    import pyarrow as pa  # type: ignore[import-untyped]

    return pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def header_pairs(column: Any) -> list[list[tuple[str, bytes | None]] | None]:
    """An array<struct<key, value>> column as lists of (key, value); null rows are None."""
    offsets = column.offsets.to_pylist()  # absolute positions in column.values, also for a sliced column
    pairs = list(zip(column.values.field("key").to_pylist(), column.values.field("value").to_pylist(), strict=True))
    valid = column.is_valid().to_pylist()
    return [pairs[offsets[i]:offsets[i + 1]] if valid[i] else None for i in range(len(column))]


def headers_array(rows: Iterable[Pairs | None]) -> Any:
    """The column for rows of (key, value) pairs (None and empty rows both become empty lists)."""
    import pyarrow as pa

    offsets: list[int] = [0]
    keys: list[str] = []
    values: list[bytes | None] = []
    for pairs in rows:
        if pairs:
            names, data = zip(*pairs, strict=True)
            keys.extend(names)
            values.extend(data)
        offsets.append(len(keys))
    return pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()),
                                    pa.StructArray.from_arrays([pa.array(keys, type=pa.string()),
                                                                pa.array(values, type=pa.binary())],
                                                               names=["key", "value"]))
