"""The agent core's checkpoint commands and its recovery after a restart (pure events/commands).

A restarted agent gets one ``Recovered`` event with the tasks its checkpoint held and what the
shell found of their processes; these tests pin what the core makes of each case, and that with
``checkpoint`` on every change of a task is checkpointed before its statuses go out.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from corral.agent.core import AgentCore, AgentCoreConfig
from corral.agent.core import commands as c
from corral.agent.core import events as e
from corral.agent.core.status_updates import Backoff
from corral.agent.core.types import (
    CommandSpec,
    ProcessFate,
    RecoveredTask,
    Signal,
    Status,
    TaskReason,
    TaskSource,
    TaskSpec,
)
from corral.agent.core.types import TaskState as S

SH = CommandSpec(value="sleep 60", shell=True)


def u(n: int) -> bytes:
    return n.to_bytes(16, "big")


def spec(task_id: str = "t1", **kw: object) -> TaskSpec:
    fields: dict[str, object] = {"framework_id": "f1", "command": SH}
    fields.update(kw)
    return TaskSpec(task_id=task_id, **fields)  # type: ignore[arg-type]


def status(task_id: str, state: S, uuid: int, now: float = 0.0, **kw: object) -> Status:
    fields: dict[str, object] = {"source": TaskSource.EXECUTOR, "timestamp": now}
    fields.update(kw)
    return Status(task_id, "f1", "a1", state, uuid=u(uuid), **fields)  # type: ignore[arg-type]


class Harness:
    def __init__(self, uuid_from: int = 0) -> None:
        self.n = uuid_from
        self.core = AgentCore(
            self._uuid,
            agent_id="a1",
            config=AgentCoreConfig(
                default_grace_period=3.0,
                status_backoff=Backoff(initial=1.0, maximum=8.0),
                checkpoint=True,
            ),
        )

    def _uuid(self) -> bytes:
        self.n += 1
        return u(self.n)

    def __call__(self, event: e.Event) -> list[c.Command]:
        """The commands, without the wake-ups (``test_agent_core`` pins those)."""
        return [x for x in self.core.handle(event) if not isinstance(x, c.ScheduleTick)]

    def register(self, now: float = 0.0) -> list[c.Command]:
        self(e.StreamOpened(now=now))
        return self(e.Registered(now=now, agent_id="a1", heartbeat_interval=5.0))


def sent(cmds: Sequence[c.Command]) -> list[Status]:
    return [s for cmd in cmds if isinstance(cmd, c.SendStatusUpdates) for s in cmd.statuses]


def kinds(cmds: Sequence[c.Command]) -> list[str]:
    return [type(cmd).__name__ for cmd in cmds]


# --- checkpointing while running -------------------------------------------------------


def test_a_task_is_checkpointed_before_its_status_is_sent_and_its_process_started() -> None:
    h = Harness()
    h.register()
    task = spec()
    cmds = h(e.LaunchTasks(now=1.0, framework_id="f1", tasks=(task,)))
    starting = status("t1", S.STARTING, 1, now=1.0)
    assert cmds[:3] == [
        c.CheckpointTask(task=task, latest=starting, pending=(starting,)),
        c.SendStatusUpdates(statuses=(starting,)),
        c.StartProcess(task=task),
    ]
    cmds = h(e.ProcessStarted(now=2.0, task_id="t1", pid=7))
    running = status("t1", S.RUNNING, 2, now=2.0)
    assert cmds[0] == c.CheckpointTask(task=task, latest=running, pending=(starting, running))
    # An acknowledgement shrinks what is pending: checkpointed again, nothing sent.
    cmds = h(e.Acknowledged(now=3.0, acknowledgements=(("f1", "t1", u(2)),)))
    assert cmds == [c.CheckpointTask(task=task, latest=running, pending=())]
    # A duplicate acknowledgement changes nothing: no write.
    assert h(e.Acknowledged(now=3.1, acknowledgements=(("f1", "t1", u(2)),))) == []
    h(e.ProcessExited(now=4.0, task_id="t1", exit_code=0))
    # The terminal status acknowledged: the task is forgotten, and so is its checkpoint.
    cmds = h(e.Acknowledged(now=5.0, acknowledgements=(("f1", "t1", u(3)),)))
    assert cmds == [c.ForgetTask(task_id="t1", framework_id="f1")]
    assert h.core.task_ids() == []


def test_without_checkpoint_the_core_emits_no_checkpoint_commands() -> None:
    core = AgentCore(lambda: u(1), agent_id="a1", config=AgentCoreConfig())
    core.handle(e.StreamOpened(now=0.0))
    core.handle(e.Registered(now=0.0, agent_id="a1", heartbeat_interval=5.0))
    cmds = core.handle(e.LaunchTasks(now=0.0, framework_id="f1", tasks=(spec(),)))
    assert not [x for x in cmds if isinstance(x, c.CheckpointTask | c.ForgetTask)]


# --- recovery --------------------------------------------------------------------------


def recovered(
    state: S,
    process: ProcessFate,
    pending: tuple[Status, ...] = (),
    latest: Status | None = None,
    **kw: object,
) -> RecoveredTask:
    latest = latest or status("t1", state, 2)
    return RecoveredTask(spec=spec(), latest=latest, pending=pending, process=process, **kw)  # type: ignore[arg-type]


def test_a_running_task_whose_process_is_alive_is_reattached_and_listed_at_registration() -> None:
    h = Harness(uuid_from=10)
    running = status("t1", S.RUNNING, 2)
    # Nothing changes: nothing is written, nothing is started again.
    assert h(e.Recovered(now=10.0, tasks=(recovered(S.RUNNING, ProcessFate.ALIVE),))) == []
    register = h(e.StreamOpened(now=10.0))
    assert register == [
        c.SendRegister(agent_id="a1", secret="", tasks=((spec(), running),), status_retry=1.0)
    ]
    cmds = h(e.Registered(now=10.0, agent_id="a1", heartbeat_interval=5.0))
    assert sent(cmds) == []  # everything was acknowledged before the restart
    assert h.core.task_state("t1") is S.RUNNING
    # The re-attached task can be killed: TERM to its group, then KILL after the grace.
    cmds = h(e.KillTask(now=11.0, task_id="t1", framework_id="f1"))
    assert c.SignalGroup(task_id="t1", framework_id="f1", signal=Signal.TERM) in cmds
    assert c.ScheduleGraceExpiry(task_id="t1", framework_id="f1", at=14.0) in cmds
    assert h(e.GraceExpired(now=14.0, task_id="t1"))[0] == c.SignalGroup(
        task_id="t1", framework_id="f1", signal=Signal.KILL
    )
    cmds = h(e.ProcessExited(now=14.1, task_id="t1", signal=9))
    assert [(s.state, s.reason) for s in sent(cmds)] == [(S.KILLED, TaskReason.KILLED_BY_FRAMEWORK)]


def test_unacknowledged_statuses_are_resent_with_their_original_uuids_and_no_others() -> None:
    h = Harness(uuid_from=10)
    starting, running = status("t1", S.STARTING, 1), status("t1", S.RUNNING, 2)
    h(
        e.Recovered(
            now=10.0,
            tasks=(recovered(S.RUNNING, ProcessFate.ALIVE, pending=(running,), latest=running),),
        )
    )
    cmds = h.register(now=10.0)
    assert sent(cmds) == [running]  # STARTING was acknowledged before the restart
    assert starting not in sent(cmds)
    assert h(e.Acknowledged(now=10.5, acknowledgements=(("f1", "t1", u(2)),))) == [
        c.CheckpointTask(task=spec(), latest=running, pending=())
    ]


def test_a_task_still_starting_whose_process_is_alive_becomes_running() -> None:
    h = Harness(uuid_from=10)
    starting = status("t1", S.STARTING, 1)
    cmds = h(
        e.Recovered(
            now=10.0,
            tasks=(recovered(S.STARTING, ProcessFate.ALIVE, pending=(starting,), latest=starting),),
        )
    )
    running = status("t1", S.RUNNING, 11, now=10.0)
    assert cmds == [c.CheckpointTask(task=spec(), latest=running, pending=(starting, running))]
    assert sent(h.register(now=10.0)) == [starting, running]


@pytest.mark.parametrize(
    ("exit_code", "signal", "state", "message"),
    [
        (0, None, S.FINISHED, "exited with code 0 while the agent was down"),
        (3, None, S.FAILED, "exited with code 3 while the agent was down"),
        (None, 9, S.FAILED, "terminated by signal 9 while the agent was down"),
    ],
)
def test_a_task_that_exited_while_the_agent_was_down_ends_with_its_real_exit_status(
    exit_code: int | None, signal: int | None, state: S, message: str
) -> None:
    h = Harness(uuid_from=10)
    cmds = h(
        e.Recovered(
            now=10.0,
            tasks=(recovered(S.RUNNING, ProcessFate.EXITED, exit_code=exit_code, signal=signal),),
        )
    )
    assert kinds(cmds) == ["CheckpointTask"]  # not registered yet: nothing sent
    (end,) = sent(h.register(now=10.0))
    assert (end.state, end.reason, end.message, end.exit_code, end.uuid) == (
        state,
        TaskReason.COMMAND_EXITED,
        message,
        exit_code,
        u(11),
    )
    assert h(e.Acknowledged(now=11.0, acknowledgements=(("f1", "t1", u(11)),))) == [
        c.ForgetTask(task_id="t1", framework_id="f1")
    ]


def test_a_task_whose_process_vanished_without_a_status_fails_with_a_clear_message() -> None:
    h = Harness(uuid_from=10)
    h(e.Recovered(now=10.0, tasks=(recovered(S.RUNNING, ProcessFate.UNKNOWN),)))
    (end,) = sent(h.register(now=10.0))
    assert (end.state, end.reason, end.source, end.exit_code) == (
        S.FAILED,
        TaskReason.AGENT_RESTARTED,
        TaskSource.AGENT,
        None,
    )
    assert end.message == "the task ended while the agent was down; exit status unknown"


def test_a_kill_under_way_is_signalled_again_or_ends_killed() -> None:
    killing = status(
        "t1", S.KILLING, 2, reason=TaskReason.KILLED_BY_FRAMEWORK, message="killed by the framework"
    )
    h = Harness(uuid_from=10)
    cmds = h(
        e.Recovered(now=10.0, tasks=(recovered(S.KILLING, ProcessFate.ALIVE, latest=killing),))
    )
    assert cmds == [
        c.SignalGroup(task_id="t1", framework_id="f1", signal=Signal.TERM),
        c.ScheduleGraceExpiry(task_id="t1", framework_id="f1", at=13.0),
    ]
    cmds = h(e.ProcessExited(now=10.5, task_id="t1", signal=15))
    (end,) = [cmd for cmd in cmds if isinstance(cmd, c.CheckpointTask)]
    assert (end.latest.state, end.latest.reason) == (S.KILLED, TaskReason.KILLED_BY_FRAMEWORK)

    h = Harness(uuid_from=10)
    h(e.Recovered(now=10.0, tasks=(recovered(S.KILLING, ProcessFate.UNKNOWN, latest=killing),)))
    (end,) = sent(h.register(now=10.0))
    assert (end.state, end.reason) == (S.KILLED, TaskReason.KILLED_BY_FRAMEWORK)
    assert end.message == "killed by the framework; it ended while the agent was down"


def test_a_task_whose_process_never_started_fails_as_a_launch_failure() -> None:
    h = Harness(uuid_from=10)
    h(
        e.Recovered(
            now=10.0,
            tasks=(recovered(S.STARTING, ProcessFate.LAUNCH_FAILED, message="cannot start 'x'"),),
        )
    )
    (end,) = sent(h.register(now=10.0))
    assert (end.state, end.reason, end.message) == (
        S.FAILED,
        TaskReason.COMMAND_LAUNCH_FAILED,
        "cannot start 'x'",
    )


def test_terminal_tasks_resend_their_pending_status_or_are_forgotten() -> None:
    finished = status("t1", S.FINISHED, 3, exit_code=0)
    h = Harness(uuid_from=10)
    # Still pending: resent as it was, the same uuid; nothing new is made.
    assert (
        h(
            e.Recovered(
                now=10.0,
                tasks=(
                    recovered(S.FINISHED, ProcessFate.EXITED, pending=(finished,), latest=finished),
                ),
            )
        )
        == []
    )
    assert sent(h.register(now=10.0)) == [finished]
    # Acknowledged before the restart, but its checkpoint was not yet removed: removed now.
    h = Harness(uuid_from=10)
    cmds = h(
        e.Recovered(now=10.0, tasks=(recovered(S.FINISHED, ProcessFate.EXITED, latest=finished),))
    )
    assert cmds == [c.ForgetTask(task_id="t1", framework_id="f1")]
    assert h.core.task_ids() == []


def test_two_frameworks_tasks_of_one_id_are_both_recovered() -> None:
    # Checkpoints were always kept per framework (tasks/<framework>/<task>): both come back.
    h = Harness()
    tasks = tuple(
        RecoveredTask(
            spec=spec("job", framework_id=fw),
            latest=Status("job", fw, "a1", S.RUNNING, uuid=u(1 + i)),
            pending=(),
            process=ProcessFate.ALIVE,
        )
        for i, fw in enumerate(("fa", "fb"))
    )
    cmds = h(e.Recovered(now=1.0, tasks=tasks))
    assert not [cmd for cmd in cmds if isinstance(cmd, c.LogWarning)]
    assert sorted(h.core.task_keys()) == [("fa", "job"), ("fb", "job")]
    [register] = [cmd for cmd in h(e.StreamOpened(now=2.0)) if isinstance(cmd, c.SendRegister)]
    assert sorted(t.framework_id for t, _ in register.tasks) == ["fa", "fb"]


def test_a_task_handed_to_a_custom_executor_is_recovered_in_its_process() -> None:
    """Its executor's process re-attached, the task handed to it carries on in it: a kill is
    its own, and the process' end ends it too, the executor told once."""
    h = Harness()
    tasks = tuple(
        RecoveredTask(
            spec=spec(task_id, executor_id="e1"),
            latest=Status(task_id, "f1", "a1", S.RUNNING, uuid=u(1 + i)),
            process=ProcessFate.ALIVE,
            executor_task_id=owner,
        )
        for i, (task_id, owner) in enumerate((("t2", "t1"), ("t1", "")))
    )
    h(e.Recovered(now=1.0, tasks=tasks))
    h.register()
    out = h(e.KillTask(now=2.0, task_id="t2", framework_id="f1"))
    assert [x for x in out if isinstance(x, c.SignalGroup)] == [
        c.SignalGroup(task_id="t2", framework_id="f1", signal=Signal.TERM)
    ]
    out = h(e.ProcessExited(now=3.0, task_id="t1", framework_id="f1", exit_code=0))
    assert {(s.task_id, s.state) for s in sent(out)} == {("t1", S.FAILED), ("t2", S.KILLED)}
    told = [x for x in out if isinstance(x, c.SendExecutorTerminated)]
    assert [(x.executor_id, x.status) for x in told] == [("e1", 0)]
