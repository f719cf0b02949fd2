"""A stream handler's queue of messages to write (framework and agent streams alike): bounded
by messages and by bytes; past a bound the stream is failed, not waited for (a peer that falls
behind is cut: docs/architecture.md). UPDATEs queued back to back merge into one message; an
agent's acknowledgements wait a moment for more (``ack_hold``)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from corral.master.outbox import MAX_BATCH, MAX_BATCH_BYTES
from corral.v1 import agent_pb2, scheduler_pb2
from corral.wakeup import Wakeup

STREAM_QUEUE_LIMIT = 10_000
STREAM_QUEUE_BYTES = 64 * 1024 * 1024  # MasterConfig.stream_queue_bytes, --stream-queue-mib


@dataclass(eq=False)
class StreamStats:
    """What the /metrics gauges read of one kind's streams without walking them all (a walk of
    50,000 agents' streams per scrape was 3.5 % of such a master, scraped once a second by the
    load test): the streams holding queued bytes now, a few however many are open, and the
    most bytes one of them ever held at once."""

    holding: set[OutStream] = field(default_factory=set)
    peak: int = 0


@dataclass(eq=False)  # kept in sets by identity (MasterRuntime.new_stream)
class OutStream:
    """A bounded queue of wire messages for one stream, until ``end()`` or a failure.

    Bounded twice: by messages (each a batch) and by their estimated bytes (the outbox's
    estimates; a message put with size 0 is small, and only the count bounds those). A peer
    that does not keep up fails the stream instead of growing the master: ``on_fail`` is told
    once, so the stream's handler can end the call even while it is stuck writing to a peer
    that stopped reading (then it never gets back to this queue to see ``failed``)."""

    limit: int = STREAM_QUEUE_LIMIT  # messages (each a batch) queued before the stream is cut
    max_bytes: int = STREAM_QUEUE_BYTES  # estimated bytes queued before the stream is cut
    failed: str = ""
    on_fail: Callable[[str], None] | None = None
    peak_bytes: int = 0  # the most bytes ever queued at once (a gauge: the bound holds)
    queued_bytes: int = 0  # the estimated bytes queued now; written here only
    stats: StreamStats | None = None  # its kind's, told when it starts or stops holding bytes
    # Seconds an agent's ACKNOWLEDGEMENTS wait for more to ride with them while nothing else is
    # queued (0: written at once). See ``messages()``.
    ack_hold: float = 0.0
    _items: deque[Any] = field(default_factory=deque)
    _sizes: deque[int] = field(default_factory=deque)  # each item's estimated bytes, 0: small
    _ready: Wakeup = field(default_factory=Wakeup)  # no system call per wait (wakeup.py)
    _ended: bool = False

    def backlogged(self) -> bool:
        """Whether messages wait unsent: what was queued earlier has not all been written."""
        return bool(self._items)

    def put(self, msg: Any, size: int = 0) -> None:
        """Queue ``msg``; ``size`` is its estimated length in bytes (an UPDATE's, to merge)."""
        if msg is None:
            # Never a message: a None written to gRPC ends the stream with UNKNOWN.
            raise TypeError("OutStream.put(None): use end() to end the stream")
        if self.failed or self._ended:
            return
        if len(self._items) >= self.limit:
            # The peer does not keep up: end the stream rather than grow without bound.
            self._fail("the stream fell too far behind")
        elif self.queued_bytes + size > self.max_bytes:
            self._fail(
                f"the stream fell too far behind: {self.queued_bytes + size} bytes queued, "
                f"more than {self.max_bytes}"
            )
        else:
            self._items.append(msg)
            self._sizes.append(size)
            self.queued_bytes += size
            if self.queued_bytes > self.peak_bytes:
                self.peak_bytes = self.queued_bytes
            if size:
                self._tally()
        self._ready.set()

    def _tally(self) -> None:
        """Tell ``stats`` whether this stream holds bytes now, and how many at most."""
        stats = self.stats
        if stats is None:
            return
        if self.queued_bytes > 0:
            stats.holding.add(self)
            stats.peak = max(stats.peak, self.queued_bytes)
        else:
            stats.holding.discard(self)

    def _clear(self) -> None:
        """Let go of every queued message (and its bytes) at once."""
        self._items.clear()
        self._sizes.clear()
        self.queued_bytes = 0
        self._tally()

    def _fail(self, reason: str) -> None:
        self.failed = reason
        self._clear()
        if self.on_fail is not None:
            self.on_fail(reason)

    def drop(self) -> None:
        """End the stream now, unsent messages dropped (a master that stopped leading)."""
        self._clear()
        self.end()

    def end(self) -> None:
        """Make ``messages()`` stop after what is queued."""
        self._ended = True
        self._ready.set()

    async def messages(self) -> AsyncIterator[Any]:
        """What to write to the peer, until ``end()`` or a failure (see ``failed``).

        UPDATE events queued back to back go out as one: a busy master queues an UPDATE per
        framework per flush, faster than one write per loop turn sends them, and a framework
        then heard of its tasks seconds late (5k agents, unpaced launch).

        An agent's ACKNOWLEDGEMENTS queued back to back go out as one too, and with
        ``ack_hold`` they wait up to that long for more while nothing else is queued: what a
        master writes costs it more than what it reads (docs/performance.md), and an agent
        resends an unacknowledged status only after its first backoff (10 s,
        agent/core/status_updates.py), so a task's RUNNING and FINISHED are acknowledged in
        one message rather than two. Anything else queued behind them sends them at once,
        in order: an acknowledgement never overtakes, nor is overtaken by, a launch or kill."""
        items, sizes = self._items, self._sizes
        held_until = 0.0  # the time the acknowledgements at the head are held until, 0: none
        loop = asyncio.get_running_loop()  # asked once: each ask is a system call on 3.11
        while not self.failed:
            if not items:
                if self._ended:
                    return
                self._ready.clear()
                await self._ready.wait()
                continue
            if self.ack_hold and _is_acks(items[0]):
                self._merge_acks()
                if len(items) == 1 and not self._ended:
                    now = loop.time()
                    if not held_until:
                        held_until = now + self.ack_hold
                    if now < held_until:
                        # A timer per wait, cancelled with it: asyncio may run a timer a clock
                        # resolution early, and a fired one wakes nobody again.
                        timer = loop.call_at(held_until, self._ready.set)
                        self._ready.clear()
                        try:
                            await self._ready.wait()
                        finally:
                            timer.cancel()
                        continue
                held_until = 0.0
            msg = items.popleft()
            nbytes = sizes.popleft()
            self.queued_bytes -= nbytes
            held = bool(nbytes)
            if _is_update(msg):
                statuses = msg.update.statuses
                nbytes = nbytes or msg.ByteSize()
                while items and _is_update(items[0]) and len(statuses) < MAX_BATCH:
                    more = sizes[0] or items[0].ByteSize()
                    if nbytes + more > MAX_BATCH_BYTES:
                        break  # one message must stay under the peer's size limit
                    nbytes += more
                    taken = sizes.popleft()
                    self.queued_bytes -= taken
                    held = held or bool(taken)
                    statuses.extend(items.popleft().update.statuses)
            if held:
                self._tally()
            yield msg

    def _merge_acks(self) -> None:
        """Fold the ACKNOWLEDGEMENTS queued right behind the head's into it, while the sum
        stays under the agent's message size limit (each is queued with its estimated size)."""
        items, sizes = self._items, self._sizes
        if len(items) < 2 or not _is_acks(items[1]):
            return  # the usual case: reading the head's list would build its container
        acks = items[0].acknowledgements.acknowledgements
        while len(items) > 1 and _is_acks(items[1]) and sizes[0] + sizes[1] <= MAX_BATCH_BYTES:
            acks.extend(items[1].acknowledgements.acknowledgements)
            sizes[0] += sizes[1]
            del items[1]
            del sizes[1]


def _is_update(msg: Any) -> bool:
    return isinstance(msg, scheduler_pb2.Event) and msg.WhichOneof("event") == "update"


def _is_acks(msg: Any) -> bool:
    return isinstance(msg, agent_pb2.MasterMessage) and msg.HasField("acknowledgements")
