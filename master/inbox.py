"""The core task's inbox: what waits for the core, in two lanes.

Rules:
1. Agents' registrations wait in a lane of their own; everything else (frameworks' calls,
   agents' heartbeats and statuses, timers' ticks, queries) in the other, the calls lane. Each
   lane is first in, first out.
2. A loop turn takes what waits in the calls lane (up to the turn's limit), then up to
   ``registrations_per_turn`` registrations, whatever the calls took: a busy calls lane never
   starves them, and what waits behind them waits at most that many.
3. Why: after a failover every agent of the cluster re-registers at once. In one queue a
   framework's SUBSCRIBE and the allocation timer's tick waited behind all of them (50,000 at
   ~1 ms of the core each), so no offer went out until the whole cluster was back. In their own
   lane they wait at most one turn's registrations: offers start with the first agents back, as
   the rest come (Mesos offers a re-registered agent at once; it does not wait for the others).
   Reordering across lanes is safe: events of one agent's stream all follow its registration
   (the stream's handler reads nothing else until the registration is answered), and events of
   different streams have no order the master could rely on (the network's is arbitrary).
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from corral.wakeup import Wakeup

# At ~1 ms of the core each (a re-registration reconciling its tasks), a turn of registrations
# stays well under an allocation interval's worth of delay for what waits behind it.
REGISTRATIONS_PER_TURN = 256

Item = tuple[Any, "asyncio.Future[Any] | None"]


class Inbox:
    """Two FIFO lanes and one wake-up (rule 1); ``take`` draws a turn's batch (rule 2)."""

    def __init__(self, registrations_per_turn: int = REGISTRATIONS_PER_TURN) -> None:
        if registrations_per_turn < 1:
            raise ValueError("registrations_per_turn must be at least 1")
        self.registrations_per_turn = registrations_per_turn
        self._calls: deque[Item] = deque()
        self._registrations: deque[Item] = deque()
        self._waiting = Wakeup()  # not asyncio.Event: no system call per wait (corral/wakeup.py)

    def put(self, item: Item, *, registration: bool = False) -> None:
        (self._registrations if registration else self._calls).append(item)
        self._waiting.set()

    def qsize(self) -> int:
        return len(self._calls) + len(self._registrations)

    @property
    def registrations_waiting(self) -> int:
        return len(self._registrations)

    def empty(self) -> bool:
        return not self._calls and not self._registrations

    def take_now(self, limit: int) -> list[Item]:
        """A turn's batch (rule 2): up to ``limit`` calls, then up to
        ``registrations_per_turn`` registrations; possibly none."""
        calls, registrations = self._calls, self._registrations
        batch = [calls.popleft() for _ in range(min(limit, len(calls)))]
        n = min(len(registrations), self.registrations_per_turn)
        batch += [registrations.popleft() for _ in range(n)]
        if self.empty():
            self._waiting.clear()
        return batch

    async def take(self, limit: int) -> list[Item]:
        """The next turn's batch, waiting until there is one."""
        while self.empty():
            await self._waiting.wait()
        return self.take_now(limit)
