"""Tasks in images: the docker containerizer, through the engine's HTTP API (aiodocker).

Rules:
1. One container per task, named ``corral-<task>-<hash>`` (the hash of agent work dir, framework
   and task, so two agents of a host never collide) and labelled with the framework, the task,
   the agent id and the agent's work dir: a restarted agent finds its own by label.
2. Limits from the task (``limits_of``): CPU quota (``NanoCpus``) from its cpus limit, else its
   cpus request (Mesos' CFS quota), CPU shares from its request (1024 a core, at least 2), memory
   limit (``Memory``, no swap beyond it) from its enforced memory limit, as a process task's
   cgroup (none for a task without one); ports published as mapped (BRIDGE) or the host's
   network (HOST); the sandbox mounted at ``/mnt/mesos/sandbox`` (``MESOS_SANDBOX``); volumes as
   binds; docker-init as PID 1, so a SIGTERM reaches the task's own processes.
3. The image must be on the engine, else it is pulled (always with ``force_pull_image``); a pull
   that fails or takes longer than ``pull_timeout`` fails the launch naming the image and the
   engine's words, and the core ends the task FAILED.
4. stdout and stderr are copied from the engine's log into the sandbox's ``stdout`` and
   ``stderr``, as a process task writes them, so ``corral logs`` reads them unchanged; the exit
   is reported only once both copies reached the end. Each copy keeps a cursor in the task's
   checkpoint folder (``stdout.copied``, ``stderr.copied``: the last copied line's engine stamp
   and the sandbox file's size, ``log_cursor``).
5. A kill is a signal to the container (SIGTERM, then SIGKILL after the task's grace: the core
   decides); exit code 128+n after our signal n is "terminated by signal n"; the engine's
   ``OOMKilled`` is the memory limit (``ProcessExited.memory_limit``). How it ended is written
   to the task's checkpoint folder (``exit_status``) before the container is removed.
6. Checkpoint: ``process.json`` holds the container's name (before it is created) and id (once
   created). A restarted agent surveys the engine by its work dir's label (``survey``) before it
   recovers its tasks: a running container is re-attached (same id, each stream's log copied
   on from its cursor: no line twice, none lost), an exited one reported and removed;
   containers of no recovered task are removed (``remove_strays``).
7. The engine unreachable: a launch fails naming it; a running task whose engine went away
   ends FAILED saying so. Process tasks are not this executor's and go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import signal as signals
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiodocker
import aiohttp

from corral.agent.checkpoint import read_json, safe_name, task_dir, write_atomically
from corral.agent.core import events as e
from corral.agent.core.status_updates import TaskKey
from corral.agent.core.types import ProcessFate, Signal, TaskSpec, TaskUsage
from corral.agent.executor import Clock, EventSink
from corral.agent.log_cursor import Resume, copy_log, read_resume
from corral.agent.process_groups import CpuRates
from corral.containers import ContainerSpec, Network
from corral.logging import get_logger
from corral.supervise import spawn

log = get_logger("corral.agent.docker")

DEFAULT_HOST = "unix:///var/run/docker.sock"
SANDBOX_IN_CONTAINER = "/mnt/mesos/sandbox"
LABEL_AGENT = "corral.agent"
LABEL_FRAMEWORK = "corral.framework"
LABEL_TASK = "corral.task"
LABEL_WORK_DIR = "corral.work_dir"
# The engine's log streams, each copied into the sandbox file of its name.
STREAMS = ("stdout", "stderr")
# How long the log copies may take to reach the end after the container exited.
LOG_DRAIN_SECONDS = 10.0
# aiodocker's status for "no connection to the engine" (not an HTTP status).
UNREACHABLE = 900
ENGINE_ERRORS = (aiodocker.DockerError, aiohttp.ClientError, OSError, TimeoutError)


def engine_message(exc: BaseException) -> str:
    if isinstance(exc, aiodocker.DockerError):
        return str(exc.message).strip()
    return str(exc).strip() or type(exc).__name__


def limits_of(task: TaskSpec) -> dict[str, int]:
    """Rule 2's CPU and memory fields of a container's HostConfig."""
    out: dict[str, int] = {"CpuShares": max(2, round(task.cpus * 1024))}
    quota = task.cpus_limit or task.cpus
    if quota > 0:
        out["NanoCpus"] = round(quota * 1e9)
    mem = task.enforced_mem_limit
    if mem > 0:
        out["Memory"] = out["MemorySwap"] = round(mem * 1024 * 1024)
    return out


def memory_used_mib(memory_stats: dict[str, Any]) -> float | None:
    """A container's memory as ``docker stats`` shows it: usage less the inactive page cache
    (cgroup v2's ``inactive_file``, v1's ``total_inactive_file``), in MiB; None when the
    engine gave none (the container is not running)."""
    usage = memory_stats.get("usage")
    if not isinstance(usage, int):
        return None
    detail = memory_stats.get("stats") or {}
    cache = detail.get("inactive_file", detail.get("total_inactive_file", 0))
    return max(usage - (cache if isinstance(cache, int) else 0), 0) / 2**20


def container_name(work_dir: Path, framework_id: str, task_id: str) -> str:
    digest = hashlib.sha256(f"{work_dir}\0{framework_id}\0{task_id}".encode()).hexdigest()[:12]
    return f"corral-{safe_name(task_id)[:80]}-{digest}"


def _argv(task: TaskSpec) -> dict[str, list[str]]:
    """The command override: none keeps the image's entrypoint and command."""
    cmd = task.command
    if cmd is None:
        return {}
    if cmd.shell and cmd.value.strip():
        return {"Entrypoint": ["/bin/sh", "-c"], "Cmd": [cmd.value]}
    if not cmd.shell and cmd.arguments:
        return {"Entrypoint": [cmd.arguments[0]], "Cmd": list(cmd.arguments[1:])}
    return {}


def container_config(
    task: TaskSpec,
    container: ContainerSpec,
    agent_id: str,
    work_dir: Path,
    sandbox: Path,
    env: dict[str, str],
) -> dict[str, Any]:
    """The engine's create body for the task (rules 1 and 2)."""
    host: dict[str, Any] = {
        **limits_of(task),
        "Init": True,
        "Binds": [f"{sandbox}:{SANDBOX_IN_CONTAINER}:rw"]
        + [
            f"{v.host_path}:{v.container_path}:{'ro' if v.read_only else 'rw'}"
            for v in container.volumes
        ],
        "NetworkMode": "host" if container.network is Network.HOST else "bridge",
        "Privileged": False,
    }
    if task.gpu_devices:  # gpu_devices.py rule 2: the engine's device request (nvidia)
        host["DeviceRequests"] = [
            {"Driver": "nvidia", "DeviceIDs": list(task.gpu_devices), "Capabilities": [["gpu"]]}
        ]
    exposed: dict[str, dict[str, str]] = {}
    if container.port_mappings:
        bindings: dict[str, list[dict[str, str]]] = {}
        for m in container.port_mappings:
            key = f"{m.container_port}/{m.protocol}"
            exposed[key] = {}
            bindings.setdefault(key, []).append({"HostIp": "", "HostPort": str(m.host_port)})
        host["PortBindings"] = bindings
    labels = {
        LABEL_AGENT: agent_id,
        LABEL_FRAMEWORK: task.framework_id,
        LABEL_TASK: task.task_id,
        LABEL_WORK_DIR: str(work_dir),
    }
    config: dict[str, Any] = {
        "Image": container.image,
        "Env": [f"{k}={v}" for k, v in env.items()],
        "Labels": labels,
        "HostConfig": host,
        "AttachStdout": False,
        "AttachStderr": False,
        **_argv(task),
    }
    if exposed:
        config["ExposedPorts"] = exposed
    return config


@dataclass(slots=True)
class _Found:
    """A container of this agent's work dir that the engine holds (``survey``)."""

    container_id: str
    running: bool
    exit_code: int | None = None
    oom_killed: bool = False


@dataclass(frozen=True, slots=True)
class DockerAdopted:
    process: ProcessFate
    exit_code: int | None = None
    signal: int | None = None
    message: str = ""


class DockerExecutor:
    """The Executor protocol for tasks with a container; sandboxes as the process executor's
    (``make_sandbox``), so the agent reads and collects them alike."""

    def __init__(
        self,
        work_dir: Path,
        sink: EventSink,
        clock: Clock,
        make_sandbox: Callable[[TaskSpec], Path],
        host: str | None = None,
        pull_timeout: float = 300.0,
    ) -> None:
        self.work_dir = work_dir.absolute()
        self.host = host or os.environ.get("DOCKER_HOST") or DEFAULT_HOST
        self.pull_timeout = pull_timeout
        self._sink = sink
        self._clock = clock
        self._make_sandbox = make_sandbox
        self._docker: aiodocker.Docker | None = None
        self._ids: dict[TaskKey, str] = {}  # the container of each task that runs or starts
        # Its container's id for its statuses, kept until the agent forgets the task (forget).
        self._reported_ids: dict[TaskKey, str] = {}
        self._sandboxes: dict[TaskKey, Path] = {}
        self._signalled: dict[TaskKey, int] = {}
        self._runs: set[asyncio.Task[None]] = set()
        self._found: dict[TaskKey, _Found] = {}
        self._cpu = CpuRates()

    @property
    def docker(self) -> aiodocker.Docker:
        if self._docker is None:  # made in the running loop (aiohttp's session needs one)
            self._docker = aiodocker.Docker(url=self.host)
        return self._docker

    def owns(self, framework_id: str, task_id: str) -> bool:
        return (framework_id, task_id) in self._sandboxes

    def container_id(self, framework_id: str, task_id: str) -> str:
        return self._reported_ids.get((framework_id, task_id), "")

    def forget(self, framework_id: str, task_id: str) -> None:
        self._reported_ids.pop((framework_id, task_id), None)

    def sandboxes_in_use(self) -> set[Path]:
        return set(self._sandboxes.values())

    # --- the Executor protocol -------------------------------------------------------------

    async def sample(self, now: float, timeout: float = 5.0) -> list[TaskUsage]:
        """What each running container uses, by the engine's stats: memory as ``docker stats``
        counts it (usage less the reclaimable page cache), cores from the CPU time between two
        measurements. A container the engine does not answer for within ``timeout`` is left
        out of this measurement (the next one tries again)."""
        ids = dict(self._ids)

        async def one(k: TaskKey, cid: str) -> TaskUsage | None:
            try:
                async with asyncio.timeout(timeout):
                    got = await self.docker.containers.container(cid).stats(stream=False)
            except (*ENGINE_ERRORS, TimeoutError):
                return None
            stats = got[0] if got else {}
            mem = memory_used_mib(stats.get("memory_stats") or {})
            total = (stats.get("cpu_stats") or {}).get("cpu_usage", {}).get("total_usage")
            if mem is None or not isinstance(total, int):
                return None  # not running (any more): its exit is on the way
            cpus = self._cpu.rate(k, now, total / 1e9)
            return TaskUsage(k[1], cpus=cpus, mem=mem, framework_id=k[0])

        found = await asyncio.gather(*(one(k, cid) for k, cid in ids.items()))
        self._cpu.keep(set(ids))
        return [u for u in found if u is not None]

    def start(self, task: TaskSpec, agent_id: str) -> None:
        k = (task.framework_id, task.task_id)
        self._sandboxes[k] = Path()  # owned from now on: a kill before the create is ours
        self._spawn(self._run(task, agent_id), f"container-{task.task_id}")

    def signal(self, framework_id: str, task_id: str, signal: Signal) -> None:
        k = (framework_id, task_id)
        if k not in self._sandboxes:
            return
        self._signalled[k] = int(signal)
        cid = self._ids.get(k)
        if cid is None:
            return  # not created yet: _run sees the kill before it starts the container
        self._spawn(self._kill(cid, signals.Signals(int(signal)).name), f"kill-{task_id}")

    async def close(self) -> None:
        """A clean stop: remove every container still there (the core killed their tasks
        first), then close the client. No container is left behind."""
        for cid in list(self._ids.values()):
            with contextlib.suppress(*ENGINE_ERRORS):
                await self.docker.containers.container(cid).delete(force=True)
        for run in list(self._runs):
            run.cancel()
        await asyncio.gather(*self._runs, return_exceptions=True)
        if self._docker is not None:
            await self._docker.close()
            self._docker = None

    # --- a new task ---------------------------------------------------------------------------

    def _spawn(self, coro: Any, name: str) -> None:
        run = spawn(coro, name, log)
        self._runs.add(run)
        run.add_done_callback(self._runs.discard)

    async def _kill(self, cid: str, signame: str) -> None:
        try:
            await self.docker.containers.container(cid).kill(signal=signame)
        except ENGINE_ERRORS as exc:  # gone already, or the engine: its exit says which
            log.info("container kill failed", container=cid[:12], error=engine_message(exc))

    async def _run(self, task: TaskSpec, agent_id: str) -> None:
        k = (task.framework_id, task.task_id)
        container = task.container
        assert container is not None  # routed here for its container (containerizers.py)

        def failed(message: str) -> None:
            self._sandboxes.pop(k, None)
            self._ids.pop(k, None)
            self._sink(
                e.LaunchFailed(
                    now=self._clock(),
                    task_id=task.task_id,
                    framework_id=task.framework_id,
                    message=message,
                )
            )

        problem = await self._ensure_image(container)
        if problem:
            failed(problem)
            return
        meta = task_dir(self.work_dir, task.framework_id, task.task_id)
        name = container_name(self.work_dir, task.framework_id, task.task_id)
        try:
            meta.mkdir(parents=True, exist_ok=True)
            (meta / "exit_status").unlink(missing_ok=True)
            sandbox = self._sandboxes[k] = self._make_sandbox(task)
            (sandbox / "stdout").touch()
            (sandbox / "stderr").touch()
            process: dict[str, Any] = {"container_name": name, "sandbox": str(sandbox)}
            write_atomically(meta / "process.json", json.dumps(process).encode())
        except OSError as exc:
            failed(f"cannot make the task's sandbox: {exc}")
            return
        cmd = task.command
        env = {
            **(cmd.environment if cmd else {}),
            **(cmd.secret_environment if cmd else {}),
            "CORRAL_TASK_ID": task.task_id,
            "CORRAL_FRAMEWORK_ID": task.framework_id,
            "CORRAL_AGENT_ID": agent_id,
            "CORRAL_SANDBOX": SANDBOX_IN_CONTAINER,
            "MESOS_SANDBOX": SANDBOX_IN_CONTAINER,
        }
        config = container_config(task, container, agent_id, self.work_dir, sandbox, env)
        try:
            with contextlib.suppress(aiodocker.DockerError):  # one of an earlier run, if any
                await self.docker.containers.container(name).delete(force=True)
            created = await self.docker.containers.create(config, name=name)
            cid = created.id
            self._ids[k] = self._reported_ids[k] = cid
            process["container_id"] = cid
            write_atomically(meta / "process.json", json.dumps(process).encode())
            if k in self._signalled:  # killed while its image was looked up: never started
                await created.delete(force=True)
                failed("killed before its container started")
                return
            await created.start()
            info = await created.show()
        except ENGINE_ERRORS as exc:
            cid = self._ids.pop(k, "")
            if cid:
                with contextlib.suppress(*ENGINE_ERRORS):
                    await self.docker.containers.container(cid).delete(force=True)
            failed(f"cannot start a container of image {container.image!r}: {engine_message(exc)}")
            return
        self._sink(
            e.ProcessStarted(
                now=self._clock(),
                task_id=task.task_id,
                framework_id=task.framework_id,
                pid=int(info.get("State", {}).get("Pid") or 0),
            )
        )
        log.info(
            "container started", task_id=task.task_id, container=cid[:12], image=container.image
        )
        await self._follow(k, cid, sandbox, meta, resumes={})

    async def _ensure_image(self, container: ContainerSpec) -> str:
        """Rule 3: "" when the image is there, else why the task cannot run."""
        image = container.image
        if not container.force_pull_image:
            try:
                await self.docker.images.inspect(image)
                return ""
            except aiodocker.DockerError as exc:
                if exc.status == UNREACHABLE:
                    return f"the docker engine at {self.host} is not reachable: {exc.message}"
                if exc.status != 404:
                    return f"cannot look up image {image!r}: {engine_message(exc)}"
            except ENGINE_ERRORS as exc:
                return f"the docker engine at {self.host} is not reachable: {engine_message(exc)}"
        try:
            await asyncio.wait_for(self.docker.images.pull(image), self.pull_timeout)
        except TimeoutError:
            return f"image {image!r} could not be pulled within {self.pull_timeout:g}s"
        except ENGINE_ERRORS as exc:
            return (
                f"image {image!r} is not on the engine and could not be pulled: "
                f"{engine_message(exc)}"
            )
        return ""

    # --- a running container ----------------------------------------------------------------

    async def _follow(
        self,
        k: TaskKey,
        cid: str,
        sandbox: Path,
        meta: Path,
        resumes: dict[str, Resume | None],
    ) -> None:
        """Copy its log into the sandbox until it exits, then report how it ended (rules 4, 5)."""
        box = self.docker.containers.container(cid)
        copies = [
            asyncio.ensure_future(
                self._copy_log(box, sandbox / name, meta / f"{name}.copied", resumes.get(name))
            )
            for name in STREAMS
        ]
        message = ""
        state: dict[str, Any] = {}
        while True:
            try:
                await box.wait()
                state = (await box.show()).get("State", {})
                if not state.get("Running"):
                    break
            except ENGINE_ERRORS as exc:
                try:  # a dropped wait, or the engine gone? ask it
                    state = (await box.show()).get("State", {})
                    if not state.get("Running"):
                        break
                except ENGINE_ERRORS:
                    message = f"the docker engine at {self.host} went away: {engine_message(exc)}"
                    break
        _, pending = await asyncio.wait(copies, timeout=LOG_DRAIN_SECONDS)
        for copy in pending:
            copy.cancel()
        await asyncio.gather(*copies, return_exceptions=True)
        code = state.get("ExitCode")
        status = self._exit_status(k, code if isinstance(code, int) else None)
        if state.get("OOMKilled"):
            status["memory_limit"] = True
        with contextlib.suppress(OSError):  # before the container goes: a restart reads it
            write_atomically(meta / "exit_status", json.dumps(status).encode())
        if not message:  # removed before the exit is reported: an ended task holds none
            with contextlib.suppress(*ENGINE_ERRORS):
                await box.delete(force=True)
        self._ids.pop(k, None)
        self._sandboxes.pop(k, None)
        self._sink(
            e.ProcessExited(
                now=self._clock(),
                task_id=k[1],
                framework_id=k[0],
                exit_code=status.get("exit_code"),
                signal=status.get("signal"),
                memory_limit=bool(status.get("memory_limit")),
                message=message,
            )
        )

    def _exit_status(self, k: TaskKey, code: int | None) -> dict[str, Any]:
        """Rule 5: the engine's exit code as the shim would have recorded it."""
        sent = self._signalled.pop(k, None)
        if code is None:
            return {"signal": int(signals.SIGKILL)}
        if (sent is not None and code == 128 + sent) or code == 128 + int(signals.SIGKILL):
            return {"signal": code - 128}
        return {"exit_code": code}

    async def _copy_log(
        self, box: Any, path: Path, cursor_path: Path, resume: Resume | None
    ) -> None:
        """Rule 4 for one stream; the cursor beside it says where a restarted agent goes on."""
        stream = path.name
        params: dict[str, Any] = {"timestamps": True}
        if resume is not None:
            params["since"] = resume.since_seconds
        lines: AsyncIterator[str] = box.log(
            stdout=stream == "stdout", stderr=stream == "stderr", follow=True, **params
        )
        await copy_log(lines, path, cursor_path, resume)

    # --- a task of the agent's previous run -------------------------------------------------

    async def survey(self) -> None:
        """Rule 6: this work dir's containers, before the tasks are recovered."""
        label = f"{LABEL_WORK_DIR}={self.work_dir}"
        try:
            boxes = await self.docker.containers.list(
                all=True, filters=json.dumps({"label": [label]})
            )
            for box in boxes:
                info = await box.show()
                labels = info.get("Config", {}).get("Labels") or {}
                k = (labels.get(LABEL_FRAMEWORK, ""), labels.get(LABEL_TASK, ""))
                state = info.get("State", {})
                code = state.get("ExitCode")
                self._found[k] = _Found(
                    container_id=str(info["Id"]),
                    running=bool(state.get("Running")),
                    exit_code=code if isinstance(code, int) else None,
                    oom_killed=bool(state.get("OOMKilled")),
                )
        except ENGINE_ERRORS as exc:
            log.warning(
                "the docker engine cannot be surveyed: container tasks are not re-attached",
                host=self.host,
                error=engine_message(exc),
            )

    def adopt(
        self, framework_id: str, task_id: str, meta: Path, process: dict[str, Any] | None
    ) -> DockerAdopted:
        """What became of a checkpointed container task; a running one is followed again."""
        k = (framework_id, task_id)
        found = self._found.pop(k, None)
        if found is not None and found.running:
            sandbox = Path(str((process or {}).get("sandbox", "")))
            self._ids[k] = self._reported_ids[k] = found.container_id
            self._sandboxes[k] = sandbox
            resumes = {
                name: read_resume(meta / f"{name}.copied", sandbox / name) for name in STREAMS
            }
            self._spawn(
                self._follow(k, found.container_id, sandbox, meta, resumes),
                f"container-{task_id}",
            )
            return DockerAdopted(ProcessFate.ALIVE)
        if found is not None:
            self._spawn(self._remove(found.container_id), f"remove-{task_id}")
            code = found.exit_code
            if code is not None and code > 128:
                return DockerAdopted(ProcessFate.EXITED, signal=code - 128)
            return DockerAdopted(ProcessFate.EXITED, exit_code=code)
        try:
            status = read_json(meta / "exit_status")
        except ValueError:
            status = None
        if isinstance(status, dict):
            if isinstance(status.get("signal"), int):
                return DockerAdopted(ProcessFate.EXITED, signal=status["signal"])
            if isinstance(status.get("exit_code"), int):
                return DockerAdopted(ProcessFate.EXITED, exit_code=status["exit_code"])
        if process is None:
            return DockerAdopted(ProcessFate.NOT_STARTED)
        return DockerAdopted(ProcessFate.UNKNOWN)

    def remove_strays(self) -> int:
        """Remove the surveyed containers no recovered task claimed (rule 6)."""
        strays = list(self._found.items())
        self._found.clear()
        for (framework_id, task_id), found in strays:
            log.warning(
                "container of no recovered task removed",
                container=found.container_id[:12],
                framework_id=framework_id,
                task_id=task_id,
            )
            self._spawn(self._remove(found.container_id), f"remove-{task_id}")
        return len(strays)

    async def _remove(self, cid: str) -> None:
        with contextlib.suppress(*ENGINE_ERRORS):
            await self.docker.containers.container(cid).delete(force=True)
