"""One agent: the core, its executor and its stream to the master, in one asyncio loop.

``Agent`` holds no thread and no task of its own besides the stream's, so one process can run
many (``corral agent --simulate --count N``). Every event, from the master, an executor or a
timer, goes through ``post``: the core handles it and the shell carries out the commands at once,
in order. An executor that reports synchronously cannot re-enter the core: ``post`` queues.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import random
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import grpc.aio

from corral import containers
from corral.agent import convert, sandbox_files
from corral.agent.checkpoint import (
    AgentConfigCheckpoint,
    AgentIdentity,
    AgentIdStore,
    FileAgentIdStore,
    MemoryAgentIdStore,
    TaskCheckpoints,
    WorkDirLock,
)
from corral.agent.config import AgentConfig
from corral.agent.connection import ChannelPool, MasterConnection
from corral.agent.containerizers import Containerizers
from corral.agent.core import AgentCore, AgentCoreConfig
from corral.agent.core import commands as c
from corral.agent.core import events as e
from corral.agent.core.types import ProcessFate, RecoveredTask, TaskState
from corral.agent.cpu_control import detect_cpu
from corral.agent.executor import Executor
from corral.agent.executor_docker import DockerExecutor
from corral.agent.executor_process import ProcessExecutor
from corral.agent.executor_simulated import SimulatedExecutor
from corral.agent.gpu_devices import GpuDevices
from corral.agent.memory_control import MemoryControl
from corral.agent.memory_detect import detect
from corral.agent.mesos_executor.executors import MesosExecutors
from corral.agent.sandbox_collector import SandboxCollector, collector_for
from corral.agent.usage_monitor import UsageMonitor
from corral.detector import MasterDetector, make_detector, parse_master
from corral.logging import get_logger
from corral.resources import Resources, parse_resources
from corral.supervise import spawn
from corral.v1 import agent_pb2, common_pb2

log = get_logger("corral.agent")
_READS = 4  # sandbox files read at once for the master (corral logs)


# Status update ids must be unique, not unpredictable: a per-process generator seeded by the OS
# gives them at a tenth of uuid4()'s cost (one os.urandom call per status).
_uuid_source = random.Random(os.urandom(32))


def random_uuid() -> bytes:
    """The 16 bytes of a random (version 4) UUID."""
    b = bytearray(_uuid_source.randbytes(16))
    b[6] = (b[6] & 0x0F) | 0x40  # version 4
    b[8] = (b[8] & 0x3F) | 0x80  # RFC 4122 variant
    return bytes(b)


def random_phase() -> float:
    """Where in its interval an agent's first heartbeat falls, in (0, 1] (AgentCore)."""
    return 1.0 - _uuid_source.random()


class Agent:
    def __init__(
        self,
        config: AgentConfig,
        *,
        channel: grpc.aio.Channel | None = None,
        detector: MasterDetector | None = None,
        pool: ChannelPool | None = None,
        slot: int = 0,
        id_store: AgentIdStore | None = None,
        clock: Callable[[], float] = time.time,
        new_uuid: Callable[[], bytes] = random_uuid,
        memory: MemoryControl | None = None,
        on_registered: Callable[[], None] | None = None,
    ) -> None:
        self.config = config
        # Told each REGISTERED (the simulated agents' start ramp, agent/registration_ramp.py).
        self._on_registered = on_registered
        self._clock = clock
        # A fixed channel (tests), or the leader found by a detector (the master spec's, or one
        # shared by the agents of a process) through a pool of channels.
        self._channel = channel
        self._detector = detector
        self._pool = pool
        self._slot = slot
        if id_store is None:
            id_store = (
                FileAgentIdStore(config.work_dir) if config.checkpoint else MemoryAgentIdStore()
            )
        self.id_store = id_store
        self._lock = WorkDirLock(config.work_dir) if config.checkpoint else None
        self.core = AgentCore(
            new_uuid,
            agent_id="",  # loaded in run(), after the work dir is locked
            config=AgentCoreConfig(
                default_grace_period=config.default_grace_period,
                status_backoff=config.status_backoff,
                require_command=not config.simulate,
                checkpoint=config.checkpoint,
                mem_total=config.resources.mem,
                thresholds=config.thresholds,
                revocable_margin=config.revocable_margin,
            ),
            phase=random_phase,
        )
        self._processes: ProcessExecutor | None = None
        self._mesos: MesosExecutors | None = None  # custom executors (agent/mesos_executor/)
        self._docker: DockerExecutor | None = None
        self._gpus: GpuDevices | None = None
        self.usage: UsageMonitor | None = None
        self.sandbox_gc: SandboxCollector | None = None
        self.memory_notes: list[str] = []  # why --cgroups auto passed over a way
        if config.simulate:
            self.executor: Executor = SimulatedExecutor(self.post, clock, self.post_many)
        else:
            if memory is None:  # ControlUnavailable when --cgroups v1/v2 cannot be used
                memory, self.memory_notes = detect(config.cgroups, config.work_dir)
            in_use = None
            # Custom executors (Mesos' executor API) around whatever runs processes; it sees
            # their processes' ends first.
            mesos = MesosExecutors(
                self.post,
                self.post,
                clock,
                config.hostname,
                config.checkpoint,
                lambda t: t.kill_grace_period or config.default_grace_period,
                self._send_framework_message,
                config.work_dir if config.checkpoint else None,
            )
            self._mesos = mesos
            sink = mesos.observe
            router: Containerizers | None = None
            # The seam (containerizers.py): only an agent that runs more than processes, or
            # hands out GPU devices, routes its tasks; a process agent's path is unchanged.
            if config.containerizers != containers.DEFAULT or config.gpu_devices:
                gpus = None
                if config.gpu_devices:
                    where = config.work_dir / "gpu_devices.json" if config.checkpoint else None
                    gpus = self._gpus = GpuDevices(config.gpu_devices, where)
                router = Containerizers(mesos.observe, clock, config.containerizers, gpus)
                sink = router.observe
            cpu, cpu_note = detect_cpu(memory, config.work_dir)  # cpu_control.py
            if cpu_note:
                self.memory_notes.append(cpu_note)
            self.executor = self._processes = ProcessExecutor(
                config.work_dir, sink, clock, memory, cpu
            )
            if router is not None:
                router.processes = self._processes
                if containers.DOCKER in config.containerizers:
                    router.docker = self._docker = DockerExecutor(
                        config.work_dir,
                        sink,
                        clock,
                        self._processes.make_sandbox,
                        host=config.docker_host,
                    )
                self.executor, in_use = router, router.sandboxes_in_use
            mesos.inner, self.executor = self.executor, mesos
            mesos.resize = self._processes.resize
            self.usage = UsageMonitor(
                self._processes,
                self.post,
                clock,
                config.usage_interval,
                self._docker,
            )
            self.sandbox_gc = collector_for(
                self._processes, config.sandbox_gc, config.disk_watch_interval, in_use
            )
        self.task_checkpoints = TaskCheckpoints(config.work_dir) if config.checkpoint else None
        self._info = convert.agent_info(
            config.hostname, config.allocatable, self._advertised(), config.taints, name=config.name
        )
        self._log = log.bind(agent=config.hostname)
        # Debug lines per status cost as much as sending it when nobody reads them.
        self._debug = self._log.is_enabled_for(logging.DEBUG)
        self._queue: deque[e.Event] = deque()
        self._dispatching = False
        self._seq = itertools.count(1)
        self._tick: asyncio.TimerHandle | None = None
        self._grace: dict[tuple[str, str], asyncio.TimerHandle] = {}  # (framework, task)
        self._done = asyncio.Event()
        self._failure: BaseException | None = None
        self.connection: MasterConnection | None = None
        self.master_id = ""
        self._reads = asyncio.Semaphore(_READS)  # sandbox reads at once (sandbox_files.py)
        self._read_tasks: set[asyncio.Task[None]] = set()

    @property
    def agent_id(self) -> str:
        return self.core.agent_id

    # --- lifecycle -----------------------------------------------------------------------

    async def run(self) -> int:
        """Run until the core says Stop (after ``stop()`` or SHUTDOWN); 0 on a clean stop."""
        if self._lock is not None:
            self.config.work_dir.mkdir(parents=True, exist_ok=True)
            self._lock.acquire()  # raises WorkDirBusy
        identity = self.id_store.load()
        self.core.agent_id, self.core.secret = identity.agent_id, identity.secret
        self.core.principal = identity.principal
        if self.task_checkpoints is not None:
            if self._docker is not None:
                await self._docker.survey()  # its containers, found by label before recovery
            self._recover(self.task_checkpoints)  # before the stream: REGISTER lists the tasks
        detector, pool = self._detector, self._pool
        own_detector = own_pool = False
        if self._channel is None:
            if detector is None:
                detector, own_detector = make_detector(parse_master(self.config.master)), True
            if pool is None:
                pool, own_pool = ChannelPool(self.config.tls), True
        self.connection = MasterConnection(
            self._channel,
            self,
            backoff=self.config.reconnect_backoff,
            name=self.config.hostname,
            detector=detector if self._channel is None else None,
            pool=pool,
            slot=self._slot,
        )
        # The stream loop runs until close() below; ending before that (a bug) fails the agent,
        # which exits 1 for its supervisor to restart it, instead of running on unconnected.
        stream = spawn(
            self.connection.run(),
            "agent-stream",
            self._log,
            forever=True,
            on_failure=self._stream_failed,
            stopping=self._done.is_set,
        )
        # Measuring usage and collecting sandboxes: real tasks only.
        loops = [
            spawn(loop.run(), name, self._log)
            for loop, name in ((self.usage, "agent-usage"), (self.sandbox_gc, "agent-sandbox-gc"))
            if loop is not None
        ]
        self._log.info(
            "agent starting",
            master=self.config.master,
            agent_id=self.agent_id,
            resources=str(self.config.resources),
            simulate=self.config.simulate,
            usage=self._processes.memory.name if self._processes is not None else "",
            cpu_limits=self._processes.cpu.name if self._processes is not None else "",
            usage_notes="; ".join(self.memory_notes),
        )
        try:
            await self._done.wait()
            await self.connection.close(flush_timeout=self.config.flush_timeout)
        finally:
            for task in (stream, *loops):
                task.cancel()
            await asyncio.gather(stream, *loops, return_exceptions=True)
            self._cancel_timers()
            await self.executor.close()
            if own_pool and pool is not None:
                await pool.close()
            if own_detector and detector is not None:
                await detector.close()
            if self._lock is not None:
                self._lock.release()
        if self._failure is not None:
            self._log.error("agent failed", error=repr(self._failure))
            return 1
        self._log.info("agent stopped", agent_id=self.agent_id)
        return 0

    # --- the checkpoint ----------------------------------------------------------------------

    def _recover(self, store: TaskCheckpoints) -> None:
        """Check the configuration against the checkpointed one (``ConfigChanged`` if it
        changed), then hand the tasks of the previous run to the core (``Recovered``), each
        with what became of its process; re-attached ones are watched from now on."""
        configs = AgentConfigCheckpoint(self.config.work_dir)
        saved = configs.load()
        if self.config.resources_detected and saved is not None and self.agent_id:
            with contextlib.suppress(ValueError, TypeError):
                disk = parse_resources(str(saved["resources"])).disk
                self._set_resources(replace(self.config.resources, disk=disk))
        current = {
            "hostname": self.config.hostname,
            "resources": str(self.config.resources),
            "attributes": dict(sorted(self.config.attributes.items())),
            "taints": [str(t) for t in self.config.taints],
        }
        if self.agent_id:
            configs.check(current)  # raises ConfigChanged
        configs.save(current)
        records, problems = store.load()
        for problem in problems:
            self._log.warning("unreadable task checkpoint skipped", problem=problem)
        if not self.agent_id:
            # The id was deleted to join as a new agent: the old agent's tasks go with it.
            for record in records:
                killed = self._processes is not None and self._processes.kill_orphan(record.process)
                store.forget(record.framework_id, record.task.task_id)
                self._log.warning(
                    "task of a former agent id forgotten",
                    task_id=record.task.task_id,
                    framework_id=record.framework_id,
                    killed=killed,
                )
            if self._docker is not None:
                self._docker.remove_strays()
            if self._gpus is not None:
                self._gpus.keep_only(set())
            return
        recovered: list[RecoveredTask] = []
        for record in records:
            spec = convert.task_from_pb(record.task, record.framework_id)
            latest = convert.status_from_pb(record.latest)
            fate = ProcessFate.EXITED  # a terminal task: its process no longer matters
            extra: dict[str, Any] = {}
            if not latest.state.terminal and spec.container is not None and self._docker:
                got = self._docker.adopt(
                    spec.framework_id, spec.task_id, record.directory, record.process
                )
                fate = got.process
                extra = {"exit_code": got.exit_code, "signal": got.signal, "message": got.message}
            elif not latest.state.terminal and self._processes is not None:
                adopted = self._processes.adopt(
                    spec.task_id,
                    record.directory,
                    record.process,
                    record.exit_status,
                    framework_id=spec.framework_id,
                )
                fate = adopted.process
                if spec.executor_id and fate is ProcessFate.ALIVE and self._mesos is not None:
                    self._mesos.recover(spec, self.agent_id)  # its executor re-subscribes
                extra = {
                    "exit_code": adopted.exit_code,
                    "signal": adopted.signal,
                    "message": adopted.message,
                }
            recovered.append(
                RecoveredTask(
                    spec=spec,
                    latest=latest,
                    pending=tuple(convert.status_from_pb(s) for s in record.pending),
                    process=fate,
                    **extra,
                )
            )
            self._log.info(
                "task recovered",
                task_id=spec.task_id,
                framework_id=spec.framework_id,
                state=latest.state.name,
                process=fate.value,
                unacknowledged=len(record.pending),
            )
        recovered = self._recover_attached(recovered)
        if self._docker is not None:
            self._docker.remove_strays()
        if self._gpus is not None:  # gpu_devices.py rule 4
            self._gpus.keep_only(
                {
                    (r.spec.framework_id, r.spec.task_id)
                    for r in recovered
                    if r.process is ProcessFate.ALIVE
                }
            )
        if recovered:
            self.post(e.Recovered(now=self._clock(), tasks=tuple(recovered)))

    def _recover_attached(self, recovered: list[RecoveredTask]) -> list[RecoveredTask]:
        """Tasks handed to a running custom executor have no process of their own: one whose
        executor's process was re-attached carries on in it (its executor re-subscribes)."""
        owners = {
            (r.spec.framework_id, r.spec.executor_id): r.spec.task_id
            for r in recovered
            if r.spec.executor_id and r.process is ProcessFate.ALIVE
        }
        out = []
        for r in recovered:
            owner = owners.get((r.spec.framework_id, r.spec.executor_id))
            if (
                owner is not None
                and owner != r.spec.task_id
                and r.process is ProcessFate.NOT_STARTED
                and not r.latest.state.terminal
                and self._mesos is not None
            ):
                r = replace(r, process=ProcessFate.ALIVE, executor_task_id=owner)
                self._mesos.recover_attached(r.spec, owner)
            out.append(r)
        return out

    def _set_resources(self, resources: Resources) -> None:
        self.config = replace(self.config, resources=resources)
        self._info = convert.agent_info(
            self.config.hostname,
            self.config.allocatable,
            self._advertised(),
            self.config.taints,
            name=self.config.name,
        )

    def _advertised(self) -> dict[str, str]:
        """The attributes the agent registers with: its own, and what runs its tasks when that
        is more than processes (corral.containers rule 1: no attribute means processes only,
        so a process agent's attributes read as they always did)."""
        if self.config.simulate or self.config.containerizers == containers.DEFAULT:
            return dict(self.config.attributes)
        return {
            **self.config.attributes,
            containers.CONTAINERIZERS_ATTRIBUTE: ",".join(self.config.containerizers),
        }

    def _checkpoint(self, cmd: c.CheckpointTask | c.ForgetTask) -> None:
        store = self.task_checkpoints
        if store is None:
            return
        task_id = cmd.task.task_id if isinstance(cmd, c.CheckpointTask) else cmd.task_id
        try:
            if isinstance(cmd, c.CheckpointTask):
                store.save(
                    convert.task_to_pb(cmd.task),
                    cmd.task.framework_id,
                    convert.status_to_pb(cmd.latest),
                    [convert.status_to_pb(s) for s in cmd.pending],
                )
            else:
                store.forget(cmd.framework_id, cmd.task_id)
        except OSError as exc:
            # The task goes on; only a restart of the agent would lose track of it.
            self._log.error(
                "task checkpoint not written",
                task_id=task_id,
                error=str(exc),
                stimulus_id=cmd.stimulus_id,
            )

    def _stream_failed(self, _task: asyncio.Task[Any], exc: BaseException | None) -> None:
        self._failure = exc or RuntimeError("the stream to the master ended")
        self._done.set()

    def stop(self, reason: str = "stopped") -> None:
        """Kill every task, send their statuses if connected, then let ``run`` return."""
        self.post(e.Shutdown(now=self._clock(), reason=reason))

    # --- the one way into the core ----------------------------------------------------------

    def post(self, event: e.Event) -> None:
        self.post_many((event,))

    def post_many(self, events: Sequence[e.Event]) -> None:
        """Events that arrived together; the core handles whatever is queued as one batch."""
        for event in events:
            if not event.stimulus_id:
                event = replace(event, stimulus_id=self._stimulus(type(event).__name__))
            self._queue.append(event)
        if self._dispatching or self._failure is not None:
            return
        self._dispatching = True
        current: list[e.Event] = []
        try:
            while self._queue:
                current = list(self._queue)
                self._queue.clear()
                for command in self.core.handle_many(current):
                    self._execute(command)
        except Exception as exc:  # a core bug: stop loudly rather than run on a wrong state
            self._log.exception("agent core failed", core_events=repr(current))
            self._failure = exc
            self._queue.clear()
            self._done.set()
        finally:
            self._dispatching = False

    def _execute(self, cmd: c.Command) -> None:
        conn = self.connection
        match cmd:
            case c.SendStatusUpdates(statuses=statuses):
                if conn is not None:
                    slot = conn.status_slot
                    for s in statuses:
                        out = slot((s.framework_id, s.task_id), s.state is TaskState.STARTING)
                        if out is None:
                            break
                        convert.status_into_pb(s, out)
                        if self._docker is not None:
                            cid = self._docker.container_id(s.framework_id, s.task_id)
                            if cid:
                                out.container_status.container_id = cid
                for s in statuses if self._debug else ():
                    self._log.debug(
                        "status",
                        task_id=s.task_id,
                        state=s.state.name,
                        message=s.message,
                        stimulus_id=cmd.stimulus_id,
                    )
            case c.SendExecutorTerminated():
                if conn is not None:  # best effort, as Mesos' agent sends it
                    conn.send(
                        agent_pb2.AgentMessage(
                            executor_terminated=common_pb2.ExecutorTerminated(
                                framework_id=cmd.framework_id,
                                executor_id=cmd.executor_id,
                                status=cmd.status,
                                message=cmd.message,
                            )
                        )
                    )
            case c.SendUsage(report=report):
                if conn is not None:
                    conn.send(convert.usage_to_pb(report))
            case c.StartProcess(task=task):
                self.executor.start(task, self.agent_id)
            case c.AttachToExecutor():
                if self._mesos is not None:
                    self._mesos.attach(cmd)
                else:  # no custom executors on a simulated agent: the core's task fails
                    self.post(
                        e.LaunchFailed(
                            now=self._clock(),
                            task_id=cmd.task.task_id,
                            framework_id=cmd.task.framework_id,
                            message="this agent runs no custom executors",
                        )
                    )
            case c.SignalGroup(task_id=task_id, framework_id=framework_id, signal=signal):
                self.executor.signal(framework_id, task_id, signal)
            case c.ScheduleTick(at=at):
                if self._tick is not None:
                    self._tick.cancel()
                self._tick = self._call_at(at, self._on_tick)
            case c.ScheduleGraceExpiry(task_id=task_id, framework_id=framework_id, at=at):
                key = (framework_id, task_id)
                old = self._grace.pop(key, None)
                if old is not None:
                    old.cancel()
                self._grace[key] = self._call_at(at, self._on_grace, key)
            case c.SendHeartbeat(timestamp=timestamp):
                if conn is not None:
                    conn.send_heartbeat(timestamp)
            case c.SendRegister():
                if conn is not None:
                    conn.send(convert.register_to_pb(cmd, self._info))
            case c.CheckpointTask() | c.ForgetTask():
                self._checkpoint(cmd)
                if isinstance(cmd, c.ForgetTask) and self._docker is not None:
                    self._docker.forget(cmd.framework_id, cmd.task_id)
            case c.CheckpointAgentId(agent_id=agent_id, secret=secret, principal=principal):
                self.id_store.save(AgentIdentity(agent_id, secret, principal))
                self._log.info("agent id assigned", agent_id=agent_id)
            case c.LogWarning(message=message, task_id=task_id):
                self._log.warning(message, task_id=task_id, stimulus_id=cmd.stimulus_id)
            case c.Stop():
                self._done.set()
            case _:
                raise TypeError(f"unknown command {type(cmd).__name__}")

    # --- timers ----------------------------------------------------------------------------

    def _call_at(
        self, at: float, callback: Callable[..., None], *args: object
    ) -> asyncio.TimerHandle:
        loop = asyncio.get_running_loop()
        return loop.call_later(max(0.0, at - self._clock()), callback, *args)

    def _stimulus(self, kind: str) -> str:
        """A new stimulus id, made with its event: ``post_many``'s ``replace`` of an event
        without one costs ~3 µs, and every agent's timer fires a tick."""
        return f"{kind}-{next(self._seq)}"

    def _on_tick(self) -> None:
        self._tick = None
        self.post(e.Tick(now=self._clock(), stimulus_id=self._stimulus("Tick")))

    def _on_grace(self, key: tuple[str, str]) -> None:
        self._grace.pop(key, None)
        self.post(
            e.GraceExpired(
                now=self._clock(),
                stimulus_id=self._stimulus("GraceExpired"),
                framework_id=key[0],
                task_id=key[1],
            )
        )

    def _cancel_timers(self) -> None:
        if self._tick is not None:
            self._tick.cancel()
        for handle in self._grace.values():
            handle.cancel()
        self._grace.clear()

    # --- StreamOwner: called by the connection ----------------------------------------------

    def on_open(self) -> None:
        self.post(e.StreamOpened(now=self._clock()))

    def on_message(self, message: agent_pb2.MasterMessage) -> None:
        kind = message.WhichOneof("message")
        if kind == "read_file":
            self._read_file(message.read_file)  # the shell's, not the core's: no task changes
            return
        if kind == "framework_message":  # to a custom executor: best effort, no task changes
            if self._mesos is not None:
                self._mesos.framework_message(message.framework_message)
            return
        if kind == "registered":
            self.master_id = message.registered.master_id
            self._log.info(
                "registered",
                agent_id=message.registered.agent_id,
                master_id=self.master_id,
                heartbeat=message.registered.heartbeat_interval_seconds,
            )
            if self._on_registered is not None:
                self._on_registered()
        for event in convert.events_from_pb(message, self._clock(), self._stimulus(kind)):
            self.post(event)

    def _send_framework_message(self, message: common_pb2.FrameworkMessage) -> None:
        """From a custom executor to its framework, through the master (best effort)."""
        if self.connection is not None:
            self.connection.send(agent_pb2.AgentMessage(framework_message=message))

    def _read_file(self, request: agent_pb2.ReadSandboxFile) -> None:
        """Answer the master's read of a sandbox file (sandbox_files.py) from a worker thread,
        at most ``_READS`` at once."""
        conn = self.connection
        if conn is None:
            return
        if self._processes is None:
            chunk = agent_pb2.SandboxFileChunk(
                request_id=request.request_id,
                error=agent_pb2.SANDBOX_READ_ERROR_UNSUPPORTED,
                message="the agent runs simulated tasks: they have no sandbox",
            )
            conn.send(agent_pb2.AgentMessage(file_chunk=chunk))
            return
        sandboxes = self._processes.sandboxes

        async def answer() -> None:
            async with self._reads:
                chunk = await asyncio.to_thread(sandbox_files.read, sandboxes, request)
            conn.send(agent_pb2.AgentMessage(file_chunk=chunk))

        task = spawn(answer(), "agent-sandbox-read", self._log)
        self._read_tasks.add(task)  # the loop keeps only a weak reference to a task
        task.add_done_callback(self._read_tasks.discard)

    def on_close(self, error: str) -> None:
        self.post(e.Disconnected(now=self._clock()))
