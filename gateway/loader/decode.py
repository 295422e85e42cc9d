"""Parse one document file (JSON or YAML) into plain Python values.

Errors name the file with line and column. YAML is loaded with the safe
loader only (no Python object tags), and aliases are refused beyond a small
budget; a parsed document must also fit `limits` (nesting depth, values with
aliases expanded), so that a "billion laughs" or a deeply nested document
fails with a reason instead of exhausting memory or the interpreter stack.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from gateway.errors import Diagnostic, GatewayError, Severity
from gateway.loader.document_limits import MAX_DOCUMENT_VALUES, measure

MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
# PyYAML parses in pure Python at ~0.3 MB/s: a larger YAML document would stall a load for minutes
MAX_YAML_CHARACTERS = 4 * 1024 * 1024
MAX_YAML_ALIASES = 1000


class _Refused(GatewayError, yaml.YAMLError):
    """A YAML document past a limit; stops the composer before it builds more nodes."""


class _BoundedSafeLoader(yaml.SafeLoader):
    """SafeLoader that counts nodes and alias expansions."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.alias_count = 0
        self.node_count = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self.node_count += 1
        if self.node_count > MAX_DOCUMENT_VALUES:
            raise _Refused(f"more than {MAX_DOCUMENT_VALUES:,} YAML nodes")
        if self.check_event(yaml.AliasEvent):
            self.alias_count += 1
            if self.alias_count > MAX_YAML_ALIASES:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise _Refused(f"more than {MAX_YAML_ALIASES} YAML aliases (at line {mark.line + 1}); "
                               "refused as a possible alias bomb")
        return super().compose_node(parent, index)


def _is_yaml(path: Path) -> bool:
    return path.name.lower().endswith((".yaml", ".yml"))


def decode_text(text: str, file: str, *, yaml_syntax: bool) -> tuple[Any, Diagnostic | None]:
    try:
        value, problem = _parse(text, file, yaml_syntax=yaml_syntax)
    except RecursionError:
        # both parsers recurse per nesting level; far deeper than MAX_NESTING_DEPTH anyway
        return None, Diagnostic(Severity.ERROR, file, "document nests too deep to parse "
                                "(more levels than the interpreter's recursion limit)", code="limit")
    if problem is not None:
        return None, problem
    excess = measure(value)
    if excess is not None:
        return None, Diagnostic(Severity.ERROR, file, f"document refused: it {excess}", code="limit")
    return value, None


def _parse(text: str, file: str, *, yaml_syntax: bool) -> tuple[Any, Diagnostic | None]:
    if yaml_syntax:
        if len(text) > MAX_YAML_CHARACTERS:
            return None, Diagnostic(Severity.ERROR, file, f"document refused: YAML of {len(text):,} characters; "
                                    f"the limit for YAML is {MAX_YAML_CHARACTERS:,} (write large documents as JSON)",
                                    code="limit")
        try:
            loader = _BoundedSafeLoader(text)
            try:
                return loader.get_single_data(), None
            finally:
                loader.dispose()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark
            line = mark.line + 1 if mark else None
            column = mark.column + 1 if mark else None
            return None, Diagnostic(Severity.ERROR, file, f"invalid YAML: {exc.problem}", line=line,
                                    column=column, code="parse")
        except _Refused as exc:
            return None, Diagnostic(Severity.ERROR, file, f"document refused: {exc}", code="limit")
        except yaml.YAMLError as exc:
            return None, Diagnostic(Severity.ERROR, file, f"invalid YAML: {exc}", code="parse")
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        comma = _trailing_comma(text, exc.pos)
        if comma is not None:
            line = text.count("\n", 0, comma) + 1
            column = comma - (text.rfind("\n", 0, comma) + 1) + 1
            return None, Diagnostic(Severity.ERROR, file, "invalid JSON: trailing comma before "
                                    f"{text[exc.pos]!r} (JSON allows no comma after the last member)",
                                    line=line, column=column, code="parse")
        return None, Diagnostic(Severity.ERROR, file, f"invalid JSON: {exc.msg}", line=exc.lineno,
                                column=exc.colno, code="parse")


def _trailing_comma(text: str, pos: int) -> int | None:
    """Offset of the comma when the parser stopped at `}` or `]` right after one (a common hand-editing slip)."""
    if pos >= len(text) or text[pos] not in "}]":
        return None
    before = pos - 1
    while before >= 0 and text[before].isspace():
        before -= 1
    return before if before >= 0 and text[before] == "," else None


def read_document(path: Path) -> tuple[bytes | None, Diagnostic | None]:
    file = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_DOCUMENT_BYTES:
            return None, _too_large(file, size)
        return path.read_bytes(), None
    except OSError as exc:
        return None, Diagnostic(Severity.ERROR, file, f"cannot read: {exc.strerror}", code="io")


def _too_large(file: str, size: int) -> Diagnostic:
    return Diagnostic(Severity.ERROR, file, f"document refused: it is {size:,} bytes; the limit is "
                      f"{MAX_DOCUMENT_BYTES:,}", code="limit")


def decode_file(path: Path, raw: bytes | None = None) -> tuple[Any, Diagnostic | None]:
    """Return (value, None) or (None, diagnostic); `raw` stands in for the file's bytes when given."""
    file = str(path)
    if raw is None:
        raw, problem = read_document(path)
        if raw is None:
            return None, problem
    value, diag = decode_bytes(raw, file, yaml_syntax=_is_yaml(path))
    # .cereg files are JSON by convention, but a .cereg that holds YAML is tolerated
    if diag is not None and path.suffix.lower() == ".cereg" \
            and not raw.decode("utf-8-sig", "replace").lstrip().startswith(("{", "[")):
        return decode_bytes(raw, file, yaml_syntax=True)
    return value, diag


def decode_bytes(raw: bytes, file: str, *, yaml_syntax: bool) -> tuple[Any, Diagnostic | None]:
    """A document's bytes (a file's, or a fetched registry's named by its URL): size limit, UTF-8, then parse."""
    if len(raw) > MAX_DOCUMENT_BYTES:
        return None, _too_large(file, len(raw))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return None, Diagnostic(Severity.ERROR, file, f"not UTF-8 text (byte {exc.start})", code="parse")
    return decode_text(text, file, yaml_syntax=yaml_syntax)
