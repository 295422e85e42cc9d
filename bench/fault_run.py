"""Fault run (issue 17 acceptance): the demo's routes under steady load while things go wrong, every message
accounted for.

    python -m bench.fault_run [--minutes 2] [--rate 100] [--config config/demo]

`xgate run` (one process, started once, never restarted) serves a copy of config/demo whose topics,
subjects, queues, groups and ports are renamed for this run (other runs on the shared brokers see none
of it). Seeded demo traffic flows into every source endpoint at --rate messages a second, over every
protocol pair the demo routes (HTTP -> AMQP, AMQP -> AMQP, MQTT 5 -> Kafka/NATS, NATS -> Kafka/NATS,
Kafka -> Kafka). Meanwhile:

- every 1,000th message is oversized: its body is replaced by a JSON body just under what its source
  takes (1,048,573 bytes over HTTP, MQTT and AMQP; 1 MiB less room for the message's own headers over NATS
  and Kafka), so that the dead letter, with xgate's headers added, no longer fits a 1 MiB destination;
- every 30 s a broken document is dropped into the config directory (the one before it removed):
  invalid JSON, an HTTP endpoint whose `maxbodysize` is `1MB` routed by labels, a route whose
  destination does not exist;
- at 40 % of the run, the NATS dead-letter destination (reached through a relay of this script) is cut
  for 25 s: its connections are closed and new ones refused.

Every destination is read with the protocol's own source adapter and every message is looked up by its
body (delivered copies anywhere, or refused to the sender by the HTTP route's `reject` policy). The report
says what was lost, where each oversized message went (or which `xgate_` counters grew meanwhile), how
many reloads failed, whether the process stayed the same one and exited 0 on SIGTERM, and how long
/readyz took to turn false after the cut. Exit 0 only when every criterion holds. Results:
bench/results/fault_run.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.results import save
from gateway.envelope import Envelope
from gateway.errors import AdapterError
from gateway.loader import load_snapshot
from gateway.ports import ephemeral_port
from gateway.recorded import envelope_from_record
from gateway.routes.resolve import endpoint_config, resolve_routes
from gateway.runtime.replay import Replayer
from gateway.settings import load_settings
from gateway.testing.demo import LocalBrokers
from gateway.testing.traffic import records
from protocol_adapters import registry as adapters

REPO = Path(__file__).resolve().parents[1]
OVERSIZED_EVERY = 1000
# bodies just under what each source takes (issue 17: "one byte under the source limit"): the webhook's
# maxbodysize and xgate's max_body_bytes are 1 MiB, Mosquitto and RabbitMQ take more; a NATS publish must fit
# max_payload (1 MiB) with its headers, a Kafka record the producer's max_request_size (1 MiB) with its own
OVERSIZED = {"HTTP": 1_048_573, "MQTT/5.0": 1_048_573, "AMQP/1.0": 1_048_573, "NATS": 1_048_576 - 512,
             "KAFKA": 1_048_576 - 1024}
BROKEN_EVERY = 30.0
CUT_AT, CUT_FOR = 0.4, 25.0  # fraction of the run, seconds
READY_WITHIN = 10.0
SETTLE = 300.0  # at most, seconds after the traffic for the gateway's backlog to drain and arrive
QUIET = 30.0  # ... and it has drained when neither the gateway judged nor a reader read anything for this long
# Kafka readers notice a member that left soon: the smallest session timeout Apache Kafka accepts
KAFKA_READER = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500, "rebalance_timeout_ms": 6000}


# -- the configuration of this run ---------------------------------------------------------------------------
def renamer(run: str, http_port: int) -> list[tuple[str, str]]:
    return [("xgate-demo", f"xgate-fault-{run}"), ("XGATE_DEMO", f"XGATE_FAULT_{run.upper()}"),
            ("facility/", f"fault{run}/facility/"), ("facility.doors.", f"fault{run}.facility.doors."),
            ("127.0.0.1:8088", f"127.0.0.1:{http_port}")]


def prepare(source: Path, target: Path, run: str, http_port: int, relay_port: int) -> None:
    """Copy the demo config with this run's names; the NATS dead-letter destination goes through the relay."""
    target.mkdir(parents=True)
    for path in source.iterdir():
        if not path.is_file():  # the demo's shadow/ candidate: not part of the routes under test
            continue
        text = path.read_text()
        for old, new in renamer(run, http_port):
            text = text.replace(old, new)
        (target / path.name).write_text(text)
    import yaml
    settings_file = target / "gateway.yaml"
    settings = yaml.safe_load(settings_file.read_text())
    settings.setdefault("endpoints", {})["facility.dlq"] = {"uris": [f"nats://127.0.0.1:{relay_port}"]}
    settings_file.write_text(yaml.safe_dump(settings, sort_keys=False))


def renamed(record: dict[str, Any], run: str) -> dict[str, Any]:
    text = json.dumps(record)
    for old, new in renamer(run, 0)[:4]:
        text = text.replace(old, new)
    return dict(json.loads(text))


def oversize(record: dict[str, Any], number: int) -> dict[str, Any]:
    """The same message with its body padded to just under its source's limit (`number` keeps bodies apart)."""
    size = OVERSIZED.get(record["protocol"], 1_048_576 - 1024)
    head = b'{"oversized": %d, "pad": "' % number
    body = head + b"x" * (size - len(head) - 2) + b'"}'
    out = {k: v for k, v in record.items() if k not in ("body", "body_base64")}
    out["body"] = body.decode()
    return out


BROKEN = [
    ("broken-json.xreg.json", '{"endpoints": {"oops": '),
    ("broken-option.xreg.json", json.dumps({"endpoints": {
        "fault.http": {"usage": ["subscriber"], "protocol": "HTTP",
                       "protocoloptions": {"endpoints": [{"uri": "http://127.0.0.1:1/x"}], "maxbodysize": "1MB"},
                       "labels": {"xgate.route.conformant": "orders.accepted"}}}})),
    ("broken-route.xreg.json", json.dumps({"endpoints": {
        "fault.nats": {"usage": ["subscriber"], "protocol": "NATS",
                       "protocoloptions": {"endpoints": [{"uri": "nats://127.0.0.1:4222"}], "subject": "fault.x"},
                       "labels": {"xgate.route.conformant": "no.such.destination"}}}})),
]


# -- a relay the run can cut -----------------------------------------------------------------------------------
class Relay:
    """127.0.0.1:port -> target; `cut()` closes every connection and refuses new ones until `mend()`."""

    def __init__(self, port: int, target: int) -> None:
        self.port, self.target = port, target
        self.open = True
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.open:
            writer.close()
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, upstream_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while chunk := await src.read(65536):
                    dst.write(chunk)
                    await dst.drain()
            dst.close()
        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))
        self._writers -= {writer, upstream_writer}

    def cut(self) -> None:
        self.open = False
        for writer in list(self._writers):
            writer.transport.abort()

    def mend(self) -> None:
        self.open = True

    def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()


# -- traffic and accounting ----------------------------------------------------------------------------------
class Publisher(Replayer):
    """A Replayer that remembers which bodies the endpoint refused for good (HTTP 422 under `reject`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.refused_bodies: Counter[bytes] = Counter()
        self.failed_bodies: Counter[bytes] = Counter()
        self.errors: Counter[str] = Counter()

    async def _send(self, sink: Any, message: Envelope) -> None:
        deadline = time.monotonic() + 30
        try:
            while True:
                try:
                    await sink.send(message)
                    self.result.sent += 1
                    return
                except AdapterError as exc:
                    if exc.retriable and time.monotonic() < deadline:
                        await asyncio.sleep(0.2)
                        continue
                    refused = "422" in str(exc)
                    (self.refused_bodies if refused else self.failed_bodies)[bytes(message.body)] += 1
                    self.errors[re.sub(r"\d+", "N", str(exc))[:160]] += 1
                    return
        finally:
            self._window.release()


class Readers:
    """Every destination read with its protocol's own source adapter (acknowledged as read)."""

    def __init__(self) -> None:
        self.arrived: Counter[bytes] = Counter()
        self.where: dict[bytes, str] = {}
        self.last_arrival = time.monotonic()
        self._tasks: list[asyncio.Task[None]] = []

    def start(self, configs: list[Any]) -> None:
        self._tasks = [asyncio.create_task(self._read(c)) for c in configs]

    async def _read(self, config: Any) -> None:
        while True:
            try:
                async with adapters.create_source(config) as source:
                    async for envelope in source:
                        body = bytes(envelope.body)
                        self.arrived[body] += 1
                        self.where[body] = config.endpoint_id
                        self.last_arrival = time.monotonic()
                        await source.ack(envelope)
            except AdapterError as exc:
                print(f"fault run: reader {config.endpoint_id}: {exc}; reading again", file=sys.stderr)
                await asyncio.sleep(1)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def scrape(port: int, path: str = "/metrics") -> tuple[int, str]:
    import urllib.error
    import urllib.request
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:
        return 0, str(exc)


def counters(text: str) -> dict[str, float]:
    """Every xgate_ counter and gauge sample, summed over label sets, by name."""
    out: defaultdict[str, float] = defaultdict(float)
    for line in text.splitlines():
        match = re.match(r"^(xgate_[a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$", line)
        if match:
            out[match.group(1) + (match.group(2) if "outcome" in (match.group(2) or "") else "")] += \
                float(match.group(3))
    return dict(out)


# -- the run ----------------------------------------------------------------------------------------------------
class Run:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.duration = args.minutes * 60
        self.id = uuid.uuid4().hex[:6]
        self.work = Path(tempfile.mkdtemp(prefix=f"xgate-fault-{self.id}-"))
        self.config = self.work / "config"
        self.http_port, self.relay_port, self.metrics_port = ephemeral_port(), ephemeral_port(), ephemeral_port()
        prepare(Path(args.config), self.config, self.id, self.http_port, self.relay_port)
        self.snapshot = load_snapshot([self.config])
        self.settings, _ = load_settings(self.config)
        self.routes, _ = resolve_routes(self.snapshot.registry, self.settings)
        self.relay = Relay(self.relay_port, int(os.environ.get("XGATE_NATS_PORT", "4222")))
        self.readers = Readers()
        self.publishers: dict[str, Publisher] = {}
        self.expected: Counter[bytes] = Counter()
        self.oversized: dict[bytes, str] = {}  # body -> source endpoint
        self.source_of: dict[bytes, str] = {}
        self.events: list[str] = []
        self.exits: list[int] = []  # the gateway's exit codes seen while it should be running
        self.ready_after_cut: float | None = None
        self.ready_again_after_mend: float | None = None
        self.broken_dropped = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.judged_at_end: dict[str, float] = {}

    def note(self, text: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')}] {text}"
        self.events.append(line)
        print(line, file=sys.stderr, flush=True)

    def start_gateway(self) -> None:
        log = open(self.work / "gateway.log", "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gateway.cli", "run", "--config", str(self.config), "--summary", "10",
             "--metrics-address", f"127.0.0.1:{self.metrics_port}"], stdout=log, stderr=subprocess.STDOUT,
            cwd=REPO, env={**os.environ, "PYTHONUNBUFFERED": "1"})

    def destinations(self) -> list[Any]:
        ids = sorted({d.endpoint_id for r in self.routes for d in (r.conformant, r.nonconformant, r.unmatched) if d})
        configs = []
        for endpoint_id in ids:
            config = endpoint_config(self.snapshot.registry, endpoint_id, self.settings)
            uris = tuple(u.replace(f":{self.relay_port}", ":4222") for u in config.uris)  # read beside the relay
            options = dict(config.options)
            extra = dict(config.extra)
            if config.protocol == "KAFKA":
                options["consumergroup"] = f"xgate-fault-{self.id}-reader-{endpoint_id}"
                extra.update(KAFKA_READER)
            configs.append(replace(config, uris=uris, options=options, extra=extra))
        return configs

    async def traffic(self, stop: asyncio.Event) -> int:
        sent = 0
        stream = records(self.args.seed)
        per_tick = max(1, round(self.args.rate * 0.25))
        sending: set[asyncio.Task[None]] = set()  # ticks still being confirmed: the next tick does not wait for them
        async with contextlib.AsyncExitStack() as stack:
            while not stop.is_set():
                started = time.monotonic()
                batches: dict[str, list[Envelope]] = {}
                for record in itertools.islice(stream, per_tick):
                    sent += 1
                    record = renamed(record, self.id)
                    if sent % OVERSIZED_EVERY == 0:
                        record = oversize(record, sent)
                    envelope = envelope_from_record(record)
                    body = bytes(envelope.body)
                    self.expected[body] += 1
                    self.source_of[body] = record["endpoint"]
                    if sent % OVERSIZED_EVERY == 0:
                        self.oversized[body] = record["endpoint"]
                    batches.setdefault(record["endpoint"], []).append(envelope)
                for endpoint in batches:
                    if endpoint not in self.publishers:
                        config = endpoint_config(self.snapshot.registry, endpoint, self.settings)
                        self.publishers[endpoint] = await stack.enter_async_context(
                            Publisher(config, adapters.create_sink))
                for endpoint, batch in batches.items():
                    task = asyncio.create_task(self.publishers[endpoint].send_all(batch))
                    sending.add(task)
                    task.add_done_callback(sending.discard)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(max(0.0, 0.25 - (time.monotonic() - started))):
                        await stop.wait()
            if sending:
                await asyncio.gather(*sending)
        return sent

    async def broken_documents(self, stop: asyncio.Event) -> None:
        previous: Path | None = None
        for number in itertools.count():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(BROKEN_EVERY):
                    await stop.wait()
            if stop.is_set():
                break
            if previous is not None:
                previous.unlink(missing_ok=True)
            name, text = BROKEN[number % len(BROKEN)]
            previous = self.config / name
            previous.write_text(text)
            self.broken_dropped += 1
            self.note(f"dropped broken document {name}")
        if previous is not None:
            previous.unlink(missing_ok=True)

    async def cut_destination(self, stop: asyncio.Event) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.duration * CUT_AT):
                await stop.wait()
        if stop.is_set():
            return
        self.relay.cut()
        cut = time.monotonic()
        self.note(f"cut the NATS dead-letter destination (relay :{self.relay_port}) for {CUT_FOR:.0f} s")
        while time.monotonic() - cut < CUT_FOR:
            status, _ = await asyncio.to_thread(scrape, self.metrics_port, "/readyz")
            if status != 200 and self.ready_after_cut is None:
                self.ready_after_cut = round(time.monotonic() - cut, 1)
                self.note(f"/readyz answered {status} {self.ready_after_cut} s after the cut")
            await asyncio.sleep(0.5)
        self.relay.mend()
        mended = time.monotonic()
        self.note("mended the relay")
        while time.monotonic() - mended < 60:
            status, _ = await asyncio.to_thread(scrape, self.metrics_port, "/readyz")
            if status == 200:
                self.ready_again_after_mend = round(time.monotonic() - mended, 1)
                break
            await asyncio.sleep(0.5)

    async def watch_process(self, stop: asyncio.Event) -> None:
        assert self.process is not None
        while not stop.is_set():
            code = self.process.poll()
            if code is not None:
                self.exits.append(code)
                self.note(f"the gateway exited with {code} during the run (it is not restarted)")
                return
            await asyncio.sleep(0.5)

    def judged(self) -> dict[str, float]:
        """Messages the gateway judged so far, by source endpoint (xgate_messages_total)."""
        out: defaultdict[str, float] = defaultdict(float)
        for line in scrape(self.metrics_port)[1].splitlines():
            match = re.match(r'^xgate_messages_total\{endpoint="([^"]+)",[^}]*\} ([0-9.e+-]+)$', line)
            if match:
                out[match.group(1)] += float(match.group(2))
        return dict(out)

    def missing(self) -> Counter[bytes]:
        settled: Counter[bytes] = Counter()
        for publisher in self.publishers.values():
            settled.update(publisher.refused_bodies)
            settled.update(publisher.failed_bodies)
        return Counter({b: n for b, n in self.expected.items() if self.readers.arrived[b] + settled[b] < n})

    async def main(self) -> dict[str, Any]:
        brokers = LocalBrokers(self.routes)
        brokers.start()
        await self.relay.start()
        self.start_gateway()
        try:
            return await self._run()
        finally:
            if self.process is not None and self.process.poll() is None:
                self.process.kill()
            self.relay.close()
            brokers.stop()

    async def _run(self) -> dict[str, Any]:
        assert self.process is not None
        deadline = time.monotonic() + 90
        while (await asyncio.to_thread(scrape, self.metrics_port, "/readyz"))[0] != 200:
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise SystemExit(f"fault run: the gateway never became ready; log: {self.work / 'gateway.log'}")
            await asyncio.sleep(0.5)
        self.note(f"gateway ready (pid {self.process.pid}); {len(self.routes)} routes; traffic at "
                  f"{self.args.rate:g}/s for {self.duration:.0f} s; work directory {self.work}")
        before = counters((await asyncio.to_thread(scrape, self.metrics_port))[1])
        self.readers.start(self.destinations())
        stop = asyncio.Event()
        side = [asyncio.create_task(c(stop)) for c in (self.broken_documents, self.cut_destination,
                                                        self.watch_process)]
        traffic = asyncio.create_task(self.traffic(stop))
        await asyncio.sleep(self.duration)
        stop.set()
        sent = await traffic
        await asyncio.gather(*side)
        self.note(f"traffic stopped after {sent} messages; waiting for the last ones to arrive")
        settle_until = time.monotonic() + SETTLE
        judged, judged_moved = -1.0, time.monotonic()
        while self.missing() and time.monotonic() < settle_until:
            now_judged = sum(v for k, v in self.judged().items())
            if now_judged != judged:
                judged, judged_moved = now_judged, time.monotonic()
            if time.monotonic() - max(judged_moved, self.readers.last_arrival) > QUIET:
                break
            await asyncio.sleep(1)
        self.judged_at_end = self.judged()
        after = counters((await asyncio.to_thread(scrape, self.metrics_port))[1])
        alive = self.process.poll() is None
        stopped = time.monotonic()
        if alive:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = await asyncio.to_thread(self.process.wait, 120)
        except subprocess.TimeoutExpired:
            code = None
        stop_seconds = round(time.monotonic() - stopped, 1)
        await self.readers.stop()
        return self.report(sent, before, after, alive, code, stop_seconds)

    def report(self, sent: int, before: dict[str, float], after: dict[str, float], alive: bool, code: int | None,
               stop_seconds: float) -> dict[str, Any]:
        missing = self.missing()
        refused = Counter[bytes]()
        failed = Counter[bytes]()
        errors: Counter[str] = Counter()
        for publisher in self.publishers.values():
            refused.update(publisher.refused_bodies)
            failed.update(publisher.failed_bodies)
            errors.update(publisher.errors)
        by_source: dict[str, dict[str, int]] = {}
        for body, count in self.expected.items():
            if body in self.oversized:
                continue
            row = by_source.setdefault(self.source_of[body], Counter())
            row["sent"] += count
            row["refused (HTTP 422)"] += min(refused[body], count)
            row["not accepted by the source"] += min(failed[body], count)
            row["missing"] += missing[body]
        oversized = []
        for body, source in self.oversized.items():
            place = self.readers.where.get(body) if self.readers.arrived[body] else None
            fate = (f"arrived at {place}" if place else "refused (HTTP 422)" if refused[body]
                    else "not accepted by the source" if failed[body] else "not delivered")
            oversized.append({"source": source, "bytes": len(body), "fate": fate})
        grew = {k: after.get(k, 0) - before.get(k, 0) for k in after
                if after.get(k, 0) != before.get(k, 0) and re.search(r"drop|limit|oversize|too_large|undeliverable", k)}
        undelivered = sum(1 for o in oversized if o["fate"] == "not delivered")
        failed_reloads = after.get('xgate_reloads_total{outcome="failed"}', 0) - \
            before.get('xgate_reloads_total{outcome="failed"}', 0)
        for source, row in by_source.items():
            # what the gateway had not taken from the source when the run ended is still there (a backlog), not
            # lost; only messages missing beyond it can have been lost
            accepted = row["sent"] - row["not accepted by the source"]
            backlog = max(0, accepted + sum(1 for s in self.oversized.values() if s == source)
                          - int(self.judged_at_end.get(source, 0)))
            row["judged by the gateway"] = int(self.judged_at_end.get(source, 0))
            row["still at the source"] = min(backlog, row["missing"])
            row["lost"] = row["missing"] - row["still at the source"]
        lost = sum(row["lost"] for row in by_source.values())
        criteria = {
            "lost 0": lost == 0,
            "nothing left at a source": sum(r["still at the source"] for r in by_source.values()) == 0,
            "oversized dead-lettered or counted": undelivered == 0 or sum(grew.values()) >= undelivered,
            "the gateway never restarted": alive and not self.exits,
            "exit 0 on SIGTERM": code == 0,
            (f"/readyz false within {READY_WITHIN:g} s of a wedged destination"):
                self.ready_after_cut is not None and self.ready_after_cut <= READY_WITHIN,
            "every broken document a failed reload": failed_reloads >= self.broken_dropped > 0,
        }
        return {"minutes": self.args.minutes, "rate": self.args.rate, "sent": sent, "routes": len(self.routes),
                "by_source": {k: dict(v) for k, v in sorted(by_source.items())}, "oversized": oversized,
                "drop_counters_grew": grew, "broken_documents": self.broken_dropped,
                "failed_reloads": failed_reloads, "gateway_alive_at_end": alive, "gateway_exit": code,
                "stop_seconds": stop_seconds, "readyz_false_after_cut_seconds": self.ready_after_cut,
                "readyz_true_after_mend_seconds": self.ready_again_after_mend,
                "publisher_errors": dict(errors.most_common(8)), "criteria": criteria, "events": self.events,
                "gateway_log": str(self.work / "gateway.log")}


def render(result: dict[str, Any]) -> str:
    lines = [f"fault run: {result['minutes']:g} min at {result['rate']:g} msg/s, {result['sent']} messages "
             f"over {result['routes']} routes"]
    for source, row in result["by_source"].items():
        lines.append(f"  {source:<16} " + ", ".join(f"{k} {v}" for k, v in row.items()))
    for item in result["oversized"]:
        lines.append(f"  oversized from {item['source']} ({item['bytes']:,} bytes): {item['fate']}")
    lines.append(f"  drop/limit counters that grew: {result['drop_counters_grew'] or 'none'}")
    lines.append(f"  broken documents dropped: {result['broken_documents']}, failed reloads counted: "
                 f"{result['failed_reloads']:g}")
    lines.append(f"  gateway: alive to the end {result['gateway_alive_at_end']}, exit {result['gateway_exit']} "
                 f"{result['stop_seconds']} s after SIGTERM")
    lines.append(f"  /readyz after the cut: false after {result['readyz_false_after_cut_seconds']} s; true again "
                 f"{result['readyz_true_after_mend_seconds']} s after mending")
    if result["publisher_errors"]:
        lines.append(f"  publisher errors: {result['publisher_errors']}")
    for name, held in result["criteria"].items():
        lines.append(f"  [{'ok' if held else 'FAIL'}] {name}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--rate", type=float, default=40.0,
                        help="messages a second over all source endpoints (above what the gateway keeps up with, "
                             "a backlog is left at the end)")
    parser.add_argument("--config", default=str(REPO / "config" / "demo"))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the work directory (config copy, gateway log)")
    args = parser.parse_args(argv)
    run = Run(args)
    try:
        result = asyncio.run(run.main())
    finally:
        if not args.keep:
            with contextlib.suppress(OSError):
                shutil.copy(run.work / "gateway.log", REPO / "bench" / "results" / "fault_run.gateway.log") \
                    if (run.work / "gateway.log").exists() and (REPO / "bench" / "results").is_dir() else None
            shutil.rmtree(run.work, ignore_errors=True)
    save("fault_run", result)
    print(render(result))
    return 0 if all(result["criteria"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
