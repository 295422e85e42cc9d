"""How `xgate run` logs: a level and a format, from the command line or the environment.

`--log-level` (or XGATE_LOG_LEVEL): debug, info (the default), warning, error. `--log-format` (or
XGATE_LOG_FORMAT): `text` (the default: one line a record, for a terminal) or `json` (one object a line, for
a log shipper: `time`, `level`, `logger`, `message`, `worker` under `--workers N`, `exception` with its
traceback, and the record's fields). A record carries structured fields as `extra={"fields": {...}}` (a
reload's outcome, what it changed): the JSON format puts them in the object, the text format writes them
after the message as one sorted JSON object, so a line stays greppable either way.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime
from typing import Any

LEVELS = ("debug", "info", "warning", "error")
FORMATS = ("text", "json")
LEVEL_ENV, FORMAT_ENV = "XGATE_LOG_LEVEL", "XGATE_LOG_FORMAT"


def fields(**values: Any) -> dict[str, Any]:
    """`extra=` for a record with structured fields: `log.info("reload applied", extra=fields(digest=...))`."""
    return {"fields": values}


def _fields_of(record: logging.LogRecord) -> dict[str, Any]:
    found = getattr(record, "fields", None)
    return found if isinstance(found, dict) else {}


class TextFormatter(logging.Formatter):
    def __init__(self, worker: int | None) -> None:
        prefix = "" if worker is None else f"[worker {worker}] "
        super().__init__(f"%(asctime)s %(levelname)s {prefix}%(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extra = _fields_of(record)
        if not extra:
            return line
        head, newline, rest = line.partition("\n")  # the fields stay on the message's line, before a traceback
        return f"{head} {json.dumps(extra, sort_keys=True, default=str)}{newline}{rest}"


class JsonFormatter(logging.Formatter):
    def __init__(self, worker: int | None) -> None:
        super().__init__()
        self.worker = worker

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(), "logger": record.name, "message": record.getMessage()}
        if self.worker is not None:
            entry["worker"] = self.worker
        for key, value in _fields_of(record).items():
            entry.setdefault(key, value)  # a field never hides the record's own keys
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure(level: str | None = None, fmt: str | None = None, worker: int | None = None) -> None:
    """Set the root logger up; None takes the environment's value, else the default. Raises ValueError naming
    the setting for a level or format xgate does not know."""
    level = (level or os.environ.get(LEVEL_ENV) or "info").strip().lower()
    fmt = (fmt or os.environ.get(FORMAT_ENV) or "text").strip().lower()
    if level not in LEVELS:
        raise ValueError(f"log level: expected one of {', '.join(LEVELS)}, found {level!r}")
    if fmt not in FORMATS:
        raise ValueError(f"log format: expected one of {', '.join(FORMATS)}, found {fmt!r}")
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter(worker) if fmt == "json" else TextFormatter(worker))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
