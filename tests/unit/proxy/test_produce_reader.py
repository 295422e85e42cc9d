"""The straight-line produce request reader gives the schema codec's dict for every request that reads, at
every version the proxy takes, and hands everything else to the codec: read_produce answers as the codec
alone would, value or WireError, over random requests and their corruptions."""

from __future__ import annotations

import random
from typing import Any

import pytest

from gateway.proxy import produce_reader, schemas
from gateway.proxy.protocol import RequestHeader, read_produce
from gateway.proxy.wire import TAGS, WireError

VERSIONS = range(3, 10)


def _request(rng: random.Random, version: int) -> dict[str, Any]:
    flexible = version >= 9

    def tagged(value: dict[str, Any]) -> dict[str, Any]:
        if flexible:  # now and then a tagged field: the codec's to read
            value[TAGS] = {7: b"t"} if rng.random() < 0.05 else {}
        return value

    def text(size: int) -> str:
        return "".join(rng.choice("abcé-_.0123456789") for _ in range(size))

    topics = [tagged({"Name": text(rng.randrange(0, 30)),
                      "PartitionData": [tagged({"Index": rng.randrange(-2, 100),
                                                "Records": None if rng.random() < 0.1 else
                                                rng.randbytes(rng.randrange(0, 3000))})
                                        for _ in range(rng.randrange(0, 5))]})
              for _ in range(rng.randrange(0, 4))]
    return tagged({"TransactionalId": None if rng.random() < 0.7 else text(rng.randrange(0, 20)),
                   "Acks": rng.choice((-1, 0, 1)), "TimeoutMs": rng.randrange(0, 60000), "TopicData": topics})


def _codec(frame: bytes, header: RequestHeader) -> dict[str, Any] | str:
    try:
        value, end = schemas.PRODUCE_REQUEST.decode(frame, header.version, header.size)
    except WireError as exc:
        return f"WireError: {exc}"
    if end != len(frame):  # as read_produce says it
        return f"WireError: ProduceRequest v{header.version}: {len(frame) - end} bytes after the message"
    return value


def _ours(frame: bytes, header: RequestHeader) -> dict[str, Any] | str:
    try:
        return read_produce(frame, header)
    except WireError as exc:
        return f"WireError: {exc}"


def _mutations(rng: random.Random, body: bytes) -> list[bytes]:
    found = [body, body + b"\x00", body[:-1] if body else body]
    for _ in range(6):
        cut = rng.randrange(0, len(body) + 1)
        found.append(body[:cut])
        if body:
            at = rng.randrange(len(body))
            found.append(body[:at] + bytes([rng.randrange(256)]) + body[at + 1:])
    return found


@pytest.mark.parametrize("version", VERSIONS)
def test_read_produce_answers_as_the_codec_alone_over_random_requests_and_their_corruptions(version: int) -> None:
    rng = random.Random(version)
    fast = 0
    for _ in range(150):
        head = b"\x00" * 7  # stands for a request header the body follows
        body = schemas.PRODUCE_REQUEST.encode(_request(rng, version), version)
        header = RequestHeader(schemas.PRODUCE, version, 1, "c", len(head))
        for mutated in _mutations(rng, body):
            frame = head + mutated
            expected = _codec(frame, header)
            assert _ours(frame, header) == expected, f"v{version}: {mutated.hex()}"
            fast += produce_reader.read(frame, header.size, version) is not None
    assert fast > 150  # the straight-line reader took the clean requests, not only the codec


def test_versions_the_reader_does_not_know_go_to_the_codec() -> None:
    body = schemas.PRODUCE_REQUEST.encode(_request(random.Random(1), 9), 9)
    assert produce_reader.read(body, 0, 9) is not None
    assert produce_reader.read(body, 0, 13) is None
    assert produce_reader.read(body, 0, 2) is None
