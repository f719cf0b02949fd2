"""Simulated tasks for load tests (``--simulate``): no processes, only timers.

A task "runs" for ``simulation.duration_seconds`` and ends with ``simulation.exit_code``; a
signal ends it at once, as a process with no handler would. One ``call_later`` per task and no
asyncio task, so a single process can host thousands of agents.
"""

from __future__ import annotations

import asyncio

from agent.core import events as e
from agent.core.types import Signal, SimulationSpec, TaskSpec
from agent.executor import Clock, EventSink


class SimulatedExecutor:
    def __init__(self, sink: EventSink, clock: Clock) -> None:
        self._sink = sink
        self._clock = clock
        self._timers: dict[str, asyncio.Handle] = {}

    def start(self, task: TaskSpec, agent_id: str) -> None:
        sim = task.simulation or SimulationSpec()
        loop = asyncio.get_running_loop()
        # Started in a later callback, like a real process, so the core never re-enters itself.
        self._timers[task.task_id] = loop.call_soon(self._started, task.task_id, sim)

    def _started(self, task_id: str, sim: SimulationSpec) -> None:
        loop = asyncio.get_running_loop()
        self._timers[task_id] = loop.call_later(
            sim.duration_seconds, self._exited, task_id, sim.exit_code, None
        )
        self._sink(
            e.ProcessStarted(
                now=self._clock(), task_id=task_id, pid=None, stimulus_id=f"simulated:{task_id}"
            )
        )

    def _exited(self, task_id: str, exit_code: int | None, signal: int | None) -> None:
        self._timers.pop(task_id, None)
        self._sink(
            e.ProcessExited(
                now=self._clock(),
                task_id=task_id,
                exit_code=exit_code,
                signal=signal,
                stimulus_id=f"simulated:{task_id}",
            )
        )

    def signal(self, task_id: str, signal: Signal) -> None:
        timer = self._timers.get(task_id)
        if timer is None:
            return
        timer.cancel()
        self._timers[task_id] = asyncio.get_running_loop().call_soon(
            self._exited, task_id, None, int(signal)
        )

    async def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    def __len__(self) -> int:
        return len(self._timers)
