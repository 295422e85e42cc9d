"""The offsets a Kafka source handed out from one partition: which are still open, and how far it may commit.

Shared by the plain source (source.py) and the exactly-once one (transactional_source.py). A batch read in
place (in_place.py) is handed out, and tracked here, as one offset, its last: `heavy` says how many messages
beyond one it stands for, so that `messages` counts messages, and `expand` puts its records' own offsets in its
place when it must be settled record by record."""

from __future__ import annotations

import collections


class PartitionOffsets:
    """Offsets handed out from one partition and not yet committable."""

    __slots__ = ("acked", "commit_to", "committed", "heavy", "messages", "open", "order")

    def __init__(self) -> None:
        self.order: collections.deque[int] = collections.deque()
        self.open: set[int] = set()
        self.acked: set[int] = set()
        self.commit_to: int | None = None
        self.committed: int | None = None
        self.heavy: dict[int, int] = {}  # an offset standing for a batch: the messages beyond one in it
        self.messages = 0  # handed out and not yet passed by the commit point

    def track(self, offset: int) -> None:
        self.order.append(offset)
        self.open.add(offset)
        self.messages += 1

    def _passed(self, offset: int) -> None:
        self.messages -= 1 + (self.heavy.pop(offset, 0) if self.heavy else 0)

    def ack(self, offset: int) -> bool:
        """Mark `offset` delivered; True when the committable offset moved."""
        if offset not in self.open or offset in self.acked:
            return False
        self.acked.add(offset)
        order, acked, moved = self.order, self.acked, False
        while order and order[0] in acked:
            first = order.popleft()
            acked.discard(first)
            self.open.discard(first)
            self._passed(first)
            self.commit_to, moved = first + 1, True
        return moved

    def track_many(self, offsets: list[int], heavy: dict[int, int] | None = None) -> None:
        """Track `offsets`; `heavy` maps those that stand for a batch to its messages beyond one."""
        self.order.extend(offsets)
        self.open.update(offsets)
        self.messages += len(offsets)
        if heavy:
            self.heavy.update(heavy)
            self.messages += sum(heavy.values())

    def expand(self, offset: int, offsets: list[int]) -> None:
        """The open batch tracked by `offset` as its records' `offsets`, in its place (rare: a batch settled
        record by record)."""
        order = self.order
        at = order.index(offset)
        del order[at]
        for step, each in enumerate(offsets):
            order.insert(at + step, each)
        self.open.discard(offset)
        self.open.update(offsets)
        self._passed(offset)
        self.messages += len(offsets)

    def ack_many(self, offsets: list[int]) -> bool:
        """`ack` for each offset; True when the committable offset moved. The common case, a batch that is
        the oldest offsets handed out and none acknowledged out of order, is taken off in one step."""
        order, count = self.order, len(offsets)
        if count and not self.acked and count <= len(order):
            low, high = min(offsets), max(offsets)
            # `count` distinct open offsets between the first handed out and the count-th: exactly those
            if low == order[0] and high == order[count - 1] and len(set(offsets)) == count and \
                    self.open.issuperset(offsets):
                for _ in range(count):
                    order.popleft()
                self.open.difference_update(offsets)
                self.messages -= count
                if self.heavy:
                    heavy = self.heavy
                    self.messages -= sum([heavy.pop(offset, 0) for offset in offsets])
                self.commit_to = high + 1
                return True
        moved = False
        for offset in offsets:
            moved = self.ack(offset) or moved
        return moved

    def skip_to(self, offset: int) -> None:
        """The offsets before `offset` that were never handed out (an unreadable batch, skipped) count as
        delivered: once every record handed out before them is acknowledged, the commit point moves past
        them. Kept as one acknowledged stand-in, the last skipped offset."""
        last = offset - 1
        if self.order and self.order[-1] >= last:
            return
        self.track(last)
        self.ack(last)

    def pending(self, offset: int) -> bool:
        return offset in self.open and offset not in self.acked

    def pending_commit(self) -> int | None:
        if self.commit_to is not None and self.commit_to != self.committed:
            return self.commit_to
        return None
