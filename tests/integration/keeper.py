"""A framework for the operators' verbs' tests: it keeps ``count`` real processes running (one
cpu each) for its demand, and replaces any that ends, as a service framework does; each task
prints a greeting on stdout, a line on stderr, then a numbered tick every 0.1 s."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from corral.frameworks import sdk
from corral.v1 import common_pb2 as pb

TICKER = (
    'echo "hello from $CORRAL_TASK_ID"; echo "to stderr" >&2; i=0; '
    'while true; do echo "tick $i"; i=$((i+1)); sleep 0.1; done'
)
ENDED = {
    pb.TASK_STATE_FINISHED,
    pb.TASK_STATE_FAILED,
    pb.TASK_STATE_KILLED,
    pb.TASK_STATE_LOST,
    pb.TASK_STATE_ERROR,
    pb.TASK_STATE_DROPPED,
    pb.TASK_STATE_GONE,
}


async def until(what: str, check: Callable[[], object], timeout: float) -> None:
    """Wait until ``check()`` is true; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        await asyncio.sleep(0.05)


class Keeper(sdk.Scheduler):
    def __init__(self, count: int, command: str = TICKER, demand: str = "svc") -> None:
        self.count, self.command, self.demand = count, command, demand
        self.launched: dict[str, str] = {}  # task id -> agent id
        self.running: set[str] = set()
        self.ended: dict[str, pb.TaskStatus] = {}
        self._n = 0

    def live(self) -> list[str]:
        return [t for t in self.launched if t not in self.ended]

    def running_on(self, agent_id: str) -> list[str]:
        return [t for t in self.running if self.launched.get(t) == agent_id]

    async def subscribed(self, driver: sdk.Driver, framework_id: str) -> None:
        await driver.set_demands([sdk.Demand(self.demand, self.count, cpus=1, mem=32)])

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        for offer in offers:
            n = int(min(self.count - len(self.live()), offer.resources.cpus))
            if n <= 0:
                await driver.decline([offer.id], refuse_seconds=0.2)
                continue
            tasks = []
            for _ in range(n):
                self._n += 1
                task_id = f"{self.demand}-{self._n}"
                self.launched[task_id] = offer.agent_id
                tasks.append(
                    sdk.task(
                        task_id,
                        self.command,
                        cpus=1,
                        mem=32,
                        task_id=task_id,
                        demand=self.demand,
                        env={"CORRAL_TASK_ID": task_id},
                        kill_grace_period=1.0,
                    )
                )
            await driver.launch([offer], tasks, refuse_seconds=0.2)

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        if status.state == pb.TASK_STATE_RUNNING:
            self.running.add(status.task_id)
        elif status.state in ENDED:
            self.running.discard(status.task_id)
            self.ended[status.task_id] = status
