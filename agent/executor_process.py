"""Real tasks: each runs under a shim (``shim.py``) in its own process group and sandbox folder.

- The command runs as ``/bin/sh -c value`` when ``shell`` is true, else as argv ``arguments``.
- The agent starts the shim in a session of its own; the shim starts the task in a new process
  group (pgid == the task's pid), so a kill reaches everything the task started, a Ctrl-C in the
  agent's terminal does not, and a kill -9 of the agent reaches neither.
- The shim is the task's parent: it records how the task ended in ``exit_status`` (and kills
  what is left of the task's group: no task leaves orphans behind that outlive the resources the
  master thinks are free). The agent learns a task's end from that file once the shim exits,
  whether the shim is its child or one it re-attached to after a restart.
- Memory (``memory_control.py``): each task gets a cgroup with its memory limit where the host
  has one the agent can write (the task's process joins it before exec), and ``sample`` reads
  what the tasks use for the agent core (usage.py), by cgroup or by process group. A task the
  kernel killed at its cgroup's limit is reported as such (``ProcessExited.memory_limit``).
- The sandbox ``work_dir/sandboxes/<framework>/<task>`` holds ``stdout`` and ``stderr``; the
  task's checkpoint folder (``corral.agent.checkpoint.task_dir``) holds ``process.json`` (shim
  pid and start time, the task's pid, the sandbox), written before the shim is told to start the
  task, so a task never runs unless a restarted agent can find it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal as signals
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from corral.agent.checkpoint import read_json, safe_name, task_dir, write_atomically
from corral.agent.core import events as e
from corral.agent.core.status_updates import TaskKey
from corral.agent.core.types import ProcessFate, Signal, TaskSpec, TaskUsage
from corral.agent.cpu_control import CpuControl, NoCpuControl
from corral.agent.executor import Clock, EventSink
from corral.agent.memory_control import MemoryControl, NoControl, task_key
from corral.agent.process_groups import CpuRates, sample_groups
from corral.logging import get_logger
from corral.supervise import spawn

log = get_logger("corral.agent.executor")

__all__ = ["Adopted", "ProcessExecutor", "safe_name"]

SHIM = Path(__file__).with_name("shim.py")
# A re-attached shim is not our child: its exit is seen through a pidfd, or by polling.
POLL_INTERVAL = 0.5
# psutil's create_time is exact to the clock tick; anything closer is the same process.
START_TIME_TOLERANCE = 0.05


@dataclass(frozen=True, slots=True)
class Adopted:
    """What ``adopt`` found of a checkpointed task's process."""

    process: ProcessFate
    exit_code: int | None = None
    signal: int | None = None
    message: str = ""


def _start_time(pid: int) -> float | None:
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


def _as_time(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _same_process(pid: int, start: float | None) -> bool:
    """Whether ``pid`` is still the process started at ``start`` and has not exited (an
    orphaned shim may stay a zombie until its new parent reaps it)."""
    try:
        proc = psutil.Process(pid)
        now, zombie = proc.create_time(), proc.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
    return start is not None and abs(now - start) < START_TIME_TOLERANCE and not zombie


def _ended(status: dict[str, Any] | None) -> Adopted | None:
    """The shim's ``exit_status`` as what became of the task; None when there is none."""
    if status is None:
        return None
    if "launch_error" in status:
        return Adopted(ProcessFate.LAUNCH_FAILED, message=str(status["launch_error"]))
    if isinstance(status.get("signal"), int):
        return Adopted(ProcessFate.EXITED, signal=status["signal"])
    if isinstance(status.get("exit_code"), int):
        return Adopted(ProcessFate.EXITED, exit_code=status["exit_code"])
    return None


class ProcessExecutor:
    def __init__(
        self,
        work_dir: Path,
        sink: EventSink,
        clock: Clock,
        memory: MemoryControl | None = None,
        cpu: CpuControl | None = None,
    ) -> None:
        # Absolute: the shim runs in the task's sandbox, so a path relative to the agent's
        # working directory (a relative --work-dir) would lose the task's exit status.
        self.work_dir = work_dir = work_dir.absolute()
        self.sandboxes = work_dir / "sandboxes"
        self._sink = sink
        self._clock = clock
        self.memory: MemoryControl = memory or NoControl()
        self.cpu: CpuControl = cpu or NoCpuControl()
        self._cpu = CpuRates()
        # By task, (framework id, task id), as the agent keys its tasks:
        self._pgids: dict[TaskKey, int] = {}  # its process group, while it runs
        self._cgroups: dict[TaskKey, str] = {}  # its cgroup's name (memory_control)
        # Its sandbox, while its process may write there (sandbox_collector.py).
        self._sandboxes: dict[TaskKey, Path] = {}
        self._children: dict[TaskKey, asyncio.subprocess.Process] = {}  # shims we started
        self._runs: set[asyncio.Task[None]] = set()
        # A re-attached shim's watch: its pidfd, or the timer that polls it.
        self._watches: dict[TaskKey, int | asyncio.TimerHandle] = {}

    # --- the Executor protocol -------------------------------------------------------------

    def start(self, task: TaskSpec, agent_id: str) -> None:
        run = spawn(self._run(task, agent_id), f"task-{task.task_id}", log)
        self._runs.add(run)
        run.add_done_callback(self._runs.discard)

    def resize(
        self, framework_id: str, task_id: str, cpus: float, cpus_limit: float, mem_limit: float
    ) -> None:
        """A running task's process takes other limits (a custom executor given another task:
        its tasks' together), as Mesos updates an executor's container."""
        cgroup = self._cgroups.get((framework_id, task_id))
        if cgroup is None:
            return
        try:
            self.memory.prepare(cgroup, mem_limit)
            self.cpu.prepare(cgroup, cpus, cpus_limit)
        except OSError as exc:
            log.warning("cannot resize the task's cgroups", task_id=task_id, error=str(exc))

    def signal(self, framework_id: str, task_id: str, signal: Signal) -> None:
        pgid = self._pgids.get((framework_id, task_id))
        if pgid is not None:
            _killpg(pgid, signals.Signals(int(signal)))

    async def close(self) -> None:
        for pgid in self._pgids.values():
            _killpg(pgid, signals.SIGKILL)
        for k in list(self._watches):
            self._unwatch(k)
        for run in list(self._runs):
            run.cancel()
        await asyncio.gather(*self._runs, return_exceptions=True)
        for _ in range(20):  # the killed tasks' processes leave their cgroups as they die
            if self.memory.close() & self.cpu.close():
                break
            await asyncio.sleep(0.05)

    def sample(self, now: float) -> list[TaskUsage]:
        """What each running task uses now: memory by its cgroup (or its process group), cpus
        by its process group. Blocking (a pass over the host's processes): run it off the
        event loop."""
        pgids = dict(self._pgids)
        groups = sample_groups(pgids.values())
        out: list[TaskUsage] = []
        for k, pgid in pgids.items():
            group = groups.get(pgid)
            cgroup = self._cgroups.get(k)
            mem = self.memory.usage_mib(cgroup) if cgroup is not None else None
            if mem is None:
                if group is None:
                    continue  # nothing of it left to measure: its exit is on the way
                mem = group.mem_mib
            cpus = self._cpu.rate(k, now, group.cpu_seconds) if group else 0.0
            out.append(TaskUsage(k[1], cpus=cpus, mem=mem, framework_id=k[0]))
        self._cpu.keep(set(pgids))
        return out

    def sandbox_for(self, task: TaskSpec) -> Path:
        return self.sandboxes / safe_name(task.framework_id) / safe_name(task.task_id)

    # --- a new task ---------------------------------------------------------------------------

    async def _run(self, task: TaskSpec, agent_id: str) -> None:
        task_id, framework_id = task.task_id, task.framework_id
        k = (framework_id, task_id)

        def failed(message: str) -> e.LaunchFailed:
            return e.LaunchFailed(
                now=self._clock(), task_id=task_id, framework_id=framework_id, message=message
            )

        cmd = task.command
        if cmd is None:  # the core refuses such a task; this keeps the executor honest
            self._sink(failed("no command"))
            return
        argv = ["/bin/sh", "-c", cmd.value] if cmd.shell else list(cmd.arguments)
        meta = task_dir(self.work_dir, framework_id, task_id)
        cgroup = task_key(framework_id, task_id)
        try:
            join = self.memory.prepare(cgroup, task.enforced_mem_limit)
        except OSError as exc:
            self._sink(failed(f"cannot make the task's cgroup ({self.memory.name}): {exc}"))
            return
        self._cgroups[k] = cgroup
        try:
            cpu_join = self.cpu.prepare(cgroup, task.cpus, task.cpus_limit)
        except OSError as exc:
            self._release(k)
            self._sink(failed(f"cannot make the task's CPU cgroup ({self.cpu.name}): {exc}"))
            return
        joins = "\t".join(dict.fromkeys(p for p in (join, cpu_join) if p))
        ours, theirs = socket.socketpair()
        try:
            meta.mkdir(parents=True, exist_ok=True)
            (meta / "exit_status").unlink(missing_ok=True)  # of an earlier task with this id
            sandbox = self._sandboxes[k] = self.make_sandbox(task)
            env = {
                **os.environ,
                **cmd.environment,
                **cmd.secret_environment,
                "CORRAL_TASK_ID": task_id,
                "CORRAL_FRAMEWORK_ID": task.framework_id,
                "CORRAL_AGENT_ID": agent_id,
                "CORRAL_SANDBOX": str(sandbox),
            }
            if task.executor_id:  # a custom executor (agent/mesos_executor/): Mesos' names
                env["MESOS_DIRECTORY"] = env["MESOS_SANDBOX"] = str(sandbox)
            shim_argv = [sys.executable, "-I", "-S", str(SHIM), str(theirs.fileno())]
            shim_argv += [str(meta / "exit_status"), *argv]
            with (sandbox / "stdout").open("wb") as out, (sandbox / "stderr").open("wb") as err:
                shim = await asyncio.create_subprocess_exec(
                    *shim_argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    cwd=sandbox,
                    env=env,
                    start_new_session=True,
                    pass_fds=(theirs.fileno(),),
                )
        except OSError as exc:
            ours.close()
            self._release(k)
            reason = exc.strerror or str(exc)
            self._sink(failed(f"cannot start {argv[0]!r}: {reason}"))
            return
        finally:
            theirs.close()
        self._children[k] = shim
        try:
            process: dict[str, object] = {
                "shim_pid": shim.pid,
                "shim_start": _start_time(shim.pid),
                "sandbox": str(sandbox),
            }
            write_atomically(meta / "process.json", json.dumps(process).encode())
            answer = await self._handshake(ours, joins)
        finally:
            ours.close()
        if answer.startswith("started "):
            pid = int(answer.split()[1])
            self._pgids[k] = pid
            process["pid"] = pid
            write_atomically(meta / "process.json", json.dumps(process).encode())
            self._sink(
                e.ProcessStarted(
                    now=self._clock(), task_id=task_id, framework_id=framework_id, pid=pid
                )
            )
        try:
            code = await shim.wait()
        finally:
            self._children.pop(k, None)
            self._pgids.pop(k, None)
        ended = _ended(self._read_status(meta))
        if not answer.startswith("started "):
            message = answer.removeprefix("error ") if answer else ""
            if not message and ended is not None and ended.message:
                message = ended.message
            message = message or f"the task shim ended before starting the task (status {code})"
            self._release(k)
            self._sink(failed(message))
            return
        self._report_exit(k, ended, code)

    def sandboxes_in_use(self) -> set[Path]:
        """The sandboxes of tasks whose process runs or is starting: never collected."""
        return set(self._sandboxes.values())

    def _release(self, k: TaskKey) -> None:
        self._sandboxes.pop(k, None)
        cgroup = self._cgroups.pop(k, None)
        if cgroup is not None:
            self.memory.release(cgroup)
            self.cpu.release(cgroup)

    @staticmethod
    async def _handshake(sock: socket.socket, join: str) -> str:
        """Tell the shim to go (and which cgroup its task joins); its one-line answer ("" if
        it died first)."""
        loop = asyncio.get_running_loop()
        sock.setblocking(False)
        data = b""
        go = f"go {join}\n" if join else "go\n"
        with contextlib.suppress(OSError):
            await loop.sock_sendall(sock, go.encode())
            while b"\n" not in data:
                chunk = await loop.sock_recv(sock, 4096)
                if not chunk:
                    break
                data += chunk
        return data.decode(errors="replace").strip()

    def _report_exit(self, k: TaskKey, ended: Adopted | None, shim_code: int | None) -> None:
        framework_id, task_id = k
        if ended is None or ended.process is not ProcessFate.EXITED:
            # The shim died without a word (killed from outside): the kernel killed the
            # task's main process with it (PR_SET_PDEATHSIG); report the shim's end.
            log.warning("task shim ended without an exit status", task_id=task_id, code=shim_code)
            if shim_code is not None and shim_code < 0:
                ended = Adopted(ProcessFate.EXITED, signal=-shim_code)
            else:
                ended = Adopted(ProcessFate.EXITED, signal=int(signals.SIGKILL))
        cgroup = self._cgroups.get(k)
        oom = (
            ended.signal == int(signals.SIGKILL)
            and cgroup is not None
            and self.memory.oom_killed(cgroup)
        )
        self._release(k)
        self._sink(
            e.ProcessExited(
                now=self._clock(),
                task_id=task_id,
                framework_id=framework_id,
                exit_code=ended.exit_code,
                signal=ended.signal,
                memory_limit=oom,
            )
        )

    @staticmethod
    def _read_status(meta: Path) -> dict[str, Any] | None:
        try:
            return read_json(meta / "exit_status")
        except ValueError:
            return None

    def make_sandbox(self, task: TaskSpec) -> Path:
        """A new sandbox folder for the task (the docker containerizer's too)."""
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

    # --- a task of the agent's previous run ---------------------------------------------------

    def adopt(
        self,
        task_id: str,
        meta: Path,
        process: dict[str, Any] | None,
        exit_status: dict[str, Any] | None,
        framework_id: str = "",
    ) -> Adopted:
        """What became of a checkpointed task's process; if it still runs, watch it from now on
        (its exit is reported as ``ProcessExited``, ``signal`` reaches its group, and ``sample``
        measures it, by its cgroup if it has one)."""
        if process is None:
            # The shim was never told to start the task (see the module's docstring).
            return _ended(exit_status) or Adopted(ProcessFate.NOT_STARTED)
        shim_pid = process.get("shim_pid")
        pid = process.get("pid")
        k = (framework_id, task_id)
        if isinstance(shim_pid, int) and self._watch(k, shim_pid, process.get("shim_start"), meta):
            if not isinstance(pid, int):
                # The agent died between the shim's answer and its write: ask the OS.
                with contextlib.suppress(psutil.Error):
                    children = psutil.Process(shim_pid).children()
                    pid = children[0].pid if children else None
            if isinstance(pid, int):
                self._pgids[k] = pid
            self._cgroups[k] = task_key(framework_id, task_id)
            sandbox = process.get("sandbox")
            if isinstance(sandbox, str):
                self._sandboxes[k] = Path(sandbox)
            return Adopted(ProcessFate.ALIVE)
        # The shim is gone; its exit_status (read now: it may have exited since the load).
        self.memory.release(task_key(framework_id, task_id))
        self.cpu.release(task_key(framework_id, task_id))
        return _ended(self._read_status(meta) or exit_status) or Adopted(ProcessFate.UNKNOWN)

    def _watch(self, k: TaskKey, pid: int, start: object, meta: Path) -> bool:
        """Watch shim ``pid`` if it is the process started at ``start`` (not a reused pid)."""
        start_time = _as_time(start)
        loop = asyncio.get_running_loop()

        def meta_exit() -> None:
            self._unwatch(k)
            self._pgids.pop(k, None)
            self._report_exit(k, _ended(self._read_status(meta)), None)

        try:
            pidfd = os.pidfd_open(pid)
        except (OSError, AttributeError):
            pidfd = None
        # Checked after opening the pidfd: the pid cannot be reused under an open pidfd.
        if not _same_process(pid, start_time):
            if pidfd is not None:
                os.close(pidfd)
            return False
        if pidfd is not None:
            self._watches[k] = pidfd
            loop.add_reader(pidfd, meta_exit)
        else:

            def poll() -> None:
                if _same_process(pid, start_time):
                    self._watches[k] = loop.call_later(POLL_INTERVAL, poll)
                else:
                    meta_exit()

            self._watches[k] = loop.call_later(POLL_INTERVAL, poll)
        return True

    def _unwatch(self, k: TaskKey) -> None:
        watch = self._watches.pop(k, None)
        if isinstance(watch, int):
            asyncio.get_running_loop().remove_reader(watch)
            os.close(watch)
        elif watch is not None:
            watch.cancel()

    def kill_orphan(self, process: dict[str, Any] | None) -> bool:
        """SIGKILL the task of a checkpoint the agent will not adopt (its id was deleted);
        True if something was killed."""
        if process is None:
            return False
        shim_pid, pid = process.get("shim_pid"), process.get("pid")
        start = _as_time(process.get("shim_start"))
        if not isinstance(shim_pid, int) or not _same_process(shim_pid, start):
            return False
        if not isinstance(pid, int):
            with contextlib.suppress(psutil.Error):
                children = psutil.Process(shim_pid).children()
                pid = children[0].pid if children else None
        if isinstance(pid, int):
            _killpg(pid, signals.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(shim_pid, signals.SIGKILL)
        return True


def _killpg(pgid: int, sig: signals.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
