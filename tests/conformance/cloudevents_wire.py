"""Helpers for the CloudEvents binding tests: a tiny Gherkin reader and CloudEvents -> recorded-message encoders.

The encoders write one CloudEvent the way each binding spec says a sender
puts it on the wire, in the recorded form of validation rule 7, so
that the tests can read it back through `envelope_from_record` and
`read_cloudevents` (or judge it through `xgate check`).
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from typing import Any

# --- Gherkin ------------------------------------------------------------------------------------

STEP_KEYWORDS = ("Given", "When", "Then", "And", "But", "*")
_PLACEHOLDER = re.compile(r"<([^<>]+)>")


@dataclass
class Step:
    keyword: str  # Given / When / Then (And and But take the keyword before them)
    text: str
    docstring: str | None = None
    table: list[list[str]] | None = None


@dataclass
class Scenario:
    feature: str
    name: str
    steps: list[Step]
    line: int


@dataclass
class _Block:
    name: str
    line: int
    outline: bool = False
    steps: list[Step] = field(default_factory=list)
    examples: list[list[list[str]]] = field(default_factory=list)


def _cells(line: str) -> list[str]:
    inner = line.strip()
    if not (inner.startswith("|") and inner.endswith("|")):
        raise ValueError(f"table row without closing '|': {line!r}")
    cells = re.split(r"(?<!\\)\|", inner[1:-1])
    return [c.strip().replace("\\|", "|").replace("\\n", "\n").replace("\\\\", "\\") for c in cells]


def parse_feature(text: str) -> list[Scenario]:
    """Scenarios of one .feature file, Background steps prepended and Scenario Outlines expanded."""
    lines = text.splitlines()
    feature = ""
    background: _Block | None = None
    blocks: list[_Block] = []
    current: _Block | None = None
    in_examples = False
    last_keyword = "Given"
    i = 0
    while i < len(lines):
        raw = lines[i]
        line = raw.strip()
        i += 1
        if not line or line.startswith(("#", "@")):
            continue
        head, _, rest = line.partition(":")
        if head == "Feature":
            feature = rest.strip()
            continue
        if head == "Background":
            background = current = _Block("Background", i)
            in_examples = False
            continue
        if head in ("Scenario", "Example", "Scenario Outline", "Scenario Template"):
            current = _Block(rest.strip(), i, outline=head in ("Scenario Outline", "Scenario Template"))
            blocks.append(current)
            in_examples = False
            continue
        if head in ("Examples", "Scenarios"):
            if current is None or not current.outline:
                raise ValueError(f"line {i}: Examples outside a Scenario Outline")
            current.examples.append([])
            in_examples = True
            continue
        if line.startswith(('"""', "```")):
            fence = line[:3]
            indent = len(raw) - len(raw.lstrip())
            body: list[str] = []
            while i < len(lines) and lines[i].strip() != fence:
                content = lines[i]
                strip = min(indent, len(content) - len(content.lstrip()))
                body.append(content[strip:])
                i += 1
            if i >= len(lines):
                raise ValueError(f"unterminated docstring in feature {feature!r}")
            i += 1
            if current is None or not current.steps:
                raise ValueError(f"line {i}: docstring without a step")
            current.steps[-1].docstring = "\n".join(body)
            continue
        if line.startswith("|"):
            if current is None:
                raise ValueError(f"line {i}: table outside a scenario")
            if in_examples:
                current.examples[-1].append(_cells(line))
            elif current.steps:
                step = current.steps[-1]
                step.table = (step.table or []) + [_cells(line)]
            else:
                raise ValueError(f"line {i}: table without a step")
            continue
        word = line.split(" ", 1)[0]
        if word in STEP_KEYWORDS and current is not None and not in_examples:
            keyword = last_keyword if word in ("And", "But", "*") else word
            last_keyword = keyword
            current.steps.append(Step(keyword, line[len(word):].strip()))
            continue
        if current is not None and current.steps:
            raise ValueError(f"line {i}: cannot read {line!r}")
        # free-form description text below Feature: or Scenario:
    return [s for block in blocks for s in _expand(feature, block, background)]


def _substitute(text: str, row: dict[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: row.get(m.group(1), m.group(0)), text)


def _expand(feature: str, block: _Block, background: _Block | None) -> list[Scenario]:
    prefix = list(background.steps) if background else []
    if not block.outline:
        return [Scenario(feature, block.name, prefix + block.steps, block.line)]
    out = []
    for table in block.examples:
        header, *rows = table
        for cells in rows:
            row = dict(zip(header, cells))
            steps = [Step(s.keyword, _substitute(s.text, row),
                          None if s.docstring is None else _substitute(s.docstring, row),
                          None if s.table is None else [[_substitute(c, row) for c in r] for r in s.table])
                     for s in block.steps]
            out.append(Scenario(feature, _substitute(block.name, row), prefix + steps, block.line))
    return out


def table_map(table: list[list[str]] | None) -> list[tuple[str, str]]:
    """A `| key | value |` table (first row is the header) as ordered pairs."""
    if not table:
        raise ValueError("step has no table")
    header, *rows = table
    if [h.lower() for h in header] != ["key", "value"]:
        raise ValueError(f"expected a | key | value | table, found header {header}")
    return [(row[0], row[1]) for row in rows]


def parse_http_message(text: str) -> dict[str, Any]:
    """An HTTP/1.1 request or response written out as text -> recorded HTTP message (section 7)."""
    head, _, body = text.partition("\n\n")
    start, *header_lines = head.splitlines()
    record: dict[str, Any] = {"protocol": "HTTP"}
    parts = start.split()
    if not parts[0].startswith("HTTP/"):
        method, target = parts[0], parts[1]
        path, _, query = target.partition("?")
        record["method"] = method
        record["path"] = path
        if query:
            record["query"] = [pair.split("=", 1) if "=" in pair else [pair, ""] for pair in query.split("&")]
    headers = []
    for line in header_lines:
        name, _, value = line.partition(":")
        headers.append([name.strip(), value.strip()])
    record["headers"] = headers
    record["body"] = body
    return record


# --- encoders: one CloudEvent -> a recorded message per binding ------------------------------------

PROTOCOL_MODES = (
    ("KAFKA", "binary"), ("KAFKA", "structured"),
    ("MQTT/5.0", "binary"), ("MQTT/5.0", "structured"),
    ("MQTT/3.1.1", "structured"),
    ("AMQP/1.0", "binary"), ("AMQP/1.0", "structured"),
    ("NATS", "binary"), ("NATS", "structured"),
    ("HTTP", "binary"), ("HTTP", "structured"),
)
STRUCTURED_JSON = "application/cloudevents+json; charset=UTF-8"
# endpoint ids of tests/documents/cloudevents/bindings.xreg.json
ENDPOINTS = {"KAFKA": "cebindings.kafka", "MQTT/5.0": "cebindings.mqtt5", "MQTT/3.1.1": "cebindings.mqtt311",
             "AMQP/1.0": "cebindings.amqp", "NATS": "cebindings.nats", "HTTP": "cebindings.http"}


def percent_encode(value: str) -> str:
    """HTTP / NATS binding 3.1.3.2: space, double-quote, percent and anything outside U+0021..U+007E."""
    out = []
    for char in value:
        if char in ' "%' or not "\u0021" <= char <= "\u007e":
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8"))
        else:
            out.append(char)
    return "".join(out)


def canonical(value: Any) -> str:
    """A CloudEvents attribute value in its canonical string form (spec.md type system)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)


def is_json_media(content_type: str | None) -> bool:
    """json-format.md 3.1: `*/json` or `*/*+json` (parameters ignored); absent means JSON."""
    if content_type is None:
        return True
    kind = content_type.split(";", 1)[0].strip().lower()
    return kind.endswith(("/json", "+json"))


def structured_body(attributes: dict[str, Any], data: Any, data_text: str | None = None) -> str:
    """The JSON event format: attributes as members, `data` as a JSON value or a string."""
    event: dict[str, Any] = dict(attributes)
    if data_text is not None:
        event["data"] = json.loads(data_text) if is_json_media(attributes.get("datacontenttype")) else data_text
    elif data is not None:
        event["data"] = data
    return json.dumps(event)


def encode(protocol: str, mode: str, attributes: dict[str, Any], data: Any = None, *,
           data_text: str | None = None, amqp_separator: str = "_") -> dict[str, Any]:
    """Recorded message carrying one CloudEvent. Binary mode body: `data_text` as is, else JSON of `data`."""
    record: dict[str, Any] = {"endpoint": ENDPOINTS[protocol], "protocol": protocol}
    content_type = attributes.get("datacontenttype")
    others = {k: v for k, v in attributes.items() if k != "datacontenttype"}
    if mode == "structured":
        record["body"] = structured_body(attributes, data, data_text)
    else:
        record["body"] = data_text if data_text is not None else (None if data is None else json.dumps(data))
    if protocol == "KAFKA":
        record.update(topic="mytopic", partition=0, key="mykey", timestamp=1522900584000)
        if mode == "structured":
            record["headers"] = [["content-type", STRUCTURED_JSON]]
        else:
            record["headers"] = [[f"ce_{k}", canonical(v)] for k, v in others.items()]
            if content_type is not None:
                record["headers"].append(["content-type", content_type])
    elif protocol.startswith("MQTT"):
        record.update(topic_name="mytopic", qos=1, retain=False)
        if protocol == "MQTT/5.0":
            if mode == "structured":
                record["content_type"] = STRUCTURED_JSON
                record["user_properties"] = []
            else:
                record["user_properties"] = [{"name": k, "value": canonical(v)} for k, v in others.items()]
                if content_type is not None:
                    record["content_type"] = content_type
    elif protocol == "AMQP/1.0":
        record["properties"] = {"message-id": "m-1", "to": "myqueue"}
        if mode == "structured":
            record["properties"]["content-type"] = STRUCTURED_JSON
            record["application-properties"] = {}
        else:
            record["application-properties"] = {f"cloudEvents{amqp_separator}{k}": _amqp_value(v)
                                                for k, v in others.items()}
            if content_type is not None:
                record["properties"]["content-type"] = content_type
    elif protocol == "NATS":
        record["subject"] = "mySubject"
        if mode == "structured":
            record["headers"] = [["Content-Type", STRUCTURED_JSON]]
        else:
            # NATS maps datacontenttype to ce-datacontenttype like any other attribute (binding 3.1.3.1)
            record["headers"] = [[f"ce-{k}", percent_encode(canonical(v))] for k, v in attributes.items()]
    else:
        record.update(method="POST", path="/someresource")
        if mode == "structured":
            record["headers"] = [["Content-Type", STRUCTURED_JSON]]
        else:
            record["headers"] = [[f"ce-{k}", percent_encode(canonical(v))] for k, v in others.items()]
            if content_type is not None:
                record["headers"].append(["Content-Type", content_type])
    if record["body"] is None:
        del record["body"]
    return record


def _amqp_value(value: Any) -> Any:
    """AMQP keeps native types (binding 3.1.3.2): bytes become the recorded form's {"base64": ...}."""
    if isinstance(value, (bytes, bytearray)):
        return {"base64": base64.b64encode(bytes(value)).decode("ascii")}
    return value
