"""The executor seam of an agent that runs more than processes, or hands out GPU devices:
each task goes to the containerizer its container names (corral.containers rule 2), processes
to the process executor, images to the docker one; signals go to whichever started the task.
A task asking for GPUs gets specific devices first (gpu_devices.py), freed when the executor
reports its end (the executors report through ``observe``).

An agent that runs processes only, with no GPU devices, uses its ProcessExecutor directly (no
router on its path). A task this agent has no containerizer for (a master that does not check,
say) fails its launch naming the containerizer, as the master would have refused it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from corral import containers
from corral.agent.core import events as e
from corral.agent.core.types import CommandSpec, Signal, TaskSpec
from corral.agent.executor import Clock, EventSink
from corral.agent.executor_docker import DockerExecutor
from corral.agent.executor_process import ProcessExecutor
from corral.agent.gpu_devices import GpuDevices, visible_env


class Containerizers:
    """Made before its executors (they report through ``observe``): set ``processes`` (and
    ``docker``) before the first task."""

    processes: ProcessExecutor

    def __init__(
        self,
        sink: EventSink,
        clock: Clock,
        names: tuple[str, ...],
        gpus: GpuDevices | None = None,
    ) -> None:
        self.docker: DockerExecutor | None = None
        self.names = names
        self.gpus = gpus
        self._sink = sink
        self._clock = clock

    def observe(self, event: e.Event) -> None:
        """The executors' sink: a task's end frees its devices, then the core hears of it."""
        if self.gpus is not None and isinstance(event, e.ProcessExited | e.LaunchFailed):
            self.gpus.release((event.framework_id, event.task_id))
        self._sink(event)

    def _failed(self, task: TaskSpec, why: str) -> None:
        self.observe(
            e.LaunchFailed(
                now=self._clock(), task_id=task.task_id, framework_id=task.framework_id, message=why
            )
        )

    def start(self, task: TaskSpec, agent_id: str) -> None:
        want = containers.needed(task.container)
        if want not in self.names:
            why = f"this agent does not run the {want!r} containerizer ({','.join(self.names)})"
            self._failed(task, why)
            return
        if task.gpus > 0 and self.gpus is not None:
            try:
                devices = self.gpus.assign((task.framework_id, task.task_id), task.gpus)
            except ValueError as exc:
                self._failed(task, str(exc))
                return
            cmd = task.command or CommandSpec()
            env = {**cmd.environment, **visible_env(devices)}
            task = replace(task, gpu_devices=devices, command=replace(cmd, environment=env))
        if task.container is not None and self.docker is not None:
            self.docker.start(task, agent_id)
        else:
            self.processes.start(task, agent_id)

    def signal(self, framework_id: str, task_id: str, signal: Signal) -> None:
        if self.docker is not None and self.docker.owns(framework_id, task_id):
            self.docker.signal(framework_id, task_id, signal)
        else:
            self.processes.signal(framework_id, task_id, signal)

    async def close(self) -> None:
        if self.docker is not None:
            await self.docker.close()
        await self.processes.close()

    def sandboxes_in_use(self) -> set[Path]:
        docker = self.docker.sandboxes_in_use() if self.docker is not None else set()
        return self.processes.sandboxes_in_use() | docker
