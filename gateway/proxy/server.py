"""`xgate proxy`'s listeners and connections: every request to the upstream broker and every response back, in
order, with produce requests judged on the way.

One listener takes the bootstrap connections (to the configured upstream servers); each upstream broker gets a
listener of its own (`ProxySettings.broker_port`), opened when a response first names that broker, so a
client's connection to each broker stays distinct. Each client connection has its own upstream connection.
Responses go back in the order the requests came (Kafka's guarantee per connection): a request answered by
the proxy itself (a produce request refused whole) waits its turn behind those still at the broker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import struct
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gateway import config_values
from gateway.proxy import protocol
from gateway.proxy.frames import FrameError, Frames, Quiet
from gateway.proxy.judging import TopicRule, judge, refusal_text
from gateway.proxy.metrics import ProxyMetrics
from gateway.proxy.protocol import CORRUPT_MESSAGE, INVALID_RECORD, UNSUPPORTED_VERSION, Refusal, RequestHeader
from gateway.proxy.schemas import API_VERSIONS, PRODUCE, READABLE
from gateway.proxy.wire import WireError
from gateway.sections.access import server_context
from gateway.sections.proxy import ProxySettings

log = logging.getLogger("xgate.proxy")
_SIZE = struct.Struct(">i")
IDLE_SECONDS = 600.0   # Kafka's own connections.max.idle.ms
PIPELINE = 256         # requests in flight on one connection before the proxy stops reading it


@dataclass
class Judging:
    """What produce requests are judged by: swapped whole on reload."""

    native: Any  # gateway.compiler.core.NativeJudge
    topics: dict[str, TopicRule]


@dataclass
class ProxyStats:
    connections: int = 0
    requests: int = 0
    records_judged: int = 0
    records_refused: int = 0
    batches_refused: int = 0
    records_observed: int = 0
    closed_bad_input: int = 0


@dataclass
class _Flight:
    """A connection's requests not yet answered to the client: an idle connection is closed at once on stop."""

    count: int = 0


@dataclass
class _Pending:
    header: RequestHeader
    request: dict[str, Any] | None = None       # a produce request the proxy changed
    refused: dict[tuple[str, int], Refusal] = field(default_factory=dict)
    settled: bool = False
    answer: bytes | None = None                 # once settled: the frame for the client, None to close it


class _Answers:
    """A connection's requests awaiting their answers, which go to the client in the order the requests came
    (Kafka's guarantee per connection): each is written as soon as it and every one before it are settled, by
    the broker's response or by the proxy itself, in the settling task's own turn (no task or future between
    a response and the client). At most PIPELINE wait: past that the connection's requests are not read."""

    def __init__(self, to_client: asyncio.StreamWriter, flight: _Flight) -> None:
        self.to_client = to_client
        self.flight = flight
        self.waiting: deque[_Pending] = deque()
        self.room = asyncio.Event()
        self.room.set()
        self.empty = asyncio.Event()
        self.empty.set()
        # resolved when an answer closes the client's connection (the broker went away): the connection ends
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def add(self, pending: _Pending) -> None:
        while len(self.waiting) >= PIPELINE:
            self.room.clear()
            await self.room.wait()
        self.waiting.append(pending)
        self.flight.count += 1
        self.empty.clear()

    def settle(self, pending: _Pending, answer: bytes | None) -> None:
        pending.answer, pending.settled = answer, True
        waiting = self.waiting
        while waiting and waiting[0].settled:
            head = waiting.popleft()
            self.flight.count -= 1
            if head.answer is None:
                self.to_client.close()
                self.flight.count -= len(waiting)
                waiting.clear()
                if not self.closed.done():
                    self.closed.set_result(None)
                break
            self.to_client.write(_SIZE.pack(len(head.answer)) + head.answer)
        if len(waiting) < PIPELINE:
            self.room.set()
        if not waiting:
            self.empty.set()


def upstream_context(settings: ProxySettings) -> ssl.SSLContext | None:
    """The client context the proxy connects to the cluster with (`proxy.upstream_tls`), or None for plaintext."""
    tls = settings.upstream_tls
    if tls is None:
        return None
    context = ssl.create_default_context(cafile=tls.get("ca"))
    if tls.get("cert"):
        context.load_cert_chain(tls["cert"], tls.get("key"))
    if not config_values.flag(tls.get("verify", True)):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class Proxy:
    def __init__(self, settings: ProxySettings, judging: Judging,
                 dead_letter: Callable[[TopicRule, list[tuple[tuple[Any, ...], Any]]], Any] | None = None,
                 metrics: ProxyMetrics | None = None, shared: bool = False) -> None:
        self.settings = settings
        self.shared = shared  # one of `--workers N`: every listener bound with SO_REUSEPORT beside the others
        self.judging = judging
        self.dead_letter = dead_letter  # copies of nonconformant records (called with rule, pairs)
        self.metrics = metrics if metrics is not None else ProxyMetrics()
        self.stats = ProxyStats()
        # loaded at start: a certificate that cannot be read stops `xgate proxy` before it listens
        tls = settings.tls
        self._listen_tls = server_context(tls["cert"], tls["key"], tls.get("client_ca")) if tls else None
        self._upstream_tls = upstream_context(settings)
        self.nodes: dict[int, tuple[str, int]] = {}  # upstream node id -> the broker's own address
        self._servers: dict[int | None, asyncio.Server] = {}  # None: the bootstrap listener
        self._wanted: set[int] = set()
        self._connections: dict[asyncio.Task[None], _Flight] = {}

    # -- listeners -------------------------------------------------------------------------------------
    async def start(self) -> None:
        s = self.settings
        self._servers[None] = await asyncio.start_server(self._accept(None), s.listen_host, s.listen_port,
                                                         reuse_address=True, reuse_port=self.shared or None,
                                                         ssl=self._listen_tls)
        log.info("proxy: listening on %s:%d for the cluster at %s", s.listen_host, s.listen_port,
                 ", ".join(f"{h}:{p}" for h, p in s.upstream))

    def address_of(self, node_id: int, host: str, port: int) -> tuple[str, int]:
        """Where clients reach a broker: this proxy's listener for it (opened before the response is passed)."""
        if self.nodes.get(node_id) != (host, port):
            self.nodes[node_id] = (host, port)
        if node_id not in self._servers:
            self._wanted.add(node_id)
        return self.settings.advertised_host, self.settings.broker_port(node_id)

    async def _open_wanted(self) -> None:
        while self._wanted:
            node_id = self._wanted.pop()
            if node_id in self._servers:
                continue
            port = self.settings.broker_port(node_id)
            try:
                self._servers[node_id] = await asyncio.start_server(
                    self._accept(node_id), self.settings.listen_host, port, reuse_address=True,
                    reuse_port=self.shared or None, ssl=self._listen_tls)
            except OSError as exc:  # clients are told this port: said loudly, tried again at the next response
                log.error("proxy: cannot listen for broker %d on %s:%d: %s", node_id, self.settings.listen_host,
                          port, exc)
                continue
            log.info("proxy: broker %d (%s:%d) behind %s:%d", node_id, *self.nodes[node_id],
                     self.settings.listen_host, port)

    async def close(self, drain: float = 10.0) -> None:
        """Stop listening; close idle connections now and the others once what they have in flight is answered,
        for up to `drain` seconds."""
        for server in self._servers.values():
            server.close()
        deadline = time.monotonic() + drain
        while self._connections and time.monotonic() < deadline:
            for task, flight in list(self._connections.items()):
                if flight.count == 0:
                    task.cancel()
            await asyncio.wait(list(self._connections), timeout=0.05)
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        for server in self._servers.values():
            await server.wait_closed()

    def _accept(self, node_id: int | None) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Any]:
        async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            flight = self._connections[task] = _Flight()
            self.stats.connections += 1
            try:
                await self._serve(node_id, reader, writer, flight)
            finally:
                self._connections.pop(task, None)
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()
        return accepted

    async def _upstream(self, node_id: int | None) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        tls = self._upstream_tls
        if node_id is not None and node_id in self.nodes:
            host, port = self.nodes[node_id]
            return await asyncio.open_connection(host, port, ssl=tls, server_hostname=host if tls else None)
        failure: OSError | None = None
        for host, port in self.settings.upstream:
            try:
                return await asyncio.open_connection(host, port, ssl=tls, server_hostname=host if tls else None)
            except OSError as exc:
                failure = exc
        raise failure or OSError("no upstream server")

    # -- one client connection -------------------------------------------------------------------------
    async def _serve(self, node_id: int | None, client: asyncio.StreamReader, to_client: asyncio.StreamWriter,
                     flight: _Flight) -> None:
        peer = to_client.get_extra_info("peername")
        try:
            from_broker, to_broker = await self._upstream(node_id)
        except OSError as exc:
            log.warning("proxy: %s: the upstream broker %s is unreachable: %s", peer,
                        node_id if node_id is not None else "(bootstrap)", exc)
            return
        answers = _Answers(to_client, flight)
        at_broker: deque[_Pending] = deque()
        frames = Frames(client)
        quiet = Quiet(frames, IDLE_SECONDS)
        responses = asyncio.create_task(self._responses(Frames(from_broker), to_client, answers, at_broker, peer))
        requests = asyncio.create_task(self._requests(frames, to_broker, answers, at_broker, peer))
        try:
            # the client is done (or sent what cannot pass, or went quiet), or the broker went away: either ends
            # the connection
            await asyncio.wait((requests, responses, answers.closed, quiet.future),
                               return_when=asyncio.FIRST_COMPLETED)
            if quiet.future.done() or requests.done() and not requests.cancelled() and requests.exception() is None:
                # the answers in flight still go back, unless the client (its answers' writes fail) or the broker
                # goes first: those end the responses' task
                emptied = asyncio.ensure_future(answers.empty.wait())
                try:
                    await asyncio.wait((emptied, responses, answers.closed), timeout=IDLE_SECONDS,
                                       return_when=asyncio.FIRST_COMPLETED)
                finally:
                    emptied.cancel()
                if answers.empty.is_set():
                    await asyncio.wait_for(to_client.drain(), IDLE_SECONDS)
        except (ConnectionError, TimeoutError):
            pass
        finally:
            quiet.stop()
            for task in (requests, responses):
                task.cancel()
            await asyncio.gather(requests, responses, return_exceptions=True)
            to_broker.close()
            with contextlib.suppress(Exception):
                await to_broker.wait_closed()

    async def _read_frame(self, client: Frames, peer: Any) -> bytes | None:
        try:
            # no timeout on the wait for a frame's start: `_serve`'s Quiet ends an idle connection
            return await client.next(self.settings.max_frame_bytes, self.settings.frame_timeout)
        except FrameError as exc:
            self._bad_input(peer, str(exc))
            return None

    def _bad_input(self, peer: Any, why: str) -> None:
        self.stats.closed_bad_input += 1
        log.warning("proxy: %s: closing the connection: %s", peer, why)

    async def _requests(self, client: Frames, to_broker: asyncio.StreamWriter, answers: _Answers,
                        at_broker: deque[_Pending], peer: Any) -> None:
        while (frame := await self._read_frame(client, peer)) is not None:
            try:
                header = RequestHeader.read(frame)
            except WireError as exc:
                self._bad_input(peer, f"a request header that does not read: {exc}")
                return
            self.stats.requests += 1
            pending = _Pending(header)
            if header.api_key == API_VERSIONS and not header.readable():
                # a newer client's first request: Kafka's answer, so that it asks again at a version both read
                await answers.add(pending)
                answers.settle(pending, protocol.error_response(header, UNSUPPORTED_VERSION))
                continue
            if not header.readable():
                # a version the proxy told the client it does not read: nothing unjudged reaches the broker
                self._bad_input(peer, f"api key {header.api_key} version {header.version}, outside the versions "
                                      f"the proxy reads ({READABLE[header.api_key][0]}-{READABLE[header.api_key][1]})")
                return
            expects_answer = True
            if header.api_key == PRODUCE:
                try:
                    frame, expects_answer = self._judge_produce(frame, pending)
                except WireError as exc:
                    self._bad_input(peer, f"a produce request that does not read: {exc}")
                    return
            if expects_answer:
                await answers.add(pending)
            if frame is None:  # refused whole: answered here
                if expects_answer:
                    answers.settle(pending, protocol.produce_response(header, pending.request or {},
                                                                      pending.refused, None))
                continue
            if expects_answer:
                at_broker.append(pending)
            to_broker.write(_SIZE.pack(len(frame)) + frame)
            await to_broker.drain()

    def _judge_produce(self, frame: bytes, pending: _Pending) -> tuple[bytes | None, bool]:
        """The frame to forward (None: nothing left) and whether the client awaits an answer (acks != 0)."""
        header = pending.header
        request = protocol.read_produce(frame, header)
        expects_answer = request["Acks"] != 0
        judging = self.judging
        # the nonconformant records to copy to their rule's dead-letter destination: under `observe` beside the
        # batch that lands, under `reject` instead of it (the only place an operator then sees what was refused)
        copies: list[tuple[TopicRule, list[tuple[tuple[Any, ...], Any]]]] = []
        for topic in request["TopicData"]:
            rule = judging.topics.get(topic["Name"])
            if rule is None:
                continue
            for partition in topic["PartitionData"]:
                started = time.perf_counter()
                verdicts = judge(judging.native, rule.endpoint_id, topic["Name"], partition["Index"],
                                 partition["Records"])
                seconds = time.perf_counter() - started
                self.stats.records_judged += verdicts.count
                key = (topic["Name"], partition["Index"])
                refused = verdicts.corrupt is not None or bool(verdicts.failed and rule.policy == "reject")
                self.metrics.judged(rule.endpoint_id, verdicts, seconds, refused)
                if verdicts.corrupt is not None:
                    pending.refused[key] = Refusal(CORRUPT_MESSAGE, f"xgate: {verdicts.corrupt}", [])
                    log.warning("proxy: refused a batch for %s[%d]: %s", topic["Name"], partition["Index"],
                                verdicts.corrupt)
                elif refused:
                    failed = [(index, refusal_text(verdict)) for index, verdict in verdicts.failed]
                    pending.refused[key] = Refusal(
                        INVALID_RECORD, f"xgate refused the batch: {len(failed)} of {verdicts.count} "
                                        f"record(s) break their contract; first: {failed[0][1]}", failed)
                    self.stats.records_refused += len(failed)
                    copies.append((rule, [(verdicts.records[i], v) for i, v in verdicts.failed]))
                elif verdicts.failed:
                    self.stats.records_observed += len(verdicts.failed)
                    copies.append((rule, [(verdicts.records[i], v) for i, v in verdicts.failed]))
        if self.dead_letter is not None:
            for rule, pairs in copies:
                self.dead_letter(rule, pairs)
        if not pending.refused:
            return frame, expects_answer
        self.stats.batches_refused += len(pending.refused)
        pending.request = request
        kept = protocol.without(request, pending.refused)
        return (None if kept is None else protocol.produce_frame(frame, header, kept)), expects_answer

    async def _responses(self, from_broker: Frames, to_client: asyncio.StreamWriter, answers: _Answers,
                         at_broker: deque[_Pending], peer: Any) -> None:
        """Each broker response to the request it answers, rewritten where the proxy must."""
        try:
            while (frame := await from_broker.next()) is not None:
                correlation_id = _SIZE.unpack_from(frame)[0]
                if not at_broker or at_broker[0].header.correlation_id != correlation_id:
                    log.warning("proxy: %s: the broker answered correlation id %d, which no request awaits",
                                peer, correlation_id)
                    break
                pending = at_broker.popleft()
                header = pending.header
                try:
                    if header.api_key == PRODUCE and pending.refused:
                        frame = protocol.produce_response(header, pending.request or {}, pending.refused, frame)
                    else:
                        frame = protocol.rewrite_response(header.api_key, header.version, frame, self.address_of)
                        await self._open_wanted()
                except WireError as exc:
                    log.warning("proxy: %s: a response to api key %d v%d does not read: %s", peer, header.api_key,
                                header.version, exc)
                    break
                answers.settle(pending, frame)
                await to_client.drain()  # a client that reads slowly slows what is read from its broker
        except FrameError:  # cut short: the broker is gone
            pass
        # the broker is gone: every request still waiting is answered by closing the client's connection
        while at_broker:
            answers.settle(at_broker.popleft(), None)
