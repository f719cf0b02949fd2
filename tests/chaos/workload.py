"""A framework that keeps launching short real tasks, and remembers everything it was told.

Each task appends its shell's pid to ``markers/<task_id>`` as it starts, so the checker can tell
a task that ran twice from one that ran once, whatever the master or the agents believed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from corral.frameworks import sdk
from corral.v1.common_pb2 import TaskReason
from tests.integration.recording import until_set


@dataclass
class Seen:
    """What the framework was told of one task, in order."""

    agent_id: str
    states: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)


class Workload(sdk.Scheduler):
    def __init__(
        self,
        markers: Path,
        *,
        seconds: float = 1.0,
        cpus: float = 0.5,
        mem: float = 32.0,
        limit: int | None = None,
    ) -> None:
        self.markers = markers
        self.seconds = seconds
        self.cpus = cpus
        self.mem = mem
        self.limit = limit  # stop launching after this many tasks
        self.launching = True
        self.tasks: dict[str, Seen] = {}
        self.launch_errors = 0  # launch calls refused or cut off (the master went away)
        self.uncertain: dict[str, str] = {}  # task id -> agent id, of those calls
        self.never_launched: set[str] = set()
        self.changed = asyncio.Event()
        markers.mkdir(parents=True, exist_ok=True)

    def _task(self, index: int) -> sdk.TaskInfo:
        task = sdk.task(f"chaos-{index}", "true", cpus=self.cpus, mem=self.mem)
        task.command.value = f"echo $$ >> {self.markers / task.task_id}; exec sleep {self.seconds}"
        return task

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        for offer in offers:
            room = sdk.how_many_fit(offer, sdk.Resources(cpus=self.cpus, mem=self.mem))
            if self.limit is not None:
                room = min(room, self.limit - len(self.tasks))
            if not self.launching or room <= 0:
                await self._quietly(driver.decline([offer], refuse_seconds=1))
                continue
            tasks = [self._task(len(self.tasks) + len(self.uncertain) + i) for i in range(room)]
            try:
                await driver.launch([offer], tasks, refuse_seconds=0)
            except (sdk.CallError, sdk.NotSubscribedError):
                # Refused, or cut off with the master gone: it may or may not have been applied.
                # Such a task counts once the framework hears of it; ``settle`` asks about the
                # rest.
                self.launch_errors += 1
                for t in tasks:
                    self.uncertain[t.task_id] = offer.agent_id
                continue
            for t in tasks:
                self.tasks.setdefault(t.task_id, Seen(agent_id=offer.agent_id))

    async def _quietly(self, call: Awaitable[None]) -> None:
        with contextlib.suppress(sdk.CallError, sdk.NotSubscribedError):
            await call

    async def settle(self, driver: sdk.Driver) -> None:
        """Ask the master about tasks whose launch call got no answer: those it applied are
        answered with their state (and join ``tasks``), the others LOST or UNKNOWN."""
        unheard = [(t, a) for t, a in self.uncertain.items() if t not in self.tasks]
        if unheard:
            await driver.reconcile(unheard)

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        if (
            status.task_id in self.uncertain
            and status.task_id not in self.tasks
            and status.reason == TaskReason.TASK_REASON_RECONCILIATION
            and sdk.state_name(status.state) in ("LOST", "UNKNOWN")
        ):
            # The master does not know it: the launch was never applied. (Its marker still
            # tells the checker if it ran anyway.)
            self.uncertain.pop(status.task_id)
            self.never_launched.add(status.task_id)
            return
        seen = self.tasks.setdefault(status.task_id, Seen(agent_id=status.agent_id))
        seen.states.append(sdk.state_name(status.state))
        seen.messages.append(status.message)
        self.changed.set()

    def ended(self) -> set[str]:
        return {t for t, s in self.tasks.items() if any(_terminal(x) for x in s.states)}

    def running(self) -> int:
        return sum(1 for s in self.tasks.values() if s.states and s.states[-1] == "RUNNING")

    async def until(self, what: str, check: Callable[[], bool], timeout: float) -> None:
        await until_set(self.changed, what, check, timeout)


TERMINAL = {"FINISHED", "FAILED", "KILLED", "ERROR", "LOST", "DROPPED", "GONE"}


def _terminal(state: str) -> bool:
    return state in TERMINAL
