from collections.abc import Iterable
from typing import Any

PLAN_VERSION: int

# a violation: (path, rule index into gateway.verdict.Rule, expected, actual, message)
Violation = tuple[str, int, Any, Any, str]
# per record: the index of the definition it conforms to; (closest index or None, violations); or None when
# the Python judge must decide
Result = int | tuple[int | None, list[Violation]] | None

class Core:
    # plan: the plan's JSON text; rules and schemas: each definition's rules and each schema as JSON text, in
    # the plan's order (kept as these strs, read on first use)
    def __init__(self, plan: str, rules: list[str], schemas: list[str], constants: list[Any]) -> None: ...
    def endpoint(self, id: str) -> int: ...
    def judge_kafka(self, endpoint: int, records: Iterable[Any]) -> list[Result]: ...

# per chunk: conformant and nonconformant counts by definition, the unmatched count, violations by rule
Counts = tuple[list[int], list[int], int, list[int]]

class Checker:
    def __init__(self, core: Core, default_endpoint: int | None, kafka: list[bool], conformant_lines: list[str],
                 heads: list[str], rule_names: list[str], constants: list[str | None], threads: int) -> None: ...
    # (segments, handed-back lines, counts): the output is segments[0] + verdict(line 0) + segments[1] + ...
    def check(self, chunk: bytes, write: bool) -> tuple[list[bytes], list[bytes], Counts]: ...
