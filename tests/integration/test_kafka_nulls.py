"""Null stays null through a Kafka to Kafka route on Apache Kafka (issue 35, item 9): a conformant record with
a null header value is forwarded with that header still null (the record lane), and a tombstone (null value)
that is dead-lettered is still a tombstone at the dead-letter topic (the Envelope path), so log compaction
and consumers see what the producer sent."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from gateway.envelope import Envelope
from protocol_adapters import registry as adapters
from tests.integration.harness import Collector, Gateway, prepare, wait_until_live
from tests.integration.profiles import PROFILES
from tests.integration.traffic import TYPE

pytestmark = pytest.mark.integration


def _event(number: int, body: bytes, *, tombstone: bool = False, null_header: bool = False) -> Envelope:
    headers: list[tuple[str, bytes]] = [("ce_specversion", b"1.0"), ("ce_id", f"null-{number}".encode()),
                                        ("ce_source", b"/it/1"), ("ce_type", TYPE.encode()),
                                        ("content-type", b"application/json")]
    fields: dict[str, Any] = {"headers": headers, "key": f"device-{number}".encode()}  # tombstones carry keys
    if null_header:
        headers.append(("trace", b""))
        fields["null_headers"] = (len(headers) - 1,)  # produced as a null value (protocol_adapters/kafka/mapping.py)
    if tombstone:
        fields["tombstone"] = True
    return Envelope("KAFKA", fields, body)


def _by_id(envelopes: list[Envelope], number: int) -> Envelope | None:
    for envelope in envelopes:
        if ("ce_id", f"null-{number}".encode()) in envelope.fields["headers"]:
            return envelope
    return None


def test_null_header_values_and_tombstones_stay_null(tmp_path: Path) -> None:
    world = prepare(PROFILES["KAFKA"], tmp_path)

    async def main() -> tuple[Envelope, Envelope]:
        async with Collector(world) as collector:
            gateway = Gateway(world.config_dir)
            try:
                await wait_until_live(world, collector)
                async with adapters.create_sink(world.config("in")) as sink:
                    await sink.send(_event(1, json.dumps({"seq": 1, "v": 1}).encode(), null_header=True))
                    await sink.send(_event(2, b"", tombstone=True))
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    forwarded = _by_id(collector.envelopes["valid"], 1)
                    lettered = _by_id(collector.envelopes["dlq"], 2)
                    if forwarded is not None and lettered is not None:
                        return forwarded, lettered
                    await asyncio.sleep(0.1)
                raise AssertionError(f"not routed: {collector.envelopes}")
            finally:
                assert gateway.stop() == 0, gateway.output()[-3000:]

    forwarded, lettered = asyncio.run(main())
    names = [name for name, _ in forwarded.fields["headers"]]
    assert forwarded.fields.get("null_headers") == (names.index("trace"),)  # read back from the wire as null
    assert "tombstone" not in forwarded.fields
    assert lettered.fields.get("tombstone") is True and lettered.body == b""
    assert ("xgate-verdict", b"nonconformant") in lettered.fields["headers"]
