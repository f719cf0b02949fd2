"""The agent core: events in, commands out. No IO, no clock, no randomness.

The rules:
- The core owns the agent's view of its tasks (``states.py`` says how a task may move) and the
  status updates still owed to the master (``status_updates.py``).
- Every status gets a fresh uuid from the injected ``new_uuid`` and the ``now`` of its event.
- Statuses are sent only while registered; they are kept, and resent after re-registration.
- Tasks are keyed by (framework id, task id), as Mesos keys them: two frameworks' tasks of one
  id are two tasks, and no framework learns another's ids. An event naming no framework (a
  master from before) names the one task of that id, if only one has it.
- A launch of a task the agent already knows is ignored (it is the master retrying, or a bug
  to log); an invalid task ends ERROR; a kill of an unknown task ends KILLED with a message,
  so the master learns that nothing runs under that id here.
- A kill is SIGTERM to the task's process group, then SIGKILL when the grace period expires.
- Measurements (``UsageMeasured``) drive memory limits, revocable reclaim, eviction under
  pressure and the usage reports (usage.py); a task killed for passing its memory limit ends
  FAILED with reason MEMORY_LIMIT, however it exits.
- A task with a custom executor (``TaskSpec.executor_id``, Mesos' executor API): its process is
  the executor, which reports the task's states itself (``ExecutorUpdate``, source EXECUTOR;
  ``states.EXECUTOR_TRANSITIONS``); the process existing does not make the task RUNNING. An
  executor that exits before its task has ended fails it with reason EXECUTOR_TERMINATED
  (KILLED if it was being killed); an exit after the task ended is the executor's normal end.
  Either way, while registered, the master is told the executor ended
  (``SendExecutorTerminated``, Mesos' ExitedExecutorMessage), even when its task has already
  been forgotten: the core keeps each executor's id until its process exits.
- One executor, many tasks (Mesos' rule): a task naming the executor id of a live executor of
  its framework here is handed to it (``AttachToExecutor``: LAUNCH to the running process)
  rather than started; the executor's first task owns its process. The executor's limits are
  its tasks' together. When the process ends, every task it still ran ends as the first
  would (EXECUTOR_TERMINATED, KILLED if being killed, COMMAND_LAUNCH_FAILED if it never
  started), and the master is told once.
- A terminal task is forgotten once its terminal status is acknowledged.
- After ``Shutdown`` no task is launched; when every task has ended the core says ``Stop``.
- With ``checkpoint`` on, a task whose state or unacknowledged statuses changed in an event is
  checkpointed (``CheckpointTask``) before anything else the event causes: before its statuses
  are sent and before its process is started. A forgotten task's checkpoint is removed
  (``ForgetTask``).
- ``Recovered`` (at start, before the first stream) brings back the tasks of the previous run
  with their unacknowledged statuses (original uuids, resent after registration). A task whose
  process still runs carries on (a kill that was under way is signalled again); one whose
  process ended meanwhile ends as its exit status says; one whose process is gone without a
  trace ends FAILED (AGENT_RESTARTED), or KILLED if it was being killed. No task is started
  again: the master and the framework decide about relaunching.
- Time-driven work (heartbeats, status retries) runs on ``Tick``; after every event the core
  asks for a ``Tick`` at its next deadline when that deadline changed.
- A heartbeat is due an interval after the last message, and skipped if another message went
  since. After a registration or a new interval the first one comes at a random fraction of
  the interval instead (the injected ``phase``, in (0, 1]): agents told together (a fleet after
  a master failover, a cluster that grew) spread their heartbeats over the interval rather
  than reaching the master in waves. Sooner, never later, so no master deadline comes closer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from corral.agent.core import commands as c
from corral.agent.core import events as e
from corral.agent.core import recovery, usage
from corral.agent.core.pressure import PressureTracker, Thresholds
from corral.agent.core.states import IllegalTransition, check, check_executor
from corral.agent.core.status_updates import Backoff, StatusUpdateManager, TaskKey
from corral.agent.core.types import (
    TERMINAL_STATES,
    ProcessFate,
    Signal,
    Status,
    TaskReason,
    TaskSource,
    TaskSpec,
    TaskState,
    TaskUsage,
)


@dataclass(frozen=True, slots=True)
class AgentCoreConfig:
    default_grace_period: float = 3.0
    default_heartbeat_interval: float = 5.0
    status_backoff: Backoff = field(default_factory=Backoff)
    # Simulated agents run tasks without a command; real ones refuse such a task.
    require_command: bool = True
    # Emit CheckpointTask / ForgetTask (real agents); simulated ones keep nothing on disk.
    checkpoint: bool = False
    # Usage, limits, eviction and revocable resources (usage.py): the agent's mem resource,
    # its eviction thresholds, and the safety margin of its revocable estimate (None: the
    # agent lends nothing).
    mem_total: float = 0.0
    thresholds: Thresholds = field(default_factory=Thresholds)
    revocable_margin: float | None = None


@dataclass(slots=True)
class _Task:
    spec: TaskSpec
    state: TaskState
    latest: Status | None = None
    started: bool = False  # the process exists (ProcessStarted seen)
    kill_reason: TaskReason = TaskReason.KILLED_BY_FRAMEWORK
    kill_message: str = ""
    grace_period: float = 0.0
    usage: TaskUsage | None = None  # as last measured (usage.py)
    limit_message: str = ""  # set when it was killed for passing its memory limit


class AgentCore:
    def __init__(
        self,
        new_uuid: Callable[[], bytes],
        agent_id: str = "",
        config: AgentCoreConfig | None = None,
        phase: Callable[[], float] = lambda: 1.0,
    ) -> None:
        self.config = config or AgentCoreConfig()
        self.agent_id = agent_id
        self.secret = ""  # proves agent_id to the master (see corral.agent.checkpoint)
        self.principal = ""  # whom the master issued agent_id to; presented with it
        self.registered = False
        self.shutting_down = False
        self.stopped = False
        self._new_uuid = new_uuid
        self._phase = phase
        self.pressure = PressureTracker(self.config.thresholds)
        self._tasks: dict[TaskKey, _Task] = {}
        # Per task id, the frameworks with a task of that id here: an event that names no
        # framework (a master from before tasks were keyed by framework) finds its task.
        self._frameworks_of: dict[str, dict[str, None]] = {}
        self.updates = StatusUpdateManager(self.config.status_backoff)
        self._heartbeat_interval = self.config.default_heartbeat_interval
        self._next_heartbeat: float | None = None
        # When the master last heard from this agent: any message proves it alive, so a
        # heartbeat is sent only after a quiet interval (a busy agent sends none).
        self._last_sent = 0.0
        # When the next heartbeat was scheduled: one is sent at _next_heartbeat only if no
        # message went after this.
        self._armed_at = 0.0
        self._tick_at: float | None = None
        # Per-event scratch: statuses made and commands to emit, assembled by ``handle``.
        self._statuses: list[Status] = []
        self._out: list[c.Command] = []
        self._checkpoint = self.config.checkpoint
        self._dirty: dict[TaskKey, None] = {}  # tasks to checkpoint or forget
        # Custom executors whose process was started (or is being) and has not ended: by the
        # task that owns the process, its executor id (its end is told to the master even after
        # the task is forgotten); by (framework, executor id), that task; and the tasks handed
        # to it since, by owner and the other way round.
        self._executors: dict[TaskKey, str] = {}
        self._executor_owner: dict[tuple[str, str], TaskKey] = {}
        self._attached: dict[TaskKey, list[TaskKey]] = {}
        self._attached_to: dict[TaskKey, TaskKey] = {}
        self._event: e.Event = e.Tick(now=0.0)

    # --- queries (for the shell and tests) ----------------------------------------------

    def task_state(self, task_id: str, framework_id: str = "") -> TaskState | None:
        task = self._find(framework_id, task_id)
        return task.state if task else None

    def task_ids(self) -> list[str]:
        return [task_id for _, task_id in self._tasks]

    def task_keys(self) -> list[TaskKey]:
        return list(self._tasks)

    # --- the task index ------------------------------------------------------------------

    def _put(self, task: _Task) -> None:
        spec = task.spec
        self._tasks[(spec.framework_id, spec.task_id)] = task
        self._frameworks_of.setdefault(spec.task_id, {})[spec.framework_id] = None

    def _drop(self, key: TaskKey) -> _Task | None:
        """Forget the task of ``key``; returns it (None if it was not known)."""
        task = self._tasks.pop(key, None)
        if task is None:
            return None
        framework_id, task_id = key
        frameworks = self._frameworks_of.get(task_id)
        if frameworks is not None:
            frameworks.pop(framework_id, None)
            if not frameworks:
                del self._frameworks_of[task_id]
        return task

    def _find(self, framework_id: str, task_id: str) -> _Task | None:
        """The task of ``framework_id`` with ``task_id``; with no framework id, the one task of
        that id (None if none or several)."""
        if framework_id:
            return self._tasks.get((framework_id, task_id))
        frameworks = self._frameworks_of.get(task_id)
        if frameworks is None or len(frameworks) != 1:
            return None
        return self._tasks.get((next(iter(frameworks)), task_id))

    def live_tasks(self) -> int:
        return sum(1 for t in self._tasks.values() if not t.state.terminal)

    # --- the one entry point -----------------------------------------------------------

    def handle(self, event: e.Event) -> list[c.Command]:
        return self.handle_many((event,))

    def handle_many(self, events: Sequence[e.Event]) -> list[c.Command]:
        """Events that arrived together (the exits of tasks started together), in order, as
        if handled one by one, except that their statuses go out in one message and one
        wake-up is scheduled: per-event overhead was a fifth of a busy agent."""
        self._statuses, self._out = [], []
        for event in events:
            self._event = event
            self._dispatch(event)
        event = self._event
        out: list[c.Command] = recovery.checkpoints(self, event.stimulus_id) if self._dirty else []
        if self._statuses and self.registered:
            self._last_sent = event.now
            out.append(
                c.SendStatusUpdates(stimulus_id=event.stimulus_id, statuses=tuple(self._statuses))
            )
        out.extend(self._out)
        if self.shutting_down and not self.stopped and self.live_tasks() == 0:
            self.stopped = True
            out.append(c.Stop(stimulus_id=event.stimulus_id))
        deadline = self._next_deadline()
        if deadline is not None and deadline != self._tick_at:
            self._tick_at = deadline
            out.append(c.ScheduleTick(stimulus_id=event.stimulus_id, at=deadline))
        return out

    def _dispatch(self, event: e.Event) -> None:
        match event:
            case e.Recovered():
                self._on_recovered(event)
            case e.StreamOpened():
                self._on_stream_opened(event)
            case e.Registered():
                self._on_registered(event)
            case e.Disconnected():
                self._on_disconnected(event)
            case e.HeartbeatIntervalChanged():
                self._on_heartbeat_interval(event)
            case e.Tick():
                self._on_tick(event)
            case e.Acknowledged():
                self._on_acknowledged(event)
            case e.LaunchTasks():
                self._on_launch(event)
            case e.KillTask():
                self._on_kill(event)
            case e.Shutdown():
                self._on_shutdown(event)
            case e.UsageMeasured():
                usage.on_usage(self, event)
            case e.ProcessStarted():
                self._on_started(event)
            case e.LaunchFailed():
                self._on_launch_failed(event)
            case e.ProcessExited():
                self._on_exited(event)
            case e.ExecutorUpdate():
                self._on_executor_update(event)
            case e.GraceExpired():
                self._on_grace_expired(event)
            case _:
                raise TypeError(f"unknown event {type(event).__name__}")

    # --- stream ------------------------------------------------------------------------

    def _on_stream_opened(self, event: e.StreamOpened) -> None:
        self.registered = False
        tasks = tuple((t.spec, t.latest) for t in self._tasks.values() if t.latest is not None)
        self._emit(
            c.SendRegister(
                agent_id=self.agent_id,
                secret=self.secret,
                principal=self.principal,
                tasks=tasks,
                status_retry=self.config.status_backoff.initial,
            )
        )

    def _on_registered(self, event: e.Registered) -> None:
        identity = (event.agent_id, event.secret, event.principal)
        if event.agent_id and identity != (self.agent_id, self.secret, self.principal):
            self.agent_id, self.secret, self.principal = identity
            self._emit(
                c.CheckpointAgentId(
                    agent_id=event.agent_id, secret=event.secret, principal=event.principal
                )
            )
        interval = event.heartbeat_interval
        if not (math.isfinite(interval) and interval > 0):
            interval = self.config.default_heartbeat_interval
        self._heartbeat_interval = interval
        self._last_sent = event.now  # the REGISTER this answers
        self._arm_heartbeat(self._phased(interval))
        self.registered = True
        self._statuses.clear()  # made earlier in this batch: pending, so in what is resent now
        pending = self.updates.resend_all(event.now)
        if pending:
            self._emit(c.SendStatusUpdates(statuses=tuple(pending)))

    def _on_heartbeat_interval(self, event: e.HeartbeatIntervalChanged) -> None:
        interval = event.heartbeat_interval
        if not (math.isfinite(interval) and interval > 0):
            self._warn(f"ignored a heartbeat interval of {interval!r} s from the master")
            return
        self._heartbeat_interval = interval
        if self._next_heartbeat is not None:
            # Counted from the last message, so a shorter interval (a shorter timeout on the
            # master's side) takes effect now.
            self._arm_heartbeat(self._phased(interval))

    def _on_disconnected(self, event: e.Disconnected) -> None:
        self.registered = False
        self._statuses.clear()  # still pending: resent after the next registration
        self._next_heartbeat = None

    def _on_tick(self, event: e.Tick) -> None:
        self._tick_at = None  # the requested wake-up has happened
        if not self.registered:
            return
        if self._next_heartbeat is not None and self._next_heartbeat <= event.now:
            if self._last_sent <= self._armed_at:  # nothing went since it was scheduled
                self._emit(c.SendHeartbeat(timestamp=event.now))
                self._last_sent = event.now
            self._arm_heartbeat(self._heartbeat_interval)
        due = self.updates.due(event.now)
        if due:
            self._emit(c.SendStatusUpdates(statuses=tuple(due)))
            self._last_sent = event.now

    def _phased(self, interval: float) -> float:
        phase = self._phase()
        return interval * phase if 0.0 < phase <= 1.0 else interval

    def _arm_heartbeat(self, delay: float) -> None:
        """The next heartbeat: ``delay`` after the last message, unless another goes first."""
        self._armed_at = self._last_sent
        self._next_heartbeat = self._last_sent + delay

    def _on_acknowledged(self, event: e.Acknowledged) -> None:
        acknowledge, tasks = self.updates.acknowledge, self._tasks
        checkpoint = self._checkpoint
        for framework_id, task_id, uuid in event.acknowledgements:
            if framework_id:
                key = (framework_id, task_id)
            else:
                known = self._find("", task_id)
                if known is None:
                    continue
                key = (known.spec.framework_id, task_id)
            status = acknowledge(key, uuid)
            if status is None:
                continue
            if status.state in TERMINAL_STATES:
                task = self._drop(key)
            elif checkpoint:
                task = tasks.get(key)
            else:
                continue
            if checkpoint and task is not None:
                self._dirty[key] = None

    # --- tasks from the master -----------------------------------------------------------

    def _on_launch(self, event: e.LaunchTasks) -> None:
        for spec in event.tasks:
            if not spec.framework_id:
                spec = replace(spec, framework_id=event.framework_id)
            if not spec.task_id:
                self._warn("launch of a task without an id ignored")
                continue
            known = self._tasks.get((spec.framework_id, spec.task_id))
            if known is not None:
                self._warn(f"duplicate launch ignored: task is {known.state.name}", spec.task_id)
                continue
            task = _Task(spec=spec, state=TaskState.STAGING)
            self._put(task)
            problem = self._invalid(spec)
            if self.shutting_down:
                self._move(
                    task,
                    TaskState.DROPPED,
                    TaskReason.AGENT_SHUTDOWN,
                    "the agent is shutting down",
                    source=TaskSource.AGENT,
                )
            elif problem:
                self._move(
                    task, TaskState.ERROR, TaskReason.INVALID, problem, source=TaskSource.AGENT
                )
            else:
                self._move(task, TaskState.STARTING)
                owner = (
                    self._executor_owner.get((spec.framework_id, spec.executor_id))
                    if spec.executor_id
                    else None
                )
                if owner is not None:
                    self._attach(task, owner)
                    continue
                if spec.executor_id:
                    key = (spec.framework_id, spec.task_id)
                    self._executors[key] = spec.executor_id
                    self._executor_owner[(spec.framework_id, spec.executor_id)] = key
                self._emit(c.StartProcess(stimulus_id=self._event.stimulus_id, task=spec))

    def _attach(self, task: _Task, owner: TaskKey) -> None:
        """Hand ``task`` to the live executor whose process ``owner``'s is."""
        key = (task.spec.framework_id, task.spec.task_id)
        self._attached.setdefault(owner, []).append(key)
        self._attached_to[key] = owner
        group = [t for k in (owner, *self._attached[owner]) if (t := self._tasks.get(k))]
        limits = [t.spec.enforced_mem_limit for t in group if not t.state.terminal]
        self._emit(
            c.AttachToExecutor(
                stimulus_id=self._event.stimulus_id,
                task=task.spec,
                executor_task_id=owner[1],
                cpus=sum(t.spec.cpus for t in group if not t.state.terminal),
                cpus_limit=sum(t.spec.cpus_limit for t in group if not t.state.terminal)
                if all(t.spec.cpus_limit > 0 for t in group if not t.state.terminal)
                else 0.0,
                mem_limit=sum(limits) if all(m > 0 for m in limits) else 0.0,
            )
        )

    def executor_mem_limit(self, task: _Task) -> float:
        """The memory limit of ``task``'s process (0: none): its own, or for an executor's
        process, its live tasks' together (usage.py rule 2)."""
        attached = self._attached.get((task.spec.framework_id, task.spec.task_id))
        if not attached:
            return task.spec.enforced_mem_limit
        limits = [task.spec.enforced_mem_limit] + [
            t.spec.enforced_mem_limit
            for k in attached
            if (t := self._tasks.get(k)) is not None and not t.state.terminal
        ]
        return sum(limits) if all(m > 0 for m in limits) else 0.0

    def _invalid(self, spec: TaskSpec) -> str:
        grace = spec.kill_grace_period
        if not math.isfinite(grace) or grace < 0:
            return f"kill_grace_period_seconds must be finite and >= 0, got {grace}"
        if self.config.require_command and spec.container is None:  # an image has its own
            cmd = spec.command
            if cmd is None or (cmd.shell and not cmd.value.strip()):
                return "the task has an empty command"
            if not cmd.shell and not cmd.arguments:
                return "the task has no arguments (argv) and shell is false"
        sim = spec.simulation
        if sim is not None and not (
            math.isfinite(sim.duration_seconds) and sim.duration_seconds >= 0
        ):
            return (
                f"simulation.duration_seconds must be finite and >= 0, got {sim.duration_seconds}"
            )
        return ""

    def _on_kill(self, event: e.KillTask) -> None:
        task = self._find(event.framework_id, event.task_id)
        if task is None:
            spec = TaskSpec(task_id=event.task_id, framework_id=event.framework_id)
            task = _Task(spec=spec, state=TaskState.STAGING)
            self._put(task)
            self._move(
                task,
                TaskState.KILLED,
                event.reason,
                "the task is not known to this agent: it is not running here",
                source=TaskSource.AGENT,
            )
            return
        message = (
            "killed by the framework" if event.reason is TaskReason.KILLED_BY_FRAMEWORK else ""
        )
        self._kill(task, event.grace_period, event.reason, message)

    def _kill(self, task: _Task, grace: float, reason: TaskReason, message: str) -> None:
        if task.state.terminal or task.state is TaskState.KILLING:
            return  # already ending: a repeated kill changes nothing
        if not (math.isfinite(grace) and grace > 0):
            grace = task.spec.kill_grace_period or self.config.default_grace_period
        task.kill_reason, task.kill_message, task.grace_period = reason, message, grace
        self._move(task, TaskState.KILLING, reason, message)
        if task.started:
            self._signal_term(task)

    def _signal_term(self, task: _Task) -> None:
        now = self._event.now
        task_id, framework_id = task.spec.task_id, task.spec.framework_id
        self._emit(c.SignalGroup(task_id=task_id, framework_id=framework_id, signal=Signal.TERM))
        self._emit(
            c.ScheduleGraceExpiry(
                task_id=task_id, framework_id=framework_id, at=now + task.grace_period
            )
        )

    def _on_shutdown(self, event: e.Shutdown) -> None:
        self.shutting_down = True
        for task in list(self._tasks.values()):
            self._kill(task, 0.0, TaskReason.AGENT_SHUTDOWN, f"agent shutdown: {event.reason}")

    # --- executors -----------------------------------------------------------------------

    def _on_started(self, event: e.ProcessStarted) -> None:
        task = self._executor_task(event.framework_id, event.task_id, "start")
        if task is None:
            return
        task.started = True
        if task.state is TaskState.KILLING:
            self._signal_term(task)  # the kill came while the process was being started
        elif not task.spec.executor_id:  # a custom executor says when its task runs
            self._move(task, TaskState.RUNNING)

    def _on_launch_failed(self, event: e.LaunchFailed) -> None:
        task = self._executor_task(event.framework_id, event.task_id, "launch failure")
        if task is None:
            return
        if task.state is TaskState.KILLING:
            self._move(task, TaskState.KILLED, task.kill_reason, task.kill_message)
        else:
            self._move(task, TaskState.FAILED, TaskReason.COMMAND_LAUNCH_FAILED, event.message)
        key = (task.spec.framework_id, task.spec.task_id)
        self._attached_to.pop(key, None)
        if self._executors.pop(key, None) is not None:  # the tasks handed to it fail with it
            self._executor_ended(key, task.spec.executor_id, None, event.message)

    def _on_exited(self, event: e.ProcessExited) -> None:
        known = self._find(event.framework_id, event.task_id)
        framework_id = known.spec.framework_id if known is not None else event.framework_id
        executor = (framework_id, event.task_id) in self._executors
        self._process_exited(event, known, executor)
        self._executor_exited(event, known)  # after its own task's status

    def _process_exited(self, event: e.ProcessExited, known: _Task | None, executor: bool) -> None:
        if (known is None and executor) or (
            known is not None and known.spec.executor_id and known.state.terminal
        ):
            return  # a custom executor ending after its task did (forgotten or not): normal
        task = self._executor_task(event.framework_id, event.task_id, "exit")
        if task is None:
            return
        if task.spec.executor_id and task.state is not TaskState.KILLING:
            how = (
                f"signal {event.signal}" if event.signal is not None else f"code {event.exit_code}"
            )
            self._move(
                task,
                TaskState.FAILED,
                TaskReason.EXECUTOR_TERMINATED,
                f"executor {task.spec.executor_id!r} terminated ({how}) before its task ended",
                source=TaskSource.AGENT,
                exit_code=event.exit_code,
            )
            return
        if event.memory_limit and not task.limit_message:
            task.limit_message = "memory limit exceeded: killed by the kernel at its cgroup limit"
        when = f" ({event.message})" if event.message else ""
        self._exited(task, event.exit_code, event.signal, when)

    def _executor_exited(self, event: e.ProcessExited, known: _Task | None) -> None:
        """A custom executor's process ended (its task known or forgotten): the tasks it was
        handed end with it, and the master is told."""
        framework_id = known.spec.framework_id if known is not None else event.framework_id
        owner = (framework_id, event.task_id)
        self._attached_to.pop(owner, None)
        executor_id = self._executors.pop(owner, "")
        if not executor_id:
            return
        if event.signal is not None:
            status, how = event.signal, f"terminated by signal {event.signal}"
        else:
            code = event.exit_code or 0
            status, how = (code & 0xFF) << 8, f"exited with code {code}"
        self._executor_ended(owner, executor_id, how, "")
        if not self.registered:
            return
        self._out.append(
            c.SendExecutorTerminated(
                stimulus_id=event.stimulus_id,
                framework_id=framework_id,
                executor_id=executor_id,
                status=status,
                message=f"executor {executor_id!r} {how}",
            )
        )

    def _executor_ended(
        self, owner: TaskKey, executor_id: str, how: str | None, launch_error: str
    ) -> None:
        """The process of ``owner``'s executor ended (``how``), or never started (``how``
        None): the tasks handed to it that have not ended end as its first would."""
        if self._executor_owner.get((owner[0], executor_id)) == owner:
            del self._executor_owner[(owner[0], executor_id)]
        for key in self._attached.pop(owner, []):
            self._attached_to.pop(key, None)
            task = self._tasks.get(key)
            if task is None or task.state.terminal:
                continue
            if task.state is TaskState.KILLING:
                self._move(task, TaskState.KILLED, task.kill_reason, task.kill_message)
            elif how is None:
                why = f"executor {executor_id!r} did not start: {launch_error}"
                self._move(task, TaskState.FAILED, TaskReason.COMMAND_LAUNCH_FAILED, why)
            else:
                self._move(
                    task,
                    TaskState.FAILED,
                    TaskReason.EXECUTOR_TERMINATED,
                    f"executor {executor_id!r} {how} before its task ended",
                    source=TaskSource.AGENT,
                )

    def _exited(
        self, task: _Task, exit_code: int | None, signal: int | None, when: str = ""
    ) -> None:
        if signal is not None:
            how = f"terminated by signal {signal}{when}"
        else:
            how = f"exited with code {exit_code}{when}"
        if task.state is TaskState.KILLING:
            message = f"{task.kill_message}; {how}" if task.kill_message else how
            self._move(task, TaskState.KILLED, task.kill_reason, message, exit_code=exit_code)
        elif task.limit_message:
            message = f"{task.limit_message}; {how}"
            self._move(
                task, TaskState.FAILED, TaskReason.MEMORY_LIMIT, message, exit_code=exit_code
            )
        elif exit_code == 0:
            self._move(task, TaskState.FINISHED, TaskReason.COMMAND_EXITED, how, exit_code=0)
        else:
            self._move(task, TaskState.FAILED, TaskReason.COMMAND_EXITED, how, exit_code=exit_code)

    def _on_executor_update(self, event: e.ExecutorUpdate) -> None:
        task = self._find(event.framework_id, event.task_id)
        if task is None or not task.spec.executor_id:
            self._warn(
                "an executor update for a task no custom executor runs ignored", event.task_id
            )
            return
        try:
            check_executor(task.spec.task_id, task.state, event.state)
        except IllegalTransition as exc:
            self._warn(f"executor update ignored: {exc}", event.task_id)
            return
        killing = task.state is TaskState.KILLING and event.state is TaskState.KILLED
        reason = task.kill_reason if killing else TaskReason.UNSPECIFIED
        self._move(task, event.state, reason, event.message, rule=check_executor)

    def _on_grace_expired(self, event: e.GraceExpired) -> None:
        task = self._find(event.framework_id, event.task_id)
        if task is not None and task.state is TaskState.KILLING and task.started:
            self._emit(
                c.SignalGroup(
                    task_id=task.spec.task_id,
                    framework_id=task.spec.framework_id,
                    signal=Signal.KILL,
                )
            )

    def _executor_task(self, framework_id: str, task_id: str, what: str) -> _Task | None:
        task = self._find(framework_id, task_id)
        if task is None or task.state.terminal:
            self._warn(f"{what} reported for a task that is not running", task_id)
            return None
        return task

    # --- the checkpoint ---------------------------------------------------------------------

    def _on_recovered(self, event: e.Recovered) -> None:
        for rt in event.tasks:
            task_id = rt.spec.task_id
            if (rt.spec.framework_id, task_id) in self._tasks:
                self._warn("a recovered task is already known: the checkpoint ignored", task_id)
                continue
            task = _Task(spec=rt.spec, state=rt.latest.state, latest=rt.latest, started=True)
            if rt.spec.executor_id and rt.process is ProcessFate.ALIVE:
                key = (rt.spec.framework_id, task_id)
                if rt.executor_task_id:  # handed to the executor whose process that task's is
                    owner = (rt.spec.framework_id, rt.executor_task_id)
                    self._attached.setdefault(owner, []).append(key)
                    self._attached_to[key] = owner
                else:
                    self._executors[key] = rt.spec.executor_id
                    self._executor_owner[(rt.spec.framework_id, rt.spec.executor_id)] = key
            recovery.recover_task(self, rt, task)

    # --- helpers -----------------------------------------------------------------------

    def _move(
        self,
        task: _Task,
        target: TaskState,
        reason: TaskReason = TaskReason.UNSPECIFIED,
        message: str = "",
        *,
        source: TaskSource = TaskSource.EXECUTOR,
        exit_code: int | None = None,
        rule: Callable[[str, TaskState, TaskState], TaskState] = check,
    ) -> None:
        task.state = rule(task.spec.task_id, task.state, target)
        status = Status(
            task_id=task.spec.task_id,
            framework_id=task.spec.framework_id,
            agent_id=self.agent_id,
            state=target,
            reason=reason,
            message=message,
            source=source,
            timestamp=self._event.now,
            uuid=self._new_uuid(),
            exit_code=exit_code,
        )
        task.latest = status
        self.updates.add(status, self._event.now)
        self._statuses.append(status)
        if self._checkpoint:
            self._dirty[(task.spec.framework_id, task.spec.task_id)] = None

    def _emit(self, command: c.Command) -> None:
        sid = self._event.stimulus_id
        # dataclasses.replace was 7 % of a busy agents' process: hot paths pass the id.
        self._out.append(
            command if command.stimulus_id == sid else replace(command, stimulus_id=sid)
        )

    def _warn(self, message: str, task_id: str = "") -> None:
        self._emit(c.LogWarning(message=message, task_id=task_id))

    def _next_deadline(self) -> float | None:
        if not self.registered:
            return None
        times = [t for t in (self._next_heartbeat, self.updates.next_retry()) if t is not None]
        return min(times, default=None)
