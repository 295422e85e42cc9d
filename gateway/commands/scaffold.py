"""`xgate init DIR [PROTOCOL ...] [--force]`: a commented starting configuration directory.

Writes a gateway.yaml (one route per protocol, metrics and the console on loopback, remote fetching off), an
example message group with a JSON Schema (messages.xreg.yaml), and per protocol named one endpoint document
(`<protocol>.xreg.yaml`) holding a source, a destination for conformant messages and a dead-letter
destination on the local broker `make brokers` starts. Documents are YAML so that they can carry comments;
every file passes `xgate lint` as written and `xgate run --config DIR` runs it against those brokers.

Nothing is overwritten without `--force`: when a file to be written exists already, nothing is written and
the exit code is 2, naming the files.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from gateway.exit_code import ExitCode

GROUP = "example.events"

_HEADER = """\
# xRegistry endpoint document ({what}), written by `xgate init`.
# Endpoints name where messages come from (usage consumer/subscriber) and where they go (usage producer);
# the routes in gateway.yaml connect them. Broker addresses here are the local ones `make brokers` starts;
# override them per environment in gateway.yaml (`endpoints: <id>: uris: [...]`) rather than editing here.
endpoints:
"""


class _Destination(NamedTuple):
    role: str
    description: str
    options: tuple[str, ...]  # protocoloptions after `endpoints`, as YAML lines
    uri: str | None = None    # None: the source's broker


@dataclass(frozen=True)
class _Protocol:
    """What differs between the protocols' documents; the endpoints themselves are written by `_endpoint`."""

    title: str                       # in the document's header comment
    protocol: str                    # the xRegistry `protocol`
    uri: str                         # the local broker (the source's address, and its destinations')
    uri_note: str                    # a comment beside it
    usage: str                       # the source's: consumer or subscriber
    mode: str                        # how CloudEvents travel on it
    source: str                      # the source's description
    source_options: tuple[str, ...]  # its protocoloptions after `endpoints`, as YAML lines with comments
    destinations: tuple[_Destination, ...]  # `valid` (conformant), `dlq` (dead letters)


_PROTOCOLS: dict[str, _Protocol] = {
    "kafka": _Protocol(
        "Kafka", "KAFKA", "127.0.0.1:9092", "1.0-rc4 form; the older `uri: host:port` is read too",
        "consumer", "binary or structured mode",
        "Events consumed from Kafka",
        ("topic: events                    # the topic consumed",
         "consumergroup: xgate             # offsets are committed here only after delivery (at-least-once)"),
        (_Destination("valid", "Conformant events", ("topic: events-valid",)),
         _Destination("dlq", "Dead letters (original record plus xgate-verdict, xgate-violations ... headers)",
                      ("topic: events-dlq",)))),
    "mqtt": _Protocol(
        "MQTT 5.0", "MQTT/5.0", "mqtt://127.0.0.1:1883", "", "subscriber",
        "binary mode in user properties, or structured", "Events published to MQTT 5.0",
        ("topicfilter: events/#            # wildcards allowed",
         "qos: 1                           # 1 or 2 for at-least-once; the session persists across restarts",
         "clientid: xgate-init-mqtt        # must be unique per gateway replica"),
        (_Destination("valid", "Conformant events", ("topic_name: valid/events", "qos: 1")),
         _Destination("dlq", "Dead letters (original message plus xgate-* user properties)",
                      ("topic_name: dlq/events", "qos: 1")))),
    "mqtt3": _Protocol(
        "MQTT 3.1.1", "MQTT/3.1.1", "mqtt://127.0.0.1:1883", "", "subscriber",
        "structured mode: 3.1.1 has no properties to carry attributes", "Events published to MQTT 3.1.1",
        ("topicfilter: legacy/events/#", "qos: 1", "clientid: xgate-init-mqtt3"),
        (_Destination("valid", "Conformant events", ("topic_name: valid/legacy/events", "qos: 1")),
         _Destination("dlq", "Dead letters (the original message; 3.1.1 cannot carry the xgate-* headers)",
                      ("topic_name: dlq/legacy/events", "qos: 1")))),
    "amqp": _Protocol(
        "AMQP 1.0", "AMQP/1.0", "amqp://127.0.0.1:5672", "credentials go in gateway.yaml, never in a document",
        "consumer", "binary mode in application properties, or structured", "Events received over AMQP 1.0",
        ("node: /queue/events              # RabbitMQ address of a queue (declared durable when missing)",),
        (_Destination("valid", "Conformant events", ("node: /queue/events-valid",)),
         _Destination("dlq", "Dead letters (original message plus xgate-* application properties)",
                      ("node: /queue/events-dlq",)))),
    "nats": _Protocol(
        "NATS", "NATS", "nats://127.0.0.1:4222", "", "consumer", "binary mode in NATS headers, or structured",
        "Events published on NATS, read through JetStream",
        ("subject: events.>                # wildcards allowed",
         "stream: EVENTS                   # JetStream: a durable consumer, acked after delivery (without a",
         "                                 # stream, core NATS is at-most-once)"),
        (_Destination("valid", "Conformant events",
                      ("subject: valid.events",
                       "stream: EVENTS_VALID             # the publish waits for JetStream's acknowledgement")),
         _Destination("dlq", "Dead letters (original message plus xgate-* headers)",
                      ("subject: dlq.events", "stream: EVENTS_DLQ")))),
    "http": _Protocol(
        "HTTP", "HTTP", "http://127.0.0.1:8080/events",
        "xgate listens here (loopback unless the uri names another host)", "subscriber",
        "binary mode in ce-* headers, or structured",
        "Webhook ingress; with policy reject a nonconformant request is answered 422 with the violations",
        ("methods: [POST]", "maxbodysize: 1048576             # larger bodies are refused with 413"),
        (_Destination("valid", "Where conformant events are posted on to (your service)", ("method: POST",),
                      uri="http://127.0.0.1:8081/events"),)),
}


def _endpoint(endpoint_id: str, description: str, usage: str, protocol: str, uri: str,
              options: tuple[str, ...], tail: str = "", uri_note: str = "") -> str:
    # KAFKA has no `uri` in 1.0-rc4: its address is a list of bootstrap servers
    entry = f"bootstrap.servers: [{uri}]" if protocol == "KAFKA" else f"uri: {uri}"
    address = f"{entry}   # {uri_note}" if uri_note else entry
    lines = [f"  {endpoint_id}:", f"    description: {description}", f"    usage: [{usage}]",
             f"    protocol: {protocol}", "    protocoloptions:", "      endpoints:", f"        - {address}",
             *(f"      {line}" for line in options)]
    return "\n".join(lines) + "\n" + tail


def _document(name: str) -> str:
    """One protocol's endpoint document: the source `<p>.in` and its destinations."""
    p = _PROTOCOLS[name]
    source_tail = f"""\
    envelope: CloudEvents/1.0          # messages are CloudEvents ({p.mode})
    messagegroups:                     # the definitions messages from this endpoint are judged against
      - /messagegroups/{GROUP}
"""
    parts = [_endpoint(f"{name}.in", p.source, p.usage, p.protocol, p.uri, p.source_options, source_tail,
                       p.uri_note)]
    parts += [_endpoint(f"{name}.{d.role}", d.description, "producer", p.protocol, d.uri or p.uri, d.options)
              for d in p.destinations]
    return _HEADER.format(what=p.title) + "\n".join(parts)


# the message group every source endpoint refers to: one CloudEvents definition with a JSON Schema payload
_MESSAGES = """\
# xRegistry message group, written by `xgate init`: what a conformant message looks like.
# A message matches a definition when every attribute rule holds; its data must then validate against the
# schema. A message no definition applies to is `unmatched`; one that breaks a rule is `nonconformant`.
messagegroups:
  """ + GROUP + """:
    envelope: CloudEvents/1.0
    messages:
      example.reading:
        description: One sensor reading
        envelope: CloudEvents/1.0
        envelopemetadata:
          type:
            value: com.example.reading     # exact value
            required: true
          source:
            type: uritemplate              # {placeholders} match one path segment each
            value: /sites/{site}/sensors/{sensor}
            required: true
          time:
            type: timestamp                # RFC 3339
            required: true
        dataschemaformat: JsonSchema/draft-07
        dataschemauri: /schemagroups/""" + GROUP + """/schemas/reading
schemagroups:
  """ + GROUP + """:
    schemas:
      reading:
        format: JsonSchema/draft-07
        versions:
          "1":
            format: JsonSchema/draft-07
            schema:
              $schema: http://json-schema.org/draft-07/schema#
              type: object
              required: [value, unit]
              properties:
                value: {type: number, minimum: -50, maximum: 150}
                unit: {enum: [C, F]}
              additionalProperties: false
"""

_SETTINGS_HEAD = """\
# xgate settings, written by `xgate init`. Documents (*.xreg.yaml, *.xreg.json) beside this file are
# loaded and watched: edit or drop one and xgate reloads it (a broken file keeps its last good content).
# Check the directory with `xgate lint DIR`; run it with `xgate run --config DIR`.
routes:                                # one per source endpoint: where each verdict goes
"""

_ROUTE = """\
  - source: {p}.in
    conformant: {p}.valid
{dlq}    policy: {policy}
"""

_SETTINGS_TAIL = """\
{endpoints}runtime:
  inflight: 4000                       # messages on their way per route: the backpressure window
  drain_timeout: 30                    # seconds SIGTERM waits for messages in flight
  metrics_address: 127.0.0.1:9464      # /metrics, /healthz, /readyz and /registry; loopback by default
remote:
  allow: []                            # hosts http(s) references may be fetched from; none: nothing is fetched
console:                               # the web console at http://127.0.0.1:9464/ui (metrics_address), read-only;
  show_bodies: true                    # payloads shown: this address is loopback (set false, or redact paths)
"""

_AMQP_CREDENTIALS = """\
endpoints:                             # connection settings documents never carry: credentials, TLS, uris
{ids}"""

_AMQP_ENDPOINT = """\
  {id}:
    username: ${{XGATE_AMQP_USER:-guest}}        # ${{VAR}} and ${{VAR:-default}} read the environment
    password: ${{XGATE_AMQP_PASSWORD:-guest}}    # or password_file: /run/secrets/amqp
"""

PROTOCOLS = tuple(_PROTOCOLS)
DEFAULT_PROTOCOLS = ("kafka", "mqtt", "amqp", "nats", "http")


def _route(protocol: str) -> str:
    if protocol == "http":  # the sender hears of a nonconformant request (422), so no dead-letter destination
        return _ROUTE.format(p=protocol, dlq="", policy="reject              # 422 to the sender, with the "
                             "violations")
    return _ROUTE.format(p=protocol, dlq=f"    nonconformant: {protocol}.dlq     # dead letters, with the reason\n",
                         policy="forward")


def render(protocols: tuple[str, ...]) -> dict[str, str]:
    """Every file of the scaffold by name, in the order written."""
    files = {"gateway.yaml": _settings(protocols), "messages.xreg.yaml": _MESSAGES}
    for protocol in protocols:
        files[f"{protocol}.xreg.yaml"] = _document(protocol)
    return files


def _settings(protocols: tuple[str, ...]) -> str:
    amqp = "".join(_AMQP_ENDPOINT.format(id=f"amqp.{role}") for role in ("in", "valid", "dlq")) \
        if "amqp" in protocols else ""
    endpoints = _AMQP_CREDENTIALS.format(ids=amqp) if amqp else ""
    return _SETTINGS_HEAD + "".join(_route(p) for p in protocols) + _SETTINGS_TAIL.format(endpoints=endpoints)


def _protocols(named: list[str]) -> tuple[str, ...] | str:
    """The protocols asked for, in PROTOCOLS order without repeats, or the error message."""
    wanted = [p.lower() for p in named] or list(DEFAULT_PROTOCOLS)
    unknown = sorted({p for p in wanted if p not in PROTOCOLS})
    if unknown:
        return f"unknown protocol {', '.join(map(repr, unknown))}; choose from {', '.join(PROTOCOLS)}"
    return tuple(p for p in PROTOCOLS if p in wanted)


def cmd_init(args: argparse.Namespace) -> ExitCode:
    protocols = _protocols(args.protocols)
    if isinstance(protocols, str):
        print(f"xgate init: {protocols}", file=sys.stderr)
        return ExitCode.USAGE
    target = Path(args.directory)
    if target.exists() and not target.is_dir():
        print(f"xgate init: {target} exists and is not a directory", file=sys.stderr)
        return ExitCode.USAGE
    files = render(protocols)
    existing = [name for name in files if (target / name).exists()]
    if existing and not args.force:
        print(f"xgate init: {target} already holds {', '.join(existing)}; nothing was written "
              "(--force overwrites them)", file=sys.stderr)
        return ExitCode.USAGE
    target.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (target / name).write_text(text, "utf-8")
    print(f"wrote {len(files)} files to {target}: {', '.join(files)}")
    print(f"next: xgate lint {target}    then: xgate run --config {target}  (brokers: make brokers)")
    return ExitCode.OK


def add_command(commands: Any) -> None:
    init = commands.add_parser("init", help="write a commented configuration directory to start from")
    init.add_argument("directory", metavar="DIR", help="where to write (created when missing)")
    init.add_argument("protocols", nargs="*", metavar="PROTOCOL",
                      help=f"endpoint documents to write: {', '.join(PROTOCOLS)} "
                           f"(default: {' '.join(DEFAULT_PROTOCOLS)})")
    init.add_argument("--force", action="store_true", help="overwrite files that exist")
    init.set_defaults(handler=cmd_init)
