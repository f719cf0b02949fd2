"""What the agent's shell needs of an executor: start a task, signal it, clean up at exit.

An executor reports back only through the sink, with core events (``ProcessStarted``,
``LaunchFailed``, ``ProcessExited``), each exactly once per task and in that order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from corral.agent.core.events import Event
from corral.agent.core.types import Signal, TaskSpec

EventSink = Callable[[Event], None]
Clock = Callable[[], float]


class Executor(Protocol):
    def start(self, task: TaskSpec, agent_id: str) -> None: ...

    def signal(self, framework_id: str, task_id: str, signal: Signal) -> None:
        """Signal the task's process group; tasks are keyed by (framework id, task id)."""
        ...

    async def close(self) -> None:
        """Kill whatever still runs, hard; the agent is exiting."""
        ...
