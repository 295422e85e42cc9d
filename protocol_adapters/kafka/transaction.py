"""One exactly-once route's transactional producer, shared by its Kafka source and Kafka sinks in this process.

The source starts it (`init_transactions` fences an earlier gateway with the same transactional id and
aborts what that one left open), the sinks produce into the open transaction, and the source ends each
transaction with the offsets of the records whose outputs are in it (`send_offsets_to_transaction`):
outputs and consumed offsets become visible together or not at all. When the transaction cannot commit
(a produce failed, a record was released), the source aborts it and reads again from the last commit;
`epoch` counts the aborts so that a sink waiting on a failed send learns its record will be read again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from aiokafka import AIOKafkaProducer  # type: ignore[import-untyped]  # aiokafka ships no type information

from protocol_adapters.kafka.errors import KafkaError

_shared: dict[str, KafkaTransaction] = {}


class KafkaTransaction:
    def __init__(self, transactional_id: str, kwargs: dict[str, Any]) -> None:
        self.transactional_id = transactional_id
        self._kwargs = kwargs
        self.producer: Any = None
        self.epoch = 0
        self.failed: BaseException | None = None  # a produce failed: this transaction must abort
        self._ended = asyncio.Condition()
        self._start_lock = asyncio.Lock()
        self._users = 0
        self.on_failure: Callable[[], None] = lambda: None

    async def start(self) -> None:
        async with self._start_lock:
            if self.producer is not None:
                return
            producer = AIOKafkaProducer(transactional_id=self.transactional_id, enable_idempotence=True,
                                        acks="all", **self._kwargs)
            await producer.start()  # init_transactions: fences and aborts an earlier holder of the id
            try:
                await producer.begin_transaction()
            except BaseException:
                with contextlib.suppress(KafkaError, OSError):
                    await producer.stop()
                raise
            self.producer = producer

    async def send(self, topic: str, records: list[tuple[bytes | None, dict[str, Any]]]) -> None:
        """Produce into the open transaction, in order, and wait for the broker; when the transaction fails,
        wait for the source to abort it and return: the records are read again and produced anew."""
        await self.start()
        epoch = self.epoch
        try:
            confirmations = [await self.producer.send(topic, value, **record) for value, record in records]
            await asyncio.gather(*confirmations)
        except (KafkaError, OSError, TimeoutError) as exc:
            if self.epoch == epoch:
                self.failed = exc
                self.on_failure()
                async with self._ended:
                    await self._ended.wait_for(lambda: self.epoch != epoch)

    async def commit(self, offsets: dict[Any, int], group_id: str) -> None:
        """Commit the outputs produced so far with `offsets` as the group's position, then open the next."""
        if offsets:
            await self.producer.send_offsets_to_transaction(offsets, group_id)
        await self.producer.commit_transaction()
        await self.producer.begin_transaction()

    async def abort(self) -> None:
        """Drop the outputs produced so far; the source reads their records again from its last commit."""
        await self.producer.abort_transaction()
        self.failed = None
        await self.producer.begin_transaction()
        async with self._ended:
            self.epoch += 1
            self._ended.notify_all()

    async def stop(self, timeout: float) -> None:
        producer, self.producer = self.producer, None
        if producer is None:
            return
        with contextlib.suppress(KafkaError, OSError, TimeoutError):
            async with asyncio.timeout(timeout):
                await producer.stop()  # an open transaction is aborted by the broker (or the next holder)


def acquire(transactional_id: str, kwargs: dict[str, Any]) -> KafkaTransaction:
    """The route's transaction (made by the first of its adapters to ask); `release` when done with it."""
    transaction = _shared.get(transactional_id)
    if transaction is None:
        transaction = _shared[transactional_id] = KafkaTransaction(transactional_id, kwargs)
    transaction._users += 1
    return transaction


async def release(transaction: KafkaTransaction, timeout: float) -> None:
    transaction._users -= 1
    if transaction._users <= 0:
        _shared.pop(transaction.transactional_id, None)
        await transaction.stop(timeout)
