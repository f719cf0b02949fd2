"""Simulated tasks for load tests (``--simulate``): no processes, only timers.

A task "runs" for ``simulation.duration_seconds`` and ends with ``simulation.exit_code``; a
signal ends it at once, as a process with no handler would. Tasks are started and ended in
batches: the tasks started in one loop iteration share one callback, and those among them with
the same duration and exit code share one exit timer. A launch of 24 tasks is then two loop
callbacks instead of 48 (a timer per task was 4 % of a process hosting a thousand agents, and a
heap of tens of thousands of timers slows every other timer of the loop).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from corral.agent.core import events as e
from corral.agent.core.status_updates import TaskKey
from corral.agent.core.types import Signal, SimulationSpec, TaskSpec
from corral.agent.executor import Clock, EventSink


class _Exits:
    """Tasks that end together: the timer, and the tasks still running under it (by
    (framework id, task id), as the agent keys them)."""

    __slots__ = ("handle", "task_ids")

    def __init__(self) -> None:
        self.handle: asyncio.Handle | None = None
        self.task_ids: dict[TaskKey, None] = {}  # ordered, O(1) removal


class SimulatedExecutor:
    def __init__(
        self,
        sink: EventSink,
        clock: Clock,
        sink_many: Callable[[Sequence[e.Event]], None] | None = None,
    ) -> None:
        self._sink = sink
        # Events of one batch (tasks started or ended together) handed over at once, so the
        # agent core handles them as one batch; one by one without it.
        self._sink_many = sink_many or self._one_by_one
        self._clock = clock
        self._starting: dict[TaskKey, SimulationSpec] = {}  # started in a later callback
        self._start_handle: asyncio.Handle | None = None
        self._running: dict[TaskKey, _Exits] = {}
        self._signalled: dict[TaskKey, asyncio.Handle] = {}

    def _one_by_one(self, events: Sequence[e.Event]) -> None:
        for event in events:
            self._sink(event)

    def start(self, task: TaskSpec, agent_id: str) -> None:
        # Started in a later callback, like a real process, so the core never re-enters itself.
        self._starting[(task.framework_id, task.task_id)] = task.simulation or SimulationSpec()
        if self._start_handle is None:
            self._start_handle = asyncio.get_running_loop().call_soon(self._start_batch)

    def _start_batch(self) -> None:
        self._start_handle = None
        starting, self._starting = self._starting, {}
        loop = asyncio.get_running_loop()
        groups: dict[tuple[float, int], _Exits] = {}
        for k, sim in starting.items():
            group = (sim.duration_seconds, sim.exit_code)
            exits = groups.get(group)
            if exits is None:
                exits = groups[group] = _Exits()
                exits.handle = loop.call_later(
                    sim.duration_seconds, self._exit_batch, exits, group[1]
                )
            exits.task_ids[k] = None
            self._running[k] = exits
        now = self._clock()
        self._sink_many(
            [
                e.ProcessStarted(
                    now=now,
                    task_id=task_id,
                    framework_id=framework_id,
                    pid=None,
                    stimulus_id=f"simulated:{task_id}",
                )
                for framework_id, task_id in starting
            ]
        )

    def _exit_batch(self, exits: _Exits, exit_code: int) -> None:
        # The tasks of one timer end together: one clock reading, and their set let go whole
        # rather than emptied task by task (``_exit``).
        ending, exits.task_ids = exits.task_ids, {}
        running, signalled = self._running, self._signalled
        now = self._clock()
        events = []
        for k in ending:
            running.pop(k, None)
            signalled.pop(k, None)
            events.append(_exit_event(k, now, exit_code, None))
        self._sink_many(events)

    def _exited(self, k: TaskKey, exit_code: int | None, signal: int | None) -> None:
        self._sink(self._exit(k, exit_code, signal))

    def _exit(self, k: TaskKey, exit_code: int | None, signal: int | None) -> e.ProcessExited:
        exits = self._running.pop(k, None)
        if exits is not None:
            exits.task_ids.pop(k, None)
        self._signalled.pop(k, None)
        return _exit_event(k, self._clock(), exit_code, signal)

    def signal(self, framework_id: str, task_id: str, signal: Signal) -> None:
        k = (framework_id, task_id)
        if self._starting.pop(k, None) is not None:
            # Signalled before it started: it ends without ever having run.
            self._signalled[k] = asyncio.get_running_loop().call_soon(
                self._exited, k, None, int(signal)
            )
            return
        exits = self._running.get(k)
        if exits is None or k in self._signalled:
            return
        exits.task_ids.pop(k, None)
        if not exits.task_ids and exits.handle is not None:
            exits.handle.cancel()
        self._signalled[k] = asyncio.get_running_loop().call_soon(
            self._exited, k, None, int(signal)
        )

    async def close(self) -> None:
        if self._start_handle is not None:
            self._start_handle.cancel()
            self._start_handle = None
        for exits in set(self._running.values()):
            if exits.handle is not None:
                exits.handle.cancel()
        for handle in self._signalled.values():
            handle.cancel()
        self._starting.clear()
        self._running.clear()
        self._signalled.clear()

    def __len__(self) -> int:
        return (
            len(self._starting)
            + len(self._running)
            + sum(1 for t in self._signalled if t not in self._running)
        )


def _exit_event(
    k: TaskKey, now: float, exit_code: int | None, signal: int | None
) -> e.ProcessExited:
    framework_id, task_id = k
    return e.ProcessExited(
        now=now,
        task_id=task_id,
        framework_id=framework_id,
        exit_code=exit_code,
        signal=signal,
        stimulus_id=f"simulated:{task_id}",
    )
