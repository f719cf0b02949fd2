"""The load scheduler: answers every offer as fast as it can, and counts what happens.

Launch mode packs short simulated tasks into each offer and declines the offers it cannot use;
decline mode declines everything. Both answer with ``refuse_seconds=0`` so the agent is offered
again on the next allocation cycle, and neither waits for the master's answer inside the
callback: calls run as tasks, so one framework keeps several calls in flight while the driver
goes on delivering statuses. Declines of one OFFERS batch travel in one call.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from corral.frameworks import sdk
from corral.frameworks.loadtest.histogram import Histogram
from corral.frameworks.sdk.offers import EPSILON

# What "lost" means for a load test: a task that ended any other way than by finishing.
LOST_STATES = frozenset(
    {
        sdk.TaskState.TASK_STATE_LOST,
        sdk.TaskState.TASK_STATE_UNREACHABLE,
        sdk.TaskState.TASK_STATE_DROPPED,
        sdk.TaskState.TASK_STATE_GONE,
        sdk.TaskState.TASK_STATE_ERROR,
        sdk.TaskState.TASK_STATE_FAILED,
        sdk.TaskState.TASK_STATE_KILLED,
        sdk.TaskState.TASK_STATE_UNKNOWN,
    }
)
RUNNING = sdk.TaskState.TASK_STATE_RUNNING
FINISHED = sdk.TaskState.TASK_STATE_FINISHED


class Mode(enum.Enum):
    LAUNCH = "launch"
    DECLINE = "decline"


@dataclass
class Counters:
    """Shared by every framework of a worker; the reporter swaps it out each interval."""

    offers: int = 0
    offer_events: int = 0
    declined: int = 0
    accepts: int = 0  # Accept calls that succeeded
    launched: int = 0  # tasks in those calls
    running: int = 0  # first RUNNING of a task
    finished: int = 0
    lost: int = 0
    # Tasks reported RUNNING or FINISHED after they were counted lost: a task that ran on
    # while its framework was told it was gone (a loss wave's test: must stay 0).
    revived: int = 0
    call_errors: int = 0
    lost_states: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    accept_to_running: Histogram = field(default_factory=Histogram)


@dataclass
class _Pending:
    accepted_at: float
    running: bool = False


@dataclass(frozen=True)
class TaskShape:
    cpus: float = 1.0
    mem: float = 128.0
    seconds: float = 1.0


class LoadScheduler(sdk.Scheduler):
    def __init__(
        self,
        name: str,
        mode: Mode,
        shape: TaskShape,
        counters: Callable[[], Counters],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.mode = mode
        self.counters = counters  # a getter: the reporter replaces the object every interval
        self.clock = clock
        self.draining = False
        self.pending: dict[str, _Pending] = {}  # launched, not yet terminal
        self.lost: set[str] = set()  # tasks counted lost (their ids, never reused)
        self._ids = itertools.count()
        self._calls: set[asyncio.Task[None]] = set()
        self._template = sdk.task(
            "load", "true", cpus=shape.cpus, mem=shape.mem, simulate_seconds=shape.seconds
        )
        self._shape = shape
        self.drained = asyncio.Event()

    # -- offers -----------------------------------------------------------------------------

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        c = self.counters()
        c.offers += len(offers)
        c.offer_events += 1
        if self.mode is Mode.DECLINE or self.draining:
            self._spawn(self._decline(driver, [o.id for o in offers]))
            return
        unused: list[str] = []
        for offer in offers:
            tasks = self._pack(offer)
            if tasks:
                self._spawn(self._launch(driver, offer, tasks))
            else:
                unused.append(offer.id)
        if unused:
            self._spawn(self._decline(driver, unused))

    def _pack(self, offer: sdk.Offer) -> list[sdk.TaskInfo]:
        r = offer.resources
        shape = self._shape
        n = min(int(r.cpus / shape.cpus + EPSILON), int(r.mem / shape.mem + EPSILON))
        tasks = []
        for _ in range(max(0, n)):
            t = sdk.TaskInfo()
            t.CopyFrom(self._template)
            t.task_id = f"{self.name}-{next(self._ids)}"
            tasks.append(t)
        return tasks

    async def _launch(
        self, driver: sdk.Driver, offer: sdk.Offer, tasks: list[sdk.TaskInfo]
    ) -> None:
        now = self.clock()
        for t in tasks:
            self.pending[t.task_id] = _Pending(now)
        try:
            # Loud, not quiet (``on_refused``): a master killed with the accept in hand fails
            # a loud launch (nothing ran), while a quiet one's tasks come back from
            # reconciliation LOST, which the failover runs would count as lost work.
            await driver.launch([offer], tasks, refuse_seconds=0)
        except sdk.DriverError as err:
            # Nothing ran, nothing is lost. The offer was rescinded meanwhile, or the accept
            # was refused (past its deadline on a busy master) and the offer is still ours:
            # decline it so its resources go back (the master skips an id it no longer has).
            for t in tasks:
                self.pending.pop(t.task_id, None)
            self._error(f"launch: {err}")
            self._spawn(self._decline(driver, [offer.id]))
            self._check_drained()
            return
        c = self.counters()
        c.accepts += 1
        c.launched += len(tasks)

    async def _decline(self, driver: sdk.Driver, offer_ids: list[str]) -> None:
        refuse = 3600.0 if self.draining else 0.0
        try:
            await driver.decline(offer_ids, refuse_seconds=refuse)
        except sdk.DriverError as err:
            self._error(f"decline: {err}")
            return
        self.counters().declined += len(offer_ids)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)

    def _error(self, message: str) -> None:
        c = self.counters()
        c.call_errors += 1
        if len(c.errors) < 5:
            c.errors.append(f"{self.name}: {message}")

    # -- statuses ---------------------------------------------------------------------------

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        p = self.pending.get(status.task_id)
        if p is None:
            if status.task_id in self.lost and status.state in (RUNNING, FINISHED):
                self.lost.discard(status.task_id)  # counted once
                self.counters().revived += 1
            return  # a duplicate delivery of a status already counted
        c = self.counters()
        state = status.state
        if state == RUNNING:
            if not p.running:
                p.running = True
                c.running += 1
                c.accept_to_running.add(self.clock() - p.accepted_at)
            return
        if not sdk.is_terminal(state) and state not in LOST_STATES:
            return
        del self.pending[status.task_id]
        if state == FINISHED:
            c.finished += 1
        else:
            c.lost += 1
            self.lost.add(status.task_id)
            name = sdk.state_name(state)
            c.lost_states[name] = c.lost_states.get(name, 0) + 1
        self._check_drained()

    # -- the end ----------------------------------------------------------------------------

    async def drain(self, driver: sdk.Driver) -> None:
        """Stop launching; ``drained`` is set once every launched task has ended."""
        self.draining = True
        try:
            await driver.suppress()
        except sdk.DriverError as err:
            self._error(f"suppress: {err}")
        self._check_drained()

    def _check_drained(self) -> None:
        if self.draining and not self.pending and not self._launching():
            self.drained.set()

    def _launching(self) -> bool:
        return any(not t.done() for t in self._calls)

    async def settle(self) -> None:
        """Wait for the calls in flight (their outcome decides what is pending)."""
        while self._launching():
            await asyncio.gather(*list(self._calls), return_exceptions=True)
        self._check_drained()
