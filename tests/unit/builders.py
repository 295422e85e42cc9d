"""Small registry documents built inline, loaded through the real loader and compiler, judged with judge_record.

Every helper writes real files (JSON or YAML) under a pytest `tmp_path`, so the
whole path documents -> Snapshot -> Ruleset -> Verdict is exercised.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gateway.check import judge_record
from gateway.compiler import Ruleset, compile_registry
from gateway.errors import Diagnostic, Severity
from gateway.loader import Snapshot, load_snapshot
from gateway.verdict import Verdict

CE = "CloudEvents/1.0"


def write_doc(directory: Path, name: str, doc: Any) -> Path:
    """Write `doc` as JSON (or YAML when the name says so; a str is written as is)."""
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(doc, str):
        path.write_text(doc, "utf-8")
    elif name.endswith((".yaml", ".yml")):
        path.write_text(yaml.safe_dump(doc, sort_keys=False), "utf-8")
    else:
        path.write_text(json.dumps(doc, indent=1), "utf-8")
    return path


@dataclass
class Loaded:
    snapshot: Snapshot
    ruleset: Ruleset

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.snapshot.diagnostics if d.severity is Severity.ERROR] + \
            [d for d in self.ruleset.diagnostics if d.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.snapshot.diagnostics if d.severity is Severity.WARNING] + \
            [d for d in self.ruleset.diagnostics if d.severity is Severity.WARNING]

    def codes(self, severity: Severity) -> list[str]:
        every = list(self.snapshot.diagnostics) + list(self.ruleset.diagnostics)
        return [d.code for d in every if d.severity is severity]

    def judge(self, record: dict[str, Any], endpoint: str | None = None) -> Verdict:
        return judge_record(self.ruleset, record, endpoint)


def load_files(tmp_path: Path, files: dict[str, Any], paths: Iterable[str] | None = None) -> Loaded:
    """Write every file, then load the given paths (default: the whole directory)."""
    for name, doc in files.items():
        write_doc(tmp_path, name, doc)
    targets = [tmp_path / p for p in paths] if paths is not None else [tmp_path]
    snapshot = load_snapshot(list(targets))
    return Loaded(snapshot, compile_registry(snapshot.registry, snapshot.digest))


def load_doc(tmp_path: Path, doc: Any, name: str = "registry.xreg.json") -> Loaded:
    return load_files(tmp_path, {name: doc}, [name])


def registry(protocol: str | None, messages: dict[str, Any], *, group: str = "g", endpoint: str = "ep",
             endpoint_attrs: dict[str, Any] | None = None, schemagroups: dict[str, Any] | None = None,
             inline: dict[str, Any] | None = None, group_attrs: dict[str, Any] | None = None) -> dict[str, Any]:
    """A 1.0 document: one endpoint on `protocol` referring to one message group holding `messages`."""
    ep: dict[str, Any] = {"usage": ["consumer"], "messagegroups": [f"#/messagegroups/{group}"]}
    if protocol is not None:
        ep["protocol"] = protocol
    ep.update(endpoint_attrs or {})
    if inline is not None:
        ep["messages"] = inline
    doc: dict[str, Any] = {"specversion": "1.0-rc4", "endpoints": {endpoint: ep},
                           "messagegroups": {group: {**(group_attrs or {}), "messages": messages}}}
    if schemagroups is not None:
        doc["schemagroups"] = schemagroups
    return doc


def ce_message(type_value: str, metadata: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A CloudEvents message definition whose `type` is fixed."""
    envelopemetadata = {"type": {"value": type_value, "required": True}}
    envelopemetadata.update(metadata or {})
    return {"envelope": CE, "envelopemetadata": envelopemetadata, **extra}


def kafka_ce(type_value: str | None = "t", *, extra_headers: dict[str, Any] | None = None,
             omit: Iterable[str] = (), body: str | None = None, **fields: Any) -> dict[str, Any]:
    """A recorded KAFKA message in binary CloudEvents mode with a complete, valid set of attributes."""
    headers: dict[str, Any] = {"ce_specversion": "1.0", "ce_id": "1", "ce_source": "/src", "ce_type": type_value}
    for name in omit:
        headers.pop(name, None)
    headers = {k: v for k, v in headers.items() if v is not None}
    headers.update(extra_headers or {})
    record: dict[str, Any] = {"protocol": "KAFKA", "topic": "t", "headers": headers}
    if body is not None:
        record["body"] = body
    record.update(fields)
    return record


def http_ce(type_value: str = "t", *, extra_headers: dict[str, Any] | None = None, body: str | None = None,
            **fields: Any) -> dict[str, Any]:
    headers: dict[str, Any] = {"ce-specversion": "1.0", "ce-id": "1", "ce-source": "/src", "ce-type": type_value}
    headers.update(extra_headers or {})
    record: dict[str, Any] = {"protocol": "HTTP", "method": "POST", "path": "/in", "headers": headers}
    if body is not None:
        record["body"] = body
    record.update(fields)
    return record


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def shape(verdict: Verdict) -> tuple[str, str | None, str | None, list[tuple[str, str]]]:
    """(outcome, messagegroupid, messageid, [(path, rule), ...]) for exact comparison."""
    return (verdict.outcome.value, verdict.messagegroupid, verdict.messageid,
            [(v.path, v.rule.value) for v in verdict.violations])


def ok(group: str, message: str) -> tuple[str, str, str, list[tuple[str, str]]]:
    return ("conformant", group, message, [])


def bad(group: str | None, message: str | None, *violations: tuple[str, str]) -> tuple[Any, ...]:
    return ("nonconformant", group, message, list(violations))
