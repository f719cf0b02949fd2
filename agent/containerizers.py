"""The executor seam of an agent that runs more than processes: each task goes to the
containerizer its container names (corral.containers rule 2), processes to the process
executor, images to the docker one. Signals go to whichever started the task.

An agent that runs processes only uses its ProcessExecutor directly (no router on its path).
A task this agent has no containerizer for (a master that does not check, say) fails its launch
naming the containerizer, as the master would have refused it.
"""

from __future__ import annotations

from pathlib import Path

from corral import containers
from corral.agent.core import events as e
from corral.agent.core.types import Signal, TaskSpec
from corral.agent.executor import Clock, EventSink
from corral.agent.executor_docker import DockerExecutor
from corral.agent.executor_process import ProcessExecutor


class Containerizers:
    def __init__(
        self,
        processes: ProcessExecutor,
        docker: DockerExecutor | None,
        sink: EventSink,
        clock: Clock,
        names: tuple[str, ...],
    ) -> None:
        self.processes = processes
        self.docker = docker
        self.names = names
        self._sink = sink
        self._clock = clock

    def start(self, task: TaskSpec, agent_id: str) -> None:
        want = containers.needed(task.container)
        if want not in self.names:
            why = f"this agent does not run the {want!r} containerizer ({','.join(self.names)})"
            self._sink(
                e.LaunchFailed(
                    now=self._clock(),
                    task_id=task.task_id,
                    framework_id=task.framework_id,
                    message=why,
                )
            )
        elif task.container is not None and self.docker is not None:
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
