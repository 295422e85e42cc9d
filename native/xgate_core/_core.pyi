from collections.abc import Callable, Iterable
from typing import Any

PLAN_VERSION: int

# a violation: (path, rule index into gateway.verdict.Rule, expected, actual, message)
Violation = tuple[str, int, Any, Any, str]
# per record: the index of the definition it conforms to; (closest index or None, violations); or None when
# the Python judge must decide
Result = int | tuple[int | None, list[Violation]] | None

# an Arrow column's buffers: (validity or None, offsets, data, array offset) or, fixed-width, (validity, data,
# array offset)
Variable = tuple[bytes | None, bytes, bytes, int]
Fixed = tuple[bytes | None, bytes, int]

class Core:
    # plan: the plan's JSON text; texts(kind, index): a definition's rules ("rules") or a schema ("schema") as
    # JSON text, asked once, on the first message that needs it (lower.py LoweredPlan.text_of)
    def __init__(self, plan: str, texts: Callable[[str, int], str], constants: list[Any]) -> None: ...
    def endpoint(self, id: str) -> int: ...
    def judge_kafka(self, endpoint: int, records: Iterable[Any]) -> list[Result]: ...
    # Arrow columns' buffers (native/src/arrow.rs): each row's endpoint position as int32 (-1: Python decides),
    # then topic, partition, key, value, headers (list validity, offsets, offset), header keys, header values,
    # timestamp; returns each row's conformant definition as int32 (-1: see the list) and [(row, result)]
    def judge_arrow(self, rows: int, endpoints: bytes, topic: Variable, partition: Fixed, key: Variable,
                    value: Variable, headers: Fixed, header_keys: Variable, header_values: Variable,
                    timestamp: Fixed) -> tuple[bytes, list[tuple[int, Result]]]: ...

# remap.reason_headers for one source endpoint's dead letters, written by the core (Core.judge_fetched)
class ReasonWriter:
    def __init__(self, rule_names: list[str], constants: list[str | None], ids: list[tuple[str, str]],
                 outcome: str, source_endpoint: str) -> None: ...

# per chunk: conformant and nonconformant counts by definition, the unmatched count, violations by rule
Counts = tuple[list[int], list[int], int, list[int]]

class Checker:
    def __init__(self, core: Core, default_endpoint: int | None, kafka: list[bool], conformant_lines: list[str],
                 heads: list[str], rule_names: list[str], constants: list[str | None], threads: int) -> None: ...
    # (segments, handed-back lines, counts): the output is segments[0] + verdict(line 0) + segments[1] + ...
    def check(self, chunk: bytes, write: bool) -> tuple[list[bytes], list[bytes], Counts]: ...

# the Kafka default partitioner's hash of a record key (Java's Utils.murmur2), unsigned 32 bits
def murmur2(key: bytes) -> int: ...

# a Kafka record batch (magic 2, uncompressed) as aiokafka's producer takes one in `send_batch`; a record is an
# OutgoingRecord tuple (value, key, headers, timestamp) or an object with those attributes (a ConsumerRecord)
class BatchWriter:
    def __init__(self, batch_size: int, transactional: bool = False) -> None: ...
    def append(self, *, timestamp: int | None, key: bytes | None, value: bytes | None,
               headers: list[tuple[str, bytes | None]] | None = None) -> bool | None: ...
    # records[i] for i in indexes[start:] while they fit, each with added[i]'s text headers; the position after
    def extend(self, records: list[Any], indexes: list[int], start: int, default_key: bytes | None = None,
               added: list[list[tuple[str, str]] | None] | None = None) -> int: ...
    def close(self) -> None: ...
    def closed(self) -> bool: ...
    def record_count(self) -> int: ...
    def size(self) -> int: ...
    def _set_producer_state(self, producer_id: int, producer_epoch: int, base_sequence: int) -> None: ...
    def _build(self) -> bytes: ...

# (partition, record indexes) in the order partitions are first met, and the indexes of records too large
def partition_records(records: list[Any], partitions: list[int], keyless: int, fixed: int | None, max_size: int,
                      default_key: bytes | None = None, added: list[list[tuple[str, str]] | None] | None = None,
                      ) -> tuple[list[tuple[int, list[int]]], list[int]]: ...
