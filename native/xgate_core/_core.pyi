from collections.abc import Iterable
from typing import Any

PLAN_VERSION: int

# a violation: (path, rule index into gateway.verdict.Rule, expected, actual, message)
Violation = tuple[str, int, Any, Any, str]
# per record: the index of the definition it conforms to; (closest index or None, violations); or None when
# the Python judge must decide
Result = int | tuple[int | None, list[Violation]] | None

class Core:
    def __init__(self, plan: str, constants: list[Any]) -> None: ...
    def endpoint(self, id: str) -> int: ...
    def judge_kafka(self, endpoint: int, records: Iterable[Any]) -> list[Result]: ...
