"""Real tasks: one asyncio subprocess per task, in its own process group and sandbox folder.

- The command runs as ``/bin/sh -c value`` when ``shell`` is true, else as argv ``arguments``.
- ``start_new_session`` gives the task its own session and process group (pgid == pid), so a
  kill reaches everything the task started, and a Ctrl-C in the agent's terminal does not.
- The sandbox ``work_dir/sandboxes/<framework>/<task>`` holds ``stdout`` and ``stderr``.
- When the task's main process exits, what is left of its group is SIGKILLed: no task leaves
  orphans behind that outlive the resources the master thinks are free.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal as signals
import subprocess
from pathlib import Path

from corral.agent.core import events as e
from corral.agent.core.types import Signal, TaskSpec
from corral.agent.executor import Clock, EventSink
from corral.logging import get_logger
from corral.supervise import spawn

log = get_logger("corral.agent.executor")

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


def safe_name(text: str) -> str:
    """A path component from an id: no separators, no dot-dot, never empty."""
    name = _UNSAFE.sub("_", text) or "_"
    return "_" + name if name in {".", ".."} else name


class ProcessExecutor:
    def __init__(self, work_dir: Path, sink: EventSink, clock: Clock) -> None:
        self.sandboxes = work_dir / "sandboxes"
        self._sink = sink
        self._clock = clock
        self._procs: dict[str, asyncio.subprocess.Process] = {}
        self._runs: set[asyncio.Task[None]] = set()

    def start(self, task: TaskSpec, agent_id: str) -> None:
        run = spawn(self._run(task, agent_id), f"task-{task.task_id}", log)
        self._runs.add(run)
        run.add_done_callback(self._runs.discard)

    def signal(self, task_id: str, signal: Signal) -> None:
        proc = self._procs.get(task_id)
        if proc is not None:
            _killpg(proc.pid, signals.Signals(int(signal)))

    async def close(self) -> None:
        for proc in self._procs.values():
            _killpg(proc.pid, signals.SIGKILL)
        for run in list(self._runs):
            run.cancel()
        await asyncio.gather(*self._runs, return_exceptions=True)

    def sandbox_for(self, task: TaskSpec) -> Path:
        return self.sandboxes / safe_name(task.framework_id) / safe_name(task.task_id)

    async def _run(self, task: TaskSpec, agent_id: str) -> None:
        task_id = task.task_id
        cmd = task.command
        if cmd is None:  # the core refuses such a task; this keeps the executor honest
            self._sink(e.LaunchFailed(now=self._clock(), task_id=task_id, message="no command"))
            return
        argv = ["/bin/sh", "-c", cmd.value] if cmd.shell else list(cmd.arguments)
        try:
            sandbox = self._make_sandbox(task)
            env = {
                **os.environ,
                **cmd.environment,
                "CORRAL_TASK_ID": task_id,
                "CORRAL_FRAMEWORK_ID": task.framework_id,
                "CORRAL_AGENT_ID": agent_id,
                "CORRAL_SANDBOX": str(sandbox),
            }
            with (sandbox / "stdout").open("wb") as out, (sandbox / "stderr").open("wb") as err:
                proc = await asyncio.create_subprocess_exec(
                    *argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    cwd=sandbox,
                    env=env,
                    start_new_session=True,
                )
        except OSError as exc:
            reason = exc.strerror or str(exc)
            message = f"cannot start {argv[0]!r}: {reason}"
            self._sink(e.LaunchFailed(now=self._clock(), task_id=task_id, message=message))
            return
        self._procs[task_id] = proc
        self._sink(e.ProcessStarted(now=self._clock(), task_id=task_id, pid=proc.pid))
        try:
            code = await proc.wait()
        finally:
            self._procs.pop(task_id, None)
            _killpg(proc.pid, signals.SIGKILL)  # stragglers of the group
        if code >= 0:
            self._sink(e.ProcessExited(now=self._clock(), task_id=task_id, exit_code=code))
        else:
            self._sink(e.ProcessExited(now=self._clock(), task_id=task_id, signal=-code))

    def _make_sandbox(self, task: TaskSpec) -> Path:
        base = self.sandbox_for(task)
        base.parent.mkdir(parents=True, exist_ok=True)
        path, n = base, 1
        while True:  # a task id reused after the first one ended gets a fresh folder
            try:
                path.mkdir()
                return path
            except FileExistsError:
                n += 1
                path = base.with_name(f"{base.name}.{n}")


def _killpg(pgid: int, sig: signals.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
