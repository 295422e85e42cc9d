"""Shared helpers of the per-generation normalizers: a diagnostics collector and alias lookups."""

from __future__ import annotations

from typing import Any, Protocol

from gateway.errors import Diagnostic, Severity
from gateway.model import Origin, Ref
from gateway.model.resolved import PayloadSchema

# (schema, note, ok): what following a schema reference gives
Resolved = tuple[PayloadSchema | None, str | None, bool]


class Reporter(Protocol):
    """Where a resolving step says what went wrong (the loader's Resolver)."""

    def error(self, origin: Origin, message: str, code: str) -> None: ...

    def warn(self, origin: Origin, message: str, code: str) -> None: ...


class SchemaSource(Protocol):
    """Schemas from somewhere other than the documents (gateway.yaml `schemaregistries`), handed to the
    Resolver: `resolve` gives None for a reference that is not its own."""

    def resolve(self, ref: Ref, fmt: Any, where: Origin, reporter: Reporter) -> Resolved | None: ...


class Ctx:
    def __init__(self, file: str) -> None:
        self.file = file
        self.diagnostics: list[Diagnostic] = []

    def error(self, origin: Origin, message: str, code: str) -> None:
        self.diagnostics.append(Diagnostic(Severity.ERROR, self.file, message, pointer=origin.pointer, code=code))

    def warn(self, origin: Origin, message: str, code: str) -> None:
        self.diagnostics.append(Diagnostic(Severity.WARNING, self.file, message, pointer=origin.pointer, code=code))


def first(raw: dict[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    for key in keys:
        if key in raw:
            return key, raw[key]
    return None, None


def as_map(value: Any, origin: Origin, ctx: Ctx, what: str) -> dict[str, Any]:
    """Collections are maps by id; a list of objects with an `id`/`name` is tolerated."""
    if isinstance(value, dict):
        return value
    if isinstance(value, list):
        out: dict[str, Any] = {}
        for index, item in enumerate(value):
            ident = isinstance(item, dict) and (item.get("id") or item.get("name"))
            if isinstance(ident, str):
                out[ident] = item
            else:
                ctx.error(origin.child(str(index)), f"{what} entry has no id", "shape")
        return out
    ctx.error(origin, f"expected an object of {what} keyed by id, found {type(value).__name__}", "shape")
    return {}
