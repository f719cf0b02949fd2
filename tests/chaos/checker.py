"""What every chaos run must keep, checked over the whole run (issue: "Nothing lost").

- Every task the framework launched reaches a terminal state, told to the framework at least
  once, and never two different terminal states.
- No task runs twice: its start marker has at most one line (exactly one if it FINISHED, none
  if it was DROPPED: the master says so of a task its agent never started).
- No resource is allocated twice: in every snapshot of the master's state, no agent's tasks use
  more than it has, and no role more than its quota's limit.
- Only the terminal states the fault explains (LOST on the agent that was lost, ...) appear.
- One master acts at a time: there is one master process (leader election is later work), so
  this holds by construction and is not checked.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc

from corral.frameworks.sdk.testing import LocalCluster
from corral.resources import SCALARS
from corral.v1 import operator_pb2 as op
from tests.chaos.workload import TERMINAL, Workload


@dataclass
class Snapshots:
    """Samples the master's state while the run goes on; records what broke a rule."""

    cluster: LocalCluster
    interval: float = 0.25
    limits: dict[str, dict[str, float]] = field(default_factory=dict)  # role -> resource -> max
    taken: int = 0
    peak: dict[str, float] = field(default_factory=dict)  # role -> most cpus allocated seen
    violations: list[str] = field(default_factory=list)
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            try:
                state = await self.cluster.state()
            except grpc.aio.AioRpcError:
                pass  # the master is down: this fault is the point of the run
            else:
                self.taken += 1
                self.check(state)
            await asyncio.sleep(self.interval)  # sampling another process: no event to await

    def check(self, state: op.State) -> None:
        for agent in state.agents:
            for name in SCALARS:
                used = getattr(agent.used, name)
                total = getattr(agent.info.resources, name)
                if used > total + 1e-9:
                    self.violations.append(
                        f"agent {agent.info.id}: {name} used {used} > {total} (snapshot "
                        f"{self.taken})"
                    )
        for role in state.roles:
            self.peak[role.role] = max(self.peak.get(role.role, 0.0), role.allocated.cpus)
            for name, bound in self.limits.get(role.role, {}).items():
                used = getattr(role.allocated, name)
                if used > bound + 1e-9:
                    self.violations.append(f"role {role.role}: {name} {used} > quota {bound}")


def check_run(
    workload: Workload,
    *,
    allowed: Callable[[str, str], bool] = lambda task_id, state: state == "FINISHED",
) -> Counter[str]:
    """Assert the rules above over a finished run; return the count of each final state.
    ``allowed(task_id, state)`` says which terminal states the fault explains."""
    problems: list[str] = []
    finals: Counter[str] = Counter()
    for task_id, seen in workload.tasks.items():
        ends = {s for s in seen.states if s in TERMINAL}
        if not ends:
            problems.append(f"{task_id} on {seen.agent_id} never ended: {seen.states}")
            continue
        if len(ends) > 1:
            problems.append(f"{task_id} ended twice, differently: {seen.states}")
        final = next(s for s in seen.states if s in TERMINAL)
        finals[final] += 1
        if not allowed(task_id, final):
            problems.append(f"{task_id} on {seen.agent_id} ended {final}: {seen.messages}")
        marker = workload.markers / task_id
        starts = len(marker.read_text().split()) if marker.exists() else 0
        if starts > 1:
            problems.append(f"{task_id} ran {starts} times")
        if final == "FINISHED" and starts != 1:
            problems.append(f"{task_id} FINISHED but started {starts} times")
        if final == "DROPPED" and starts != 0:
            problems.append(f"{task_id} DROPPED (never started) but started {starts} times")
    for task_id in workload.never_launched | set(workload.uncertain):
        marker = workload.markers / task_id
        starts = len(marker.read_text().split()) if marker.exists() else 0
        if starts > 1:
            problems.append(f"{task_id} (launch unanswered) ran {starts} times")
    assert not problems, f"{len(problems)} broken rules:\n" + "\n".join(problems[:30])
    return finals
