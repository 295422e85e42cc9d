"""KafkaSink: produce each envelope to the sink's own topic and return once the broker confirmed it.

One AIOKafkaProducer per sink, acks=all and idempotent by default (a send the client retries
after a lost answer is written once, in order; a send the runtime retries is within at-least-once). Concurrent
`send` calls share the producer's batches (linger_ms). The connection is made on the first
`send`, so a gateway starts while its broker is down; every failure to reach the broker is a
retriable AdapterError and the next `send` tries again.

In an exactly-once route (`options.transactional_id`) the sink produces into the route's transaction
(transaction.py), which its source commits together with the consumed offsets.
"""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType
from typing import Any, Self

from aiokafka import AIOKafkaProducer  # type: ignore[import-untyped]  # aiokafka ships no type information

from gateway.envelope import Envelope
from gateway.errors import AdapterError, MessageRefused, adapter_failure
from protocol_adapters.base import EndpointConfig
from protocol_adapters.kafka import transaction as transactions
from protocol_adapters.kafka.errors import KafkaError, adapter_error, bootstrap_error
from protocol_adapters.kafka.mapping import outgoing_record
from protocol_adapters.kafka.options import KafkaSinkOptions, sink_options

# seconds during which a failed connection attempt answers every send without trying again
_RETRY_AFTER = 0.5


class KafkaSink:
    def __init__(self, options: KafkaSinkOptions) -> None:
        self.options = options
        self._producer: Any = None
        self._kwargs: dict[str, Any] | None = None
        self._lock = asyncio.Lock()
        self._closed = False
        # the last failed connection attempt: concurrent senders share it instead of queueing attempts
        self._failure: tuple[float, AdapterError] | None = None
        self._transaction: transactions.KafkaTransaction | None = None

    async def __aenter__(self) -> Self:
        options = self.options
        try:
            # built here so that a bad TLS file fails at startup, not at the first message
            kwargs = options.connection.client_kwargs()
        except (OSError, ValueError) as exc:
            raise AdapterError(f"Kafka sink {options.endpoint_id!r}: bad TLS settings: {exc}") from exc
        kwargs.update(
            acks=options.acks,
            enable_idempotence=options.idempotent,
            linger_ms=options.linger_ms,
            max_batch_size=options.max_batch_size,
            max_request_size=options.max_request_size,
            compression_type=options.compression_type,
        )
        self._kwargs = kwargs
        self._closed = False
        if options.transactional_id is not None:
            self._transaction = transactions.acquire(options.transactional_id, {
                k: v for k, v in kwargs.items() if k not in ("acks", "enable_idempotence")})
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self._closed = True
        transaction, self._transaction = self._transaction, None
        if transaction is not None:
            await transactions.release(transaction, self.options.connection.connect_timeout)
        producer, self._producer = self._producer, None
        if producer is not None:
            await _stop(producer, self.options.connection.connect_timeout)

    async def send(self, envelope: Envelope) -> None:
        if self._transaction is not None:
            await self._send_in_transaction([envelope])
            return
        producer = self._producer or await self._connect()
        options = self.options
        record = outgoing_record(envelope, options.default_key, options.default_headers)
        try:
            delivered = await producer.send(options.topic, record.value, key=record.key, partition=options.partition,
                                            timestamp_ms=record.timestamp_ms, headers=record.headers)
            await delivered
        except (TimeoutError, KafkaError, OSError) as exc:
            raise adapter_error(exc, f"produce to topic {options.topic!r}") from exc

    async def send_many(self, envelopes: list[Envelope]) -> list[AdapterError | None]:
        """Produce all, then wait once for every confirmation; each envelope's failure, or None, in order.

        The records join the producer's batches in this order, so per-partition order is kept.
        """
        options = self.options
        if self._transaction is not None:
            await self._send_in_transaction(envelopes)
            return [None] * len(envelopes)
        try:
            producer = self._producer or await self._connect()
        except AdapterError as exc:
            return [exc] * len(envelopes)
        confirmations: list[Any] = []
        for index, envelope in enumerate(envelopes):
            record = outgoing_record(envelope, options.default_key, options.default_headers)
            try:
                confirmations.append(await producer.send(
                    options.topic, record.value, key=record.key, partition=options.partition,
                    timestamp_ms=record.timestamp_ms, headers=record.headers))
            except (TimeoutError, KafkaError, OSError) as exc:
                refused = adapter_error(exc, f"produce to topic {options.topic!r}")
                if isinstance(refused, MessageRefused):
                    confirmations.append(refused)  # this record alone (e.g. over max_request_size)
                    continue
                confirmations += [refused] * (len(envelopes) - index)
                break
        outcomes = await asyncio.gather(*(c for c in confirmations if not isinstance(c, AdapterError)),
                                        return_exceptions=True)
        waited = iter(outcomes)
        failures: list[AdapterError | None] = []
        for confirmation in confirmations:
            outcome = confirmation if isinstance(confirmation, AdapterError) else next(waited)
            if isinstance(outcome, BaseException) and not isinstance(outcome, Exception):
                raise outcome  # cancelled: shutdown, not a failed delivery
            if isinstance(outcome, Exception):
                outcome = adapter_error(outcome, f"produce to topic {options.topic!r}")
            failures.append(outcome if isinstance(outcome, AdapterError) else None)
        return failures

    async def _send_in_transaction(self, envelopes: list[Envelope]) -> None:
        """Into the route's open transaction; a failure there aborts it and the source reads the records again."""
        assert self._transaction is not None
        options = self.options
        records: list[tuple[bytes | None, dict[str, Any]]] = []
        for envelope in envelopes:
            record = outgoing_record(envelope, options.default_key, options.default_headers)
            records.append((record.value, {"key": record.key, "partition": options.partition,
                                           "timestamp_ms": record.timestamp_ms, "headers": record.headers}))
        try:
            await self._transaction.send(options.topic, records)
        except (TimeoutError, KafkaError, OSError) as exc:  # the transaction could not even start
            raise adapter_error(exc, f"produce to topic {options.topic!r}") from exc

    async def _connect(self) -> Any:
        if self._kwargs is None or self._closed:
            raise AdapterError("Kafka sink used outside `async with`")
        loop = asyncio.get_running_loop()
        async with self._lock:
            if self._producer is not None:
                return self._producer
            if self._failure is not None and loop.time() - self._failure[0] < _RETRY_AFTER:
                failure = self._failure[1]
                raise adapter_failure(str(failure), retriable=failure.retriable)
            producer = AIOKafkaProducer(**self._kwargs)
            try:
                async with asyncio.timeout(self.options.connection.connect_timeout):
                    await producer.start()
            except (TimeoutError, KafkaError, OSError) as exc:
                await _stop(producer, self.options.connection.connect_timeout)
                servers = ",".join(self.options.connection.bootstrap_servers)
                error = await bootstrap_error(exc, self._kwargs, f"connect to {servers}")
                self._failure = (loop.time(), error)
                raise error from exc
            self._producer, self._failure = producer, None
            return producer


async def _stop(producer: Any, timeout: float) -> None:
    """Flush and close, bounded: a producer whose broker is gone would otherwise wait for every batch to expire."""
    with contextlib.suppress(KafkaError, OSError, TimeoutError):
        async with asyncio.timeout(timeout):
            await producer.stop()


def create_sink(config: EndpointConfig) -> KafkaSink:
    return KafkaSink(sink_options(config))
