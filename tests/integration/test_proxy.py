"""`xgate proxy` in front of Apache Kafka (deploy/brokers/kafka.sh): clients connect to the proxy as to a
cluster; a batch holding a record that breaks its contract is refused in the produce response and never
reaches the topic; everything conformant lands once; consumers read through the proxy as directly."""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from gateway.recorded import envelope_from_record
from protocol_adapters.kafka.mapping import outgoing_record
from tests.integration import traffic as it_traffic
from tests.integration.harness import start_broker
from tests.integration.proxy_harness import BROKER, ProxyProcess, config, fresh, produce_each, proxy_port, read_all

pytestmark = pytest.mark.integration


def test_reject_refuses_each_nonconformant_batch_and_lands_every_conformant_one(tmp_path: Path) -> None:
    start_broker("kafka")
    topics = fresh(uuid.uuid4().hex[:8])
    port = proxy_port()
    proxy = ProxyProcess(config(tmp_path, topics, port), port)
    try:
        records = it_traffic.mixed("KAFKA", 70)
        outcomes = asyncio.run(produce_each(f"127.0.0.1:{port}", topics["in"], records))
        kinds = [it_traffic.kind_of_record(r) for r in records]
        for kind, outcome in zip(kinds, outcomes, strict=True):
            conformant = it_traffic.DESTINATION_OF_KIND[kind] == "valid"
            assert (outcome is None) == conformant, f"{kind}: {outcome!r}"
        accepted = [outgoing_record(envelope_from_record(r)).value for r, o in zip(records, outcomes) if o is None]
        assert 0 < len(accepted) < len(records)
        # directly from the broker and through the proxy: exactly the conformant records, once each, in order
        direct = asyncio.run(read_all(BROKER, topics["in"], len(accepted)))
        through = asyncio.run(read_all(f"127.0.0.1:{port}", topics["in"], len(accepted)))
        assert [m.value for m in direct] == accepted
        assert [m.value for m in through] == accepted
    finally:
        log = proxy.stop()
    assert f"{len(records) - len(accepted)} refused" in log, log


def test_observe_lands_everything_and_copies_nonconformant_records_to_the_dead_letter_topic(tmp_path: Path) -> None:
    start_broker("kafka")
    topics = fresh(uuid.uuid4().hex[:8])
    port = proxy_port()
    labels = {"xgate.route.policy": "observe", "xgate.route.nonconformant": "dlq",
              "xgate.route.unmatched": "unknown"}
    proxy = ProxyProcess(config(tmp_path, topics, port, labels), port)
    try:
        records = it_traffic.mixed("KAFKA", 35)
        outcomes = asyncio.run(produce_each(f"127.0.0.1:{port}", topics["in"], records))
        assert outcomes == [None] * len(records)
        values = [outgoing_record(envelope_from_record(r)).value for r in records]
        landed = asyncio.run(read_all(BROKER, topics["in"], len(records)))
        assert [m.value for m in landed] == values
        assert_copied(records, topics)
    finally:
        proxy.stop()


def test_reject_copies_what_it_refused_to_the_dead_letter_topics_the_route_names(tmp_path: Path) -> None:
    start_broker("kafka")
    topics = fresh(uuid.uuid4().hex[:8])
    port = proxy_port()
    labels = {"xgate.route.nonconformant": "dlq", "xgate.route.unmatched": "unknown"}
    proxy = ProxyProcess(config(tmp_path, topics, port, labels), port)
    try:
        records = it_traffic.mixed("KAFKA", 35)
        outcomes = asyncio.run(produce_each(f"127.0.0.1:{port}", topics["in"], records))
        conformant = [outgoing_record(envelope_from_record(r)).value for r, o in zip(records, outcomes) if o is None]
        assert 0 < len(conformant) < len(records)
        assert [m.value for m in asyncio.run(read_all(BROKER, topics["in"], len(conformant)))] == conformant
        assert_copied(records, topics)
    finally:
        proxy.stop()


def assert_copied(records: list[dict[str, Any]], topics: dict[str, str]) -> None:
    """Each nonconformant record copied to the dead-letter topic of its kind (`dlq` or `unknown`), with the
    `xgate-*` headers of a dead letter, and nothing else there."""
    for name in ("dlq", "unknown"):
        wanted = [outgoing_record(envelope_from_record(r)).value for r in records
                  if it_traffic.DESTINATION_OF_KIND[it_traffic.kind_of_record(r)] == name]
        assert wanted, name
        copies = asyncio.run(read_all(BROKER, topics[name], len(wanted)))
        assert sorted(m.value for m in copies) == sorted(wanted)
        for copy in copies:
            headers = dict(copy.headers)
            assert headers["xgate-verdict"] == b"nonconformant"
            assert headers["xgate-source-endpoint"] == b"in"
            assert json.loads(headers["xgate-violations"])


def test_workers_share_the_listeners_and_their_counts_add_up(tmp_path: Path) -> None:
    """`--workers 2`: two processes on the same listeners (SO_REUSEPORT) under one supervisor, whose /metrics
    is both workers' counts combined."""
    start_broker("kafka")
    topics = fresh(uuid.uuid4().hex[:8])
    port = proxy_port()
    proxy = ProxyProcess(config(tmp_path, topics, port), port, "--workers", "2")
    try:
        deadline = time.monotonic() + 60
        while proxy.scrape("/readyz")[0] != 200:  # every worker ready
            assert time.monotonic() < deadline, proxy.output()
            time.sleep(0.2)
        records = it_traffic.mixed("KAFKA", 28)
        # four clients, four connections each way: the kernel spreads them over the workers
        outcomes = [o for part in range(4) for o in asyncio.run(
            produce_each(f"127.0.0.1:{port}", topics["in"], records[part::4]))]
        refused = sum(1 for outcome in outcomes if outcome is not None)
        conformant = sum(1 for r in records if it_traffic.DESTINATION_OF_KIND[it_traffic.kind_of_record(r)] == "valid")
        assert refused == len(records) - conformant
        deadline = time.monotonic() + 10
        while True:  # the supervisor's exposition follows the workers' within a poll
            text = proxy.scrape("/metrics")[1]
            counts = {verdict: float(value) for verdict, value in re.findall(
                r'^xgate_messages_total\{endpoint="in",verdict="([a-z]+)"\} ([0-9.e+]+)$', text, re.MULTILINE)}
            if sum(counts.values()) == len(records) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert counts.get("conformant") == conformant, text
        assert sum(counts.values()) == len(records), counts
        assert len(asyncio.run(read_all(BROKER, topics["in"], conformant))) == conformant
    finally:
        proxy.stop()
