"""Custom executors as Mesos runs them (one adapter in the agent's shell).

A task whose TaskInfo names an ``executor`` (``TaskSpec.executor_id``; from the master's Mesos
API) is started as its executor: the executor's command, in the task's sandbox, by the inner
executor (processes, cgroups, exit status as for any task), with Mesos' executor environment
(``MESOS_AGENT_ENDPOINT``, ``MESOS_FRAMEWORK_ID``, ``MESOS_EXECUTOR_ID``, ``MESOS_DIRECTORY``,
``MESOS_SANDBOX``, ``MESOS_CHECKPOINT``, ...). The executor then subscribes on the agent's
``POST /api/v1/executor`` (an HTTP listener of this adapter on 127.0.0.1), gets SUBSCRIBED and
LAUNCH of its task, and reports the task's states with UPDATE calls: each becomes an
``ExecutorUpdate`` of the core, whose status update manager relays it to the master until the
master acknowledges it; the executor gets ACKNOWLEDGED (its own uuid) once the agent holds the
update (checkpointed, as Mesos acknowledges executors). A kill of the task is a KILL event to the
executor (SIGTERM to its process group before it subscribed), SIGKILL when the grace period
ends, as for any task. When its tasks have all ended the executor gets SHUTDOWN and, after the grace
period, SIGKILL. An executor that exits first fails its task (the core: EXECUTOR_TERMINATED).

Agent restart (Mesos' recovery): with a checkpointing agent the executor API comes back on the
port it had (kept in ``work_dir/mesos_executor_api.json``), so an executor whose process the
restarted agent re-attached to re-subscribes (pymesos, told ``MESOS_CHECKPOINT=1``, retries);
one that has not subscribed again within ``REREGISTRATION_TIMEOUT`` is killed, and its task
fails EXECUTOR_TERMINATED, as Mesos kills executors that miss --executor_reregistration_timeout.

One executor, many tasks (Mesos' rule): a task naming the executor id of a live executor of its
framework here is handed to it (the core's ``AttachToExecutor``): LAUNCH on its stream (at its
subscription if it has not subscribed yet), and the executor process' cgroups take the limits
of its tasks together. Its tasks' kills are KILL events for them; a kill whose grace period ends
kills the executor's process (and so its other tasks, as the first task's kill always did); a
task handed to an executor that has not subscribed yet and is killed never reaches it. The
executor gets SHUTDOWN once every task it was given has ended; a task handed to it after that
fails to launch. When the process ends, the core ends the tasks it still ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from aiohttp import web

from corral.agent.core import commands as c
from corral.agent.core import events as e
from corral.agent.core.types import CommandSpec, Signal, TaskSpec
from corral.agent.executor import Clock, EventSink, Executor
from corral.agent.mesos_executor import wire
from corral.logging import get_logger
from corral.v1 import common_pb2 as pb

log = get_logger("corral.agent.mesos_executor")

TaskKey = tuple[str, str]  # (framework id, task id)
JSON = "application/json"
# Longer than Mesos' 2 s default: pymesos retries after about 2, 4, 8 and 15 s, and a restarted
# agent takes a moment to listen again.
REREGISTRATION_TIMEOUT = 30.0
PORT_FILE = "mesos_executor_api.json"


@dataclass(slots=True)
class _Run:
    """One executor: its first task (whose process it is) and the tasks handed to it since."""

    task: TaskSpec
    agent_id: str
    stream: asyncio.Queue[dict[str, Any] | None] | None = None  # while subscribed
    subscribed: bool = False  # it has subscribed (to this agent process) at least once
    shut_down: bool = False  # SHUTDOWN sent: every task it was given ended
    timers: list[asyncio.TimerHandle] = field(default_factory=list)
    tasks: dict[str, TaskSpec] = field(default_factory=dict)  # by task id, the first first
    launched: set[str] = field(default_factory=set)  # LAUNCH sent
    ended: set[str] = field(default_factory=set)  # their terminal status arrived
    limits: tuple[float, float, float] | None = None  # its tasks' together, once handed more

    def __post_init__(self) -> None:
        self.tasks.setdefault(self.task.task_id, self.task)

    @property
    def key(self) -> TaskKey:
        """Its process' key: its first task's."""
        return (self.task.framework_id, self.task.task_id)

    @property
    def wire(self) -> pb.TaskInfo:
        assert isinstance(self.task.wire, pb.TaskInfo)
        return self.task.wire


class MesosExecutors:
    """An ``Executor`` around the agent's own: tasks with an executor id here, the rest to it.
    Made before it (which reports through ``observe``): set ``inner`` before the first task."""

    inner: Executor

    def __init__(
        self,
        post: EventSink,
        sink: EventSink,
        clock: Clock,
        hostname: str,
        checkpoint: bool,
        shutdown_grace: Callable[[TaskSpec], float],
        to_framework: Callable[[pb.FrameworkMessage], None],
        work_dir: Path | None = None,
    ) -> None:
        self._post = post  # the core's queue: ExecutorUpdate
        self._sink = sink  # where the inner executor's events go on to
        self._clock = clock
        self._hostname = hostname
        self._checkpoint = checkpoint
        self._grace = shutdown_grace
        self._to_framework = to_framework
        # Where the port is kept across restarts (None: not checkpointing, any free port).
        self._port_file = work_dir / PORT_FILE if work_dir is not None else None
        # An executor's process takes other limits (framework id, task id, cpus, cpus limit,
        # mem limit): set by the agent to its process executor's.
        self.resize: Callable[[str, str, float, float, float], None] = lambda *_: None
        self._runs: dict[TaskKey, _Run] = {}  # by each of its tasks
        self._by_executor: dict[tuple[str, str], TaskKey] = {}  # (framework, executor id)
        self._runner: web.AppRunner | None = None
        self._serving: asyncio.Task[str] | None = None
        self.endpoint = ""  # HOST:PORT of /api/v1/executor, once listening
        self._tasks: set[asyncio.Task[None]] = set()

    # --- the Executor protocol ------------------------------------------------------------

    def start(self, task: TaskSpec, agent_id: str) -> None:
        if not task.executor_id:
            self.inner.start(task, agent_id)
            return
        executor = (task.framework_id, task.executor_id)
        if executor in self._by_executor:  # the core hands such a task to it instead
            self._fail(task, f"executor {task.executor_id!r} already runs here")
            return
        # Known at once: a task handed to it next (same launch) finds it while it starts.
        key = (task.framework_id, task.task_id)
        self._runs[key] = _Run(task=task, agent_id=agent_id)
        self._by_executor[executor] = key
        job = asyncio.get_running_loop().create_task(self._launch(task, agent_id))
        self._tasks.add(job)
        job.add_done_callback(self._tasks.discard)

    def signal(self, framework_id: str, task_id: str, signal: Signal) -> None:
        run = self._runs.get((framework_id, task_id))
        if run is not None and signal is Signal.TERM and run.stream is not None:
            run.stream.put_nowait(wire.kill(task_id))  # the executor kills its task
            return
        if run is not None and run.key != (framework_id, task_id):  # a task handed to it
            if signal is Signal.TERM:
                # Not subscribed: the task never reached it, and now will not.
                del run.tasks[task_id]
                del self._runs[(framework_id, task_id)]
                self._ended(run, task_id)
                self._sink(
                    e.ProcessExited(
                        now=self._clock(),
                        task_id=task_id,
                        framework_id=framework_id,
                        signal=int(Signal.TERM),
                        message="killed before its executor subscribed",
                    )
                )
                return
            framework_id, task_id = run.key  # SIGKILL: the executor's process
        # Not subscribed (yet, or any more): its process group, as for any task.
        self.inner.signal(framework_id, task_id, signal)

    def attach(self, cmd: c.AttachToExecutor) -> None:
        """Hand ``cmd.task`` to its running executor (LAUNCH now, or when it subscribes)."""
        task = cmd.task
        key = (task.framework_id, task.task_id)
        run = self._runs.get((task.framework_id, cmd.executor_task_id))
        if run is None or run.shut_down:
            self._fail(task, f"executor {task.executor_id!r} is shutting down or gone")
            return
        if not isinstance(task.wire, pb.TaskInfo):
            self._fail(task, "a custom executor's task needs its TaskInfo")
            return
        run.tasks[task.task_id] = task
        self._runs[key] = run
        run.limits = (cmd.cpus, cmd.cpus_limit, cmd.mem_limit)
        self.resize(*run.key, *run.limits)  # not started yet: when it starts (observe)
        if run.stream is not None:
            run.launched.add(task.task_id)
            run.stream.put_nowait(wire.launch(task.wire, task.framework_id, run.agent_id))
        # Its process is the executor's: the task has started as far as the core is concerned.
        self._sink(
            e.ProcessStarted(
                now=self._clock(), task_id=task.task_id, framework_id=task.framework_id
            )
        )

    async def close(self) -> None:
        for run in self._runs.values():
            if run.stream is not None:
                run.stream.put_nowait(None)
            for timer in run.timers:
                timer.cancel()
        for job in list(self._tasks):
            job.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
        await self.inner.close()

    def recover(self, task: TaskSpec, agent_id: str) -> None:
        """A task of the previous run whose executor process still runs (re-attached): its
        executor may subscribe again (no second LAUNCH); killed if it has not in time."""
        key = (task.framework_id, task.task_id)
        self._runs[key] = _Run(task=task, agent_id=agent_id, launched={task.task_id})
        self._by_executor[(task.framework_id, task.executor_id)] = key
        job = asyncio.get_running_loop().create_task(self._await_reregistration(key))
        self._tasks.add(job)
        job.add_done_callback(self._tasks.discard)

    def recover_attached(self, task: TaskSpec, executor_task_id: str) -> None:
        """A task of the previous run handed to the executor whose process ``executor_task_id``'s
        is (re-attached: ``recover`` first): its again, already launched."""
        run = self._runs.get((task.framework_id, executor_task_id))
        if run is None:
            return
        run.tasks[task.task_id] = task
        run.launched.add(task.task_id)
        self._runs[(task.framework_id, task.task_id)] = run

    async def _await_reregistration(self, key: TaskKey) -> None:
        try:
            await self._serve()
        except OSError as exc:
            log.warning("cannot serve the executor API", error=str(exc))
        await asyncio.sleep(REREGISTRATION_TIMEOUT)
        run = self._runs.get(key)
        if run is not None and not run.subscribed:
            log.warning(
                "executor did not re-subscribe after the agent restarted: killed",
                framework_id=key[0],
                task_id=key[1],
                executor_id=run.task.executor_id,
            )
            self.inner.signal(key[0], key[1], Signal.KILL)

    def observe(self, event: e.Event) -> None:
        """The inner executor's sink: an executor process's end closes its run (the core ends
        the tasks it was handed)."""
        if isinstance(event, e.ProcessExited | e.LaunchFailed | e.ProcessStarted):
            run = self._runs.get((event.framework_id, event.task_id))
            if run is not None and run.key == (event.framework_id, event.task_id):
                if not isinstance(event, e.ProcessStarted):
                    self._forget(run)
                elif run.limits is not None:
                    self.resize(*run.key, *run.limits)
        self._sink(event)

    # --- launching --------------------------------------------------------------------------

    async def _launch(self, task: TaskSpec, agent_id: str) -> None:
        run = self._runs[(task.framework_id, task.task_id)]
        try:
            endpoint = await self._serve()
        except OSError as exc:
            self._forget(run)
            self._fail(task, f"cannot serve the executor API: {exc}")
            return
        if not isinstance(task.wire, pb.TaskInfo):
            self._forget(run)
            self._fail(task, "a custom executor's task needs its TaskInfo")
            return
        cmd = task.command or CommandSpec()
        env = {
            **cmd.environment,
            "MESOS_AGENT_ENDPOINT": endpoint,
            "MESOS_FRAMEWORK_ID": task.framework_id,
            "MESOS_EXECUTOR_ID": task.executor_id,
            "MESOS_SLAVE_ID": agent_id,
            "MESOS_AGENT_ID": agent_id,
            "MESOS_CHECKPOINT": "1" if self._checkpoint else "0",
            "MESOS_HTTP_COMMAND_EXECUTOR": "0",
            "MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD": f"{self._grace(task)}secs",
            # MESOS_DIRECTORY and MESOS_SANDBOX: the process executor, which makes the sandbox.
        }
        if not self._checkpoint:
            # pymesos reads any value as true; Mesos sets it only when checkpointing.
            del env["MESOS_CHECKPOINT"]
        self.inner.start(replace(task, command=replace(cmd, environment=env)), agent_id)

    def _fail(self, task: TaskSpec, why: str) -> None:
        self._sink(
            e.LaunchFailed(
                now=self._clock(), task_id=task.task_id, framework_id=task.framework_id, message=why
            )
        )

    def _forget(self, run: _Run) -> None:
        for task_id in run.tasks:
            if self._runs.get((run.task.framework_id, task_id)) is run:
                del self._runs[(run.task.framework_id, task_id)]
        self._by_executor.pop((run.task.framework_id, run.task.executor_id), None)
        for timer in run.timers:
            timer.cancel()
        if run.stream is not None:
            run.stream.put_nowait(None)

    def framework_message(self, message: pb.FrameworkMessage) -> None:
        """From the framework (through the master): a MESSAGE event to its executor, if it runs
        here and is subscribed; dropped otherwise, as Mesos drops it (best effort)."""
        key = self._by_executor.get((message.framework_id, message.executor_id))
        run = self._runs.get(key) if key is not None else None
        if run is None or run.stream is None:
            log.info(
                "framework message dropped: no such executor subscribed",
                framework_id=message.framework_id,
                executor_id=message.executor_id,
            )
            return
        run.stream.put_nowait(wire.message(message.data))

    def _ended(self, run: _Run, task_id: str) -> None:
        """One of its tasks ended: once all have, SHUTDOWN now, SIGKILL after the grace
        period (Mesos' rule)."""
        run.ended.add(task_id)
        if run.shut_down or not run.ended.issuperset(run.tasks):
            return
        run.shut_down = True
        if run.stream is not None:
            run.stream.put_nowait(wire.SHUTDOWN)
        loop = asyncio.get_running_loop()
        run.timers.append(
            loop.call_later(self._grace(run.task), self.inner.signal, *run.key, Signal.KILL)
        )

    # --- the HTTP API -------------------------------------------------------------------------

    async def _serve(self) -> str:
        if self._serving is None:
            self._serving = asyncio.get_running_loop().create_task(self._listen())
        return await asyncio.shield(self._serving)

    async def _listen(self) -> str:
        app = web.Application(client_max_size=4 * 1024 * 1024)
        app.router.add_route("*", "/api/v1/executor", self._handle)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        port = self._saved_port()
        try:
            site = web.TCPSite(runner, "127.0.0.1", port)
            await site.start()
        except OSError:
            if not port:
                raise
            log.warning("the executor API's former port is taken: executors cannot re-subscribe")
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
        self._runner = runner
        port = int(runner.addresses[0][1])
        if self._port_file is not None:
            self._port_file.parent.mkdir(parents=True, exist_ok=True)
            self._port_file.write_text(json.dumps({"port": port}))
        self.endpoint = f"127.0.0.1:{port}"
        log.info("executor API listening", endpoint=self.endpoint)
        return self.endpoint

    def _saved_port(self) -> int:
        if self._port_file is None:
            return 0
        with contextlib.suppress(OSError, ValueError, TypeError):
            port = int(json.loads(self._port_file.read_text())["port"])
            if 0 < port < 65536:
                return port
        return 0

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.method != "POST":
            return web.Response(status=405, headers={"Allow": "POST"})
        if request.content_type != JSON:
            return web.Response(status=415, text=f"Content-Type must be {JSON}")
        try:
            call = json.loads(await request.read())
            if not isinstance(call, dict):
                raise wire.BadCall("the body is not an executor Call")
            framework_id = wire.value_of(call, "framework_id")
            executor_id = wire.value_of(call, "executor_id")
            key = self._by_executor.get((framework_id, executor_id))
            run = self._runs.get(key) if key is not None else None
            if run is None:
                raise wire.BadCall(f"executor {executor_id!r} is not running on this agent")
            kind = call.get("type")
            if kind == "SUBSCRIBE":
                return await self._subscribe(request, run)
            if kind == "UPDATE":
                self._update(run, call.get("update"))
                return web.Response(status=202)
            if kind == "MESSAGE":
                data = wire.message_data(call.get("message"))
                self._to_framework(
                    pb.FrameworkMessage(
                        framework_id=framework_id, executor_id=executor_id, data=data
                    )
                )
                return web.Response(status=202)
            raise wire.BadCall(f"unsupported call type {kind!r}")
        except (ValueError, wire.BadCall) as exc:
            return web.Response(status=400, text=str(exc))

    async def _subscribe(self, request: web.Request, run: _Run) -> web.StreamResponse:
        if run.stream is not None:
            run.stream.put_nowait(None)  # a new subscription replaces the old one, as Mesos'
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        run.stream = queue
        run.subscribed = True
        task, fid = run.wire, run.task.framework_id
        queue.put_nowait(wire.subscribed(task, fid, run.agent_id, self._hostname, run.task.task_id))
        for task_id, spec in run.tasks.items():
            if task_id not in run.launched and isinstance(spec.wire, pb.TaskInfo):
                run.launched.add(task_id)
                queue.put_nowait(wire.launch(spec.wire, fid, run.agent_id))
        if run.shut_down:
            queue.put_nowait(wire.SHUTDOWN)
        response = web.StreamResponse(status=200, headers={"Content-Type": JSON})
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            while (event := await queue.get()) is not None:
                await response.write(wire.record(event))
        except ConnectionError:
            pass
        finally:
            if run.stream is queue:
                run.stream = None
        return response

    def _update(self, run: _Run, update: Any) -> None:
        task_id, state, text, uuid = wire.status(update)
        if task_id not in run.launched:
            raise wire.BadCall(f"task {task_id!r} is not this executor's")
        self._post(
            e.ExecutorUpdate(
                now=self._clock(),
                task_id=task_id,
                framework_id=run.task.framework_id,
                state=state,
                message=text,
            )
        )
        # The core has it (and checkpointed it): the agent now answers for its delivery.
        if run.stream is not None:
            run.stream.put_nowait(wire.acknowledged(task_id, uuid))
        if state.terminal and task_id not in run.ended:
            self._ended(run, task_id)
