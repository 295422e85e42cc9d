"""NATS message <-> Envelope, keeping repeated headers in order.

nats-py hands headers over as a dict: a name sent twice keeps only its last
value, and names differing in case become separate keys out of order. The
wire block (`NATS/1.0\\r\\nName: value\\r\\n...`) keeps them all, so
`HeaderKeepingClient` attaches those raw bytes to the parsed dict
(`RawHeaders.raw`) and `header_pairs` reads from them. On the way out,
`HeaderPairs` is a dict whose `items()` yields every pair, so nats-py's
publish (which writes `for name, value in headers.items()`) sends each one.

NATS fields (gateway/envelope.py): `subject`, `reply-to` (core mode: the
message's reply subject or None; JetStream mode: None, since the reply
subject there is JetStream's ack subject, not the publisher's), `headers`
(ordered (name, str) pairs, names as sent). Header values are UTF-8 text
(invalid bytes become U+FFFD, as in nats-py); nats-py trims values and turns
CR/LF into spaces when publishing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from nats.aio.client import Client
from nats.aio.msg import Msg

from gateway.envelope import Envelope

PROTOCOL = "NATS"
_CRLF = b"\r\n"


class RawHeaders(dict[str, str]):
    """nats-py's parsed headers plus the raw header block they came from."""

    __slots__ = ("raw",)

    def __init__(self, parsed: dict[str, str], raw: bytes) -> None:
        super().__init__(parsed)
        self.raw = raw


class HeaderPairs(dict[str, str]):
    """Headers for nats-py's publish: a dict (last value per name) whose items() yields every pair in order."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: Iterable[tuple[str, str]]) -> None:
        self.pairs = list(pairs)
        super().__init__(self.pairs)

    def __setitem__(self, name: str, value: str) -> None:
        # nats-py adds its own headers this way (e.g. Nats-Expected-Stream): replace every earlier value
        self.pairs = [(n, v) for n, v in self.pairs if n != name]
        self.pairs.append((name, value))
        super().__setitem__(name, value)

    # a list with repeats, where dict.items() is a view with one value per name
    def items(self) -> list[tuple[str, str]]:  # type: ignore[override]
        return list(self.pairs)


class HeaderKeepingClient(Client):
    """A nats-py client whose messages keep their raw header block (see module docstring)."""

    async def _process_headers(self, headers: Any) -> dict[str, str] | None:
        parsed = await super()._process_headers(headers)
        if parsed is None or not headers:
            return parsed
        return RawHeaders(parsed, bytes(headers))


def parse_header_block(raw: bytes) -> list[tuple[str, str]]:
    """`NATS/1.0[ status]\\r\\nName: value\\r\\n...\\r\\n\\r\\n` -> [(name, value)], repeats and order kept."""
    pairs: list[tuple[str, str]] = []
    lines = raw.split(_CRLF)
    for line in lines[1:]:  # the first line is the version (and status) line
        if not line:
            continue
        name, sep, value = line.partition(b":")
        if not sep:
            continue
        try:
            key = name.strip().decode("ascii")
        except UnicodeDecodeError:
            continue  # not a token: nats-py skips it too
        if not key or any(c.isspace() for c in key):
            continue
        pairs.append((key, value.strip().decode("utf-8", "replace")))
    return pairs


def header_pairs(headers: dict[str, str] | None) -> list[tuple[str, str]]:
    """Ordered header pairs of a received message (from the raw block when the client kept it)."""
    if headers is None:
        return []
    raw = getattr(headers, "raw", None)
    if raw is not None:
        return parse_header_block(raw)
    return [(str(name), str(value)) for name, value in headers.items()]


def envelope_from_msg(msg: Msg, endpoint: str, *, jetstream: bool) -> Envelope:
    """The Envelope of a received message; `ack` is the nats-py Msg (JetStream acks go to its reply subject)."""
    fields: dict[str, Any] = {
        "subject": msg.subject,
        "reply-to": None if jetstream else (msg.reply or None),
        "headers": header_pairs(msg.headers),
    }
    if jetstream:
        metadata = msg.metadata
        position: dict[str, Any] = {"subject": msg.subject, "stream": metadata.stream,
                                    "stream_seq": metadata.sequence.stream}
    else:
        position = {"subject": msg.subject}
    return Envelope(PROTOCOL, fields, msg.data, endpoint=endpoint, position=position, ack=msg)


def _text(value: Any) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    return value if isinstance(value, str) else str(value)


def outgoing_headers(envelope: Envelope) -> HeaderPairs | None:
    """The envelope's `headers` as nats-py publish headers (None when there are none: a plain PUB)."""
    pairs = envelope.fields.get("headers")
    if not pairs:
        return None
    headers = HeaderPairs((str(name), _text(value)) for name, value in pairs if value is not None)
    return headers if headers.pairs else None


def outgoing_reply(envelope: Envelope) -> str:
    """The reply subject to publish with (core mode), or "" for none."""
    reply = envelope.fields.get("reply-to")
    return reply if isinstance(reply, str) else ""
