"""One row per protocol: how its messages carry CloudEvents and headers (validation rules 4 and 7).

Every core module that must know a protocol (name spellings, reading attributes, what a definition's
`protocoloptions` may constrain and which one it is dispatched on, re-mapping to another protocol, limits,
the recorded form, replay, the router, the adapter registry, `xgate infer`) looks its binding up here
instead of switching on the name, so a new protocol is one `Binding` row plus its adapter folder and extra.
Kafka-only features say so by name (the native core, the Spark runner, exactly-once). Plain values only: no
client library, no function of another module, so that everything may import this one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum


class AttributeValues(Enum):
    """How a binary-mode attribute value travels in its header."""

    TEXT = "text"  # UTF-8 text; bytes that are not UTF-8 stay bytes (they only match `binary`)
    PERCENT_ENCODED = "percent-encoded"  # text, quoted and percent-encoded (HTTP and NATS bindings 3.1.3.2)
    AMQP_TYPED = "amqp-typed"  # the native AMQP type or its canonical string (AMQP binding 3.1.3.2)


class Form(Enum):
    """How one protocol field is written in the recorded form (validation rule 7)."""

    VALUE = "value"  # a JSON value as it is
    BYTES = "bytes"  # UTF-8 text, or {"base64": ...}
    KEY = "key"  # Kafka's record key: `key` (text) or `key_base64`
    BYTE_HEADERS = "byte-headers"  # name -> text or {"base64": ...}; null kept
    TEXT_HEADERS = "text-headers"  # name -> text, a list of texts for a repeated name
    PROPERTIES = "properties"  # MQTT user properties: [{"name": .., "value": ..}] (or [name, value] pairs)
    SECTION = "section"  # an AMQP section: an object of typed values, binary as {"base64": ...}


class Written(Enum):
    """When record_from_envelope writes a field."""

    ALWAYS = "always"
    NOT_NONE = "not-none"
    NOT_EMPTY = "not-empty"


@dataclass(frozen=True, slots=True)
class RecordedField:
    name: str
    form: Form = Form.VALUE
    alias: str = ""  # an older spelling read too (`reply_to`, `application_properties`)
    # read as None when the record lacks it (else left out of the envelope's fields)
    always: bool = False
    written: Written = Written.NOT_NONE


class OptionKind(Enum):
    """How a `protocoloptions` entry of a message definition reads the message (validation rule 4)."""

    FIELD = "field"  # `protocoloptions.<name>`: the message field of that name
    KEY = "key"  # Kafka's record key: `key` read as text, `key_base64` as its base64
    PAIRS = "pairs"  # `protocoloptions.<name>.<entry>`: ordered (name, value) pairs (headers, properties, query)
    SECTION = "section"  # `protocoloptions.<name>.<entry>`: an entry of a map section (AMQP)


@dataclass(frozen=True, slots=True)
class OptionField:
    """One `protocoloptions` entry a message definition may constrain, in the order they are checked."""

    name: str
    kind: OptionKind = OptionKind.FIELD
    default_type: str | None = None  # the type the protocol gives the field when the document names none
    casefold: bool = False  # PAIRS: names compare case-insensitively
    decode: bool = False  # PAIRS: values are bytes, read as header text
    # for the native core's plan (gateway/compiler/lower.py): what it calls the field ("" where it does not
    # read it), and whether it reads it as header text
    reads: str = ""
    text: bool = False


@dataclass(frozen=True, slots=True)
class Binding:
    protocol: str
    family: str  # MQTT 3.1.1 and 5.0 share field names; every other protocol is its own family
    adapter: str  # its folder under protocol_adapters/, and the extra that installs its client library
    # how documents name it (validation rule 1): the name before any "/version", upper case, and the
    # versions that mean this protocol ("" for none written; "3*" any version starting with 3; (): any version)
    names: tuple[str, ...] = ()
    versions: tuple[str, ...] = ()
    # the field of open-ended name/value metadata a message carries over to another protocol ("": none)
    headers: str = ""
    headers_map: bool = False  # that field is a map (AMQP application-properties), not ordered (name, value) pairs
    header_bytes: bool = False  # header values travel as bytes (Kafka), not text
    casefold: bool = False  # header names compare case-insensitively
    # binary-mode attribute headers are named prefix + attribute; the first prefix is the one written.
    # "" (MQTT 5): unprefixed, so only names that can be attribute names are attributes. (): no binary mode
    prefixes: tuple[str, ...] = ()
    values: AttributeValues = AttributeValues.TEXT
    content_type: str = ""  # the field holding the protocol's own content type
    # its name inside that field (a header, or a key of a map section); "": the field is the value
    content_type_name: str = ""
    datacontenttype: bool = True  # binary mode: the protocol's content type is the `datacontenttype` attribute
    key: str = ""  # the field the `partitionkey` attribute becomes (Kafka's record key)
    address: str = ""  # the field, and the source position key, naming where the message was read
    addressed_sink: bool = False  # a sink takes its destination from an option named like `address`
    sink_fields: tuple[str, ...] = ()  # fields a replayed message keeps as sink options (MQTT QoS and retain)
    limited: tuple[str, ...] = ()  # fields counted against the header limits (gateway/limits.py), in order
    structured_only: bool = False  # no headers for attributes: CloudEvents travel structured (MQTT 3.1.1)
    batches: bool = False  # `application/cloudevents-batch` bodies carry several events (HTTP)
    rejects: bool = False  # the source can refuse a message to its sender (HTTP 4xx, MQTT 5 PUBACK reason code)
    fields: tuple[RecordedField, ...] = ()  # the protocol fields of validation rule 4, recorded form
    options: tuple[OptionField, ...] = ()  # what a message definition's `protocoloptions` may constrain
    discriminator: str = ""  # the option a definition without CloudEvents is dispatched on (section 6)


AMQP_SECTIONS = ("properties", "application-properties", "message-annotations", "delivery-annotations", "header",
                 "footer")
_MQTT_5 = Binding(
    "MQTT/5.0", "MQTT", "mqtt", names=("MQTT",), versions=("", "5", "5.0"), headers="user_properties",
    prefixes=("",), content_type="content_type", address="topic_name", addressed_sink=True,
    sink_fields=("qos", "retain"), limited=("user_properties",), rejects=True,
    options=(OptionField("topic_name", default_type="string"), OptionField("qos", default_type="integer"),
             OptionField("retain", default_type="boolean"), OptionField("payload_format", default_type="integer"),
             OptionField("message_expiry_interval", default_type="integer"),
             OptionField("response_topic", default_type="string"), OptionField("content_type", default_type="string"),
             OptionField("correlation_data", default_type="binary"),
             OptionField("user_properties", OptionKind.PAIRS)),
    discriminator="protocoloptions.topic_name",
    fields=(*(RecordedField(name) for name in ("topic_name", "qos", "retain", "content_type", "payload_format",
                                               "message_expiry_interval", "response_topic")),
            RecordedField("correlation_data", Form.BYTES),
            RecordedField("user_properties", Form.PROPERTIES, always=True, written=Written.NOT_EMPTY)))
# HTTP/1.1 connection headers (RFC 9110 7.6.1) and the framing ones: they describe the hop, not the message
_CONNECTION_HEADERS = ("host", "content-length", "connection", "transfer-encoding", "keep-alive", "upgrade", "te",
                       "trailer", "proxy-connection")

BINDINGS: dict[str, Binding] = {binding.protocol: binding for binding in (
    Binding("KAFKA", "KAFKA", "kafka", names=("KAFKA",), headers="headers", header_bytes=True, prefixes=("ce_",),
            content_type="headers", content_type_name="content-type", key="key", address="topic",
            addressed_sink=True, limited=("headers",),
            # a Kafka timestamp is int64 milliseconds: far beyond the 32-bit `integer` range of section 5.3
            options=(OptionField("topic", default_type="string", reads="topic"),
                     OptionField("partition", default_type="integer", reads="partition"),
                     OptionField("timestamp", default_type="number", reads="timestamp"),
                     OptionField("key", OptionKind.KEY, "string", reads="key", text=True),
                     OptionField("key_base64", OptionKind.KEY, "binary", reads="key_base64", text=True),
                     OptionField("headers", OptionKind.PAIRS, decode=True, reads="header", text=True)),
            discriminator="protocoloptions.topic",
            fields=(RecordedField("topic", always=True), RecordedField("partition", always=True),
                    RecordedField("timestamp", always=True), RecordedField("key", Form.KEY, always=True),
                    RecordedField("headers", Form.BYTE_HEADERS, always=True, written=Written.ALWAYS))),
    replace(_MQTT_5, protocol="MQTT/3.1.1", versions=("3*",), headers="", prefixes=(), rejects=False,
            structured_only=True),
    _MQTT_5,
    Binding("AMQP/1.0", "AMQP/1.0", "amqp", names=("AMQP",), versions=("", "1.0", "1"),
            headers="application-properties", headers_map=True,
            prefixes=("cloudEvents_", "cloudEvents:"), values=AttributeValues.AMQP_TYPED,
            content_type="properties", content_type_name="content-type",
            limited=("application-properties", "message-annotations", "delivery-annotations", "footer"),
            options=tuple(OptionField(name, OptionKind.SECTION) for name in AMQP_SECTIONS),
            discriminator="protocoloptions.properties.subject",
            fields=tuple(RecordedField(name, Form.SECTION, alias=name.replace("-", "_") if "-" in name else "",
                                       written=Written.NOT_EMPTY) for name in AMQP_SECTIONS)),
    # the NATS binding maps no `datacontenttype` to its Content-Type header
    Binding("NATS", "NATS", "nats", names=("NATS",), headers="headers", casefold=True, prefixes=("ce-",),
            values=AttributeValues.PERCENT_ENCODED, content_type="headers", content_type_name="Content-Type",
            datacontenttype=False, address="subject", addressed_sink=True, limited=("headers",),
            options=(OptionField("subject", default_type="string"), OptionField("reply-to", default_type="string"),
                     OptionField("headers", OptionKind.PAIRS, casefold=True)),
            discriminator="protocoloptions.subject",
            fields=(RecordedField("subject", always=True, written=Written.ALWAYS),
                    RecordedField("reply-to", alias="reply_to", always=True, written=Written.NOT_EMPTY),
                    RecordedField("headers", Form.TEXT_HEADERS, always=True, written=Written.ALWAYS))),
    Binding("HTTP", "HTTP", "http", names=("HTTP", "HTTPS"), headers="headers", casefold=True, prefixes=("ce-",),
            values=AttributeValues.PERCENT_ENCODED, content_type="headers", content_type_name="Content-Type",
            address="path", limited=("headers", "query"), batches=True, rejects=True,
            options=(OptionField("method", default_type="string"), OptionField("path", default_type="string"),
                     OptionField("headers", OptionKind.PAIRS, casefold=True), OptionField("query", OptionKind.PAIRS)),
            discriminator="protocoloptions.path",
            fields=(RecordedField("method", always=True), RecordedField("path", always=True),
                    RecordedField("query", Form.TEXT_HEADERS, always=True, written=Written.ALWAYS),
                    RecordedField("headers", Form.TEXT_HEADERS, always=True, written=Written.ALWAYS))),
)}


def connection_headers(binding: Binding) -> frozenset[str]:
    """Header names (lower case where names fold) that belong to the hop or to the content type field: a
    message re-mapped to another protocol does not carry them as headers."""
    named = frozenset(_CONNECTION_HEADERS) if binding.casefold else frozenset()
    if binding.content_type == binding.headers and binding.content_type_name:
        name = binding.content_type_name
        named |= {name.lower() if binding.casefold else name}
    return named
