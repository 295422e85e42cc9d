"""One judged message as a person reads it, with each violation marked where it is (console's message view).

A violation's `path` says where (docs/validation.md, rule 6): `envelopemetadata.<attribute>` is a row of the
CloudEvent's attributes, `protocoloptions.<field>` a protocol field, `protocoloptions.<group>.<name>` a row of
a field holding named values (`headers`, `user_properties`, an AMQP section), `dataschema:<pointer>` a place in the
payload (the pretty-printed JSON has a mark at that pointer; a `required` member marks the object that lacks
it), `dataschema:`, `body` and `record` the payload or the message as a whole. Each mark carries the
violation's number and message, and links to it in the list above.

Payloads are shown only when `show_bodies`; names in `redact` (header or attribute names, case-insensitive)
and JSON pointers in it (payload places) are always "(redacted)". A payload that is not JSON is shown as hex
beside its UTF-8 text where it has one.
"""

from __future__ import annotations

import base64
import json
from collections import defaultdict
from dataclasses import dataclass, field
from html import escape
from typing import Any

from gateway.cloudevents import MISSING, read_cloudevents
from gateway.compiler.ruleset import EndpointRules
from gateway.envelope import Envelope
from gateway.pointers import escape as escape_token
from gateway.recorded import record_from_envelope
from gateway.runtime.router import kind_of
from gateway.verdict import Verdict, Violation, truncate

SHOWN_BYTES = 256 * 1024  # a payload past this is shown in part
HEX_BYTES = 4096
REDACTED = "(redacted)"
FORMAT_NAMES = {"avro": "Avro", "protobuf": "Protobuf"}


@dataclass
class Marks:
    """Where each violation points, by part of the message; values are violation numbers (1-based)."""

    attributes: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    fields: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    # by group (a protocol field holding named values: headers, user_properties, an AMQP section), then name
    # in lower case (HTTP's header names are; elsewhere a mark on either spelling is still seen)
    groups: dict[str, dict[str, list[int]]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(list)))
    payload: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))  # JSON pointer -> numbers
    whole: list[int] = field(default_factory=list)


def locate(violations: tuple[Violation, ...]) -> Marks:
    marks = Marks()
    for number, violation in enumerate(violations, 1):
        path = violation.path
        if path.startswith("envelopemetadata."):
            marks.attributes[path.split(".", 1)[1]].append(number)
        elif path.startswith("protocoloptions."):
            rest = path.split(".", 1)[1]
            group, _, name = rest.partition(".")
            if name:
                marks.groups[group][name.lower()].append(number)
            else:
                marks.fields[rest].append(number)
        elif path.startswith("dataschema:"):
            marks.payload[path[len("dataschema:"):]].append(number)
        else:
            marks.whole.append(number)
    return marks


def _badge(numbers: list[int], violations: tuple[Violation, ...]) -> tuple[str, str]:
    """(the mark's attributes, its badge) for violations `numbers`."""
    title = "; ".join(f"{n}: {violations[n - 1].message}" for n in numbers)
    links = " ".join(f'<a class="badge" href="#v{n}">{n}</a>' for n in numbers)
    return f' class="bad" title="{escape(title)}"', links


def _redacted(name: str, redact: set[str]) -> bool:
    return name.lower() in redact


def _table(rows: list[tuple[str, Any]], marks: dict[str, list[int]], violations: tuple[Violation, ...],
           redact: set[str], caption: str, absent: list[str] | None = None) -> str:
    if not rows and not absent:
        return ""
    out = [f'<table class="kv"><caption>{escape(caption)}</caption>']
    for name, value in rows:
        numbers = marks.get(name) or marks.get(name.lower()) or []
        attributes, badge = _badge(numbers, violations) if numbers else ("", "")
        shown = REDACTED if _redacted(name, redact) else _scalar(value)
        out.append(f"<tr{attributes}><th>{escape(name)}</th><td><code>{escape(shown)}</code> {badge}</td></tr>")
    for name in absent or ():
        attributes, badge = _badge(marks[name], violations)
        out.append(f'<tr{attributes}><th>{escape(name)}</th><td class="absent">(absent) {badge}</td></tr>')
    out.append("</table>")
    return "".join(out)


def _scalar(value: Any) -> str:
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return "base64:" + base64.b64encode(value).decode("ascii")
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _json_html(value: Any, pointer: str, marks: dict[str, list[int]], violations: tuple[Violation, ...],
               redact: set[str], depth: int) -> str:
    """Pretty-printed JSON as HTML: the value at each marked pointer wrapped in a mark."""
    pad = "  " * depth
    if pointer in redact:
        text = f'"{REDACTED}"'
    elif isinstance(value, dict) and value:
        inner = ",\n".join(
            f'{pad}  <span class="key">{escape(json.dumps(key, ensure_ascii=False))}</span>: '
            + _json_html(member, f"{pointer}/{escape_token(key)}", marks, violations, redact, depth + 1)
            for key, member in value.items())
        text = "{\n" + inner + "\n" + pad + "}"
    elif isinstance(value, list) and value:
        inner = ",\n".join(pad + "  " + _json_html(member, f"{pointer}/{index}", marks, violations, redact, depth + 1)
                           for index, member in enumerate(value))
        text = "[\n" + inner + "\n" + pad + "]"
    else:
        text = escape(json.dumps(value, ensure_ascii=False, default=str))
    numbers = marks.get(pointer)
    if not numbers:
        return text
    attributes, badge = _badge(numbers, violations)
    return f'<mark{attributes} data-pointer="{escape(pointer or "/")}">{text}</mark>{badge}'


def _hex(data: bytes) -> str:
    shown = data[:HEX_BYTES]
    lines = []
    for offset in range(0, len(shown), 16):
        chunk = shown[offset:offset + 16]
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{offset:08x}  {chunk.hex(' '):<47}  {text}")
    more = f"\n... {len(data) - HEX_BYTES} more bytes" if len(data) > HEX_BYTES else ""
    return escape("\n".join(lines) + more)


def decoded_view(rules: EndpointRules | None, verdict: Verdict, body: bytes) -> tuple[str, Any] | None:
    """(format, value) of a binary payload decoded by the named definition's schema (Avro, Protobuf), when it
    decodes; None otherwise."""
    if rules is None or verdict.messageid is None:
        return None
    for definition in rules.definitions:
        if definition.groupid == verdict.messagegroupid and definition.messageid == verdict.messageid:
            for part in definition.parts:
                decode = getattr(part[1], "decode", None) if part[0] == "payload" and len(part) > 1 else None
                if decode is not None:
                    try:
                        kind = str(getattr(part[1], "kind", ""))
                        return FORMAT_NAMES.get(kind, kind or "schema"), decode(body)
                    except Exception:  # noqa: BLE001  # not of the schema: the hex above is what there is
                        return None
    return None


def _payload(data: Any, is_bytes: bool, marks: Marks, violations: tuple[Violation, ...], redact: set[str],
             decoded: tuple[str, Any] | None = None) -> str:
    whole = marks.payload.get("", []) + marks.whole
    attributes, badge = _badge(whole, violations) if whole else ("", "")
    inside = {pointer: numbers for pointer, numbers in marks.payload.items() if pointer}  # the root is `whole`
    if not is_bytes:
        body = _json_html(data, "", inside, violations, redact, 0)
        return f'<section class="payload"><h3>Payload (JSON) {badge}</h3><pre{attributes}>{body}</pre></section>'
    raw: bytes = data
    parsed: Any = MISSING
    if len(raw) <= SHOWN_BYTES:
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = MISSING
    if parsed is not MISSING:
        body = _json_html(parsed, "", inside, violations, redact, 0)
        return f'<section class="payload"><h3>Payload (JSON) {badge}</h3><pre{attributes}>{body}</pre></section>'
    views = ""
    if decoded is not None:
        kind, value = decoded
        body = _json_html(value, "", inside, violations, redact, 0)
        views += f"<h4>Decoded ({escape(kind)}, by the definition's schema)</h4><pre>{body}</pre>"
    try:
        views += f"<h4>As text</h4><pre>{escape(raw[:SHOWN_BYTES].decode('utf-8'))}</pre>"
    except UnicodeDecodeError:
        pass
    return (f'<section class="payload"><h3>Payload ({len(raw)} bytes, not JSON) {badge}</h3>'
            f"<pre{attributes} class=\"hex\">{_hex(raw)}</pre>{views}</section>")


def message_html(envelope: Envelope, verdict: Verdict, *, show_bodies: bool, redact: tuple[str, ...] = (),
                 rules: EndpointRules | None = None) -> str:
    """The message's attributes (when its endpoint `rules` read CloudEvents), protocol fields, headers and
    payload, each violation marked in place."""
    violations = verdict.violations
    marks = locate(violations)
    names = {item.lower() for item in redact if not item.startswith("/")}
    pointers = {item for item in redact if item.startswith("/")}
    record = record_from_envelope(envelope)
    parts: list[str] = []
    reads_events = rules is None or rules.index_for(envelope.protocol).needs_cloudevents
    # a message it cannot read gives a reading with a problem, not an exception
    events = read_cloudevents(envelope, rules.envelope_mode if rules is not None else None) if reads_events else []
    event = events[0] if events else None
    if event is not None:
        attributes = sorted(event.attributes.items())
        absent = sorted(name for name in marks.attributes if name not in event.attributes)
        parts.append(_table([(k, truncate(v)) for k, v in attributes], marks.attributes, violations, names,
                            f"CloudEvent attributes ({event.mode} mode)", absent))
    grouped = {name: _pairs(value) for name, value in record.items() if _is_group(value)}
    fields = [(name, value) for name, value in record.items()
              if name not in ("body", "body_base64", "endpoint") and name not in grouped]
    absent_fields = sorted(name for name in marks.fields if name not in record)
    parts.append(_table(fields, marks.fields, violations, names, f"{envelope.protocol} fields", absent_fields))
    for group in sorted(set(grouped) | set(marks.groups)):
        rows, marked = grouped.get(group, []), marks.groups.get(group, {})
        lowered = {name.lower() for name, _ in rows}
        absent = sorted(n for n in marked if n not in lowered)
        if rows or absent:
            parts.append(_table(rows, marked, violations, names, group.replace("_", " "), absent))
    if not show_bodies:
        parts.append('<section class="payload"><h3>Payload</h3><p class="hidden">hidden '
                     "(console.show_bodies is off for this address)</p></section>")
    elif event is not None and event.mode == "structured" and event.data is not MISSING:
        parts.append(_payload(event.data, event.data_is_bytes, marks, violations, pointers))
    else:
        parts.append(_payload(envelope.body, True, marks, violations, pointers,
                              decoded_view(rules, verdict, envelope.body)))
    return "".join(parts)


def _is_group(value: Any) -> bool:
    """A recorded field that holds named values (a mapping, or a list of {name, value} or [name, value])."""
    if isinstance(value, dict):
        return not set(value) <= {"base64"}  # {"base64": ...} is one binary value
    return isinstance(value, list) and bool(value) and all(
        (isinstance(item, dict) and "name" in item) or (isinstance(item, (list, tuple)) and len(item) == 2)
        for item in value)


def _pairs(value: Any) -> list[tuple[str, Any]]:
    """A recorded header group (a mapping, or a list of {name, value} / [name, value]) as rows."""
    if isinstance(value, dict):
        return [(str(k), v) for k, v in value.items()]
    rows: list[tuple[str, Any]] = []
    for item in value or ():
        if isinstance(item, dict) and "name" in item:
            rows.append((str(item["name"]), item.get("value")))
        elif isinstance(item, (list, tuple)) and len(item) == 2:
            rows.append((str(item[0]), item[1]))
    return rows


def violations_html(verdict: Verdict) -> str:
    """The verdict and its violations, numbered: the marks below link here. Named as the routes name it:
    nonconformant with no definition named is `unmatched` (the message is unknown, not an invalid one)."""
    kind = kind_of(verdict).value
    named = f" as {verdict.messagegroupid}/{verdict.messageid}" if verdict.messageid else ""
    closest = " (the closest definition)" if verdict.messageid and not verdict.conformant else ""
    out = [(f'<p class="verdict {escape(kind)}">{escape(kind)}{escape(named)}{closest}'
            f' <small class=muted>(verdict {escape(verdict.outcome.value)})</small></p>')]
    if verdict.violations:
        out.append('<ol class="violations">')
        for number, violation in enumerate(verdict.violations, 1):
            out.append(f'<li id="v{number}"><code>{escape(violation.path)}</code> '
                       f'<span class="rule">[{escape(violation.rule.value)}]</span> {escape(violation.message)}'
                       f'<br><small>expected <code>{escape(_scalar(violation.expected))}</code>, found '
                       f"<code>{escape(_scalar(truncate(violation.actual)))}</code></small></li>")
        out.append("</ol>")
    return "".join(out)
