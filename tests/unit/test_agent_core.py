"""The agent core driven by events; every test asserts on the commands it returns."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from corral.agent.core import AgentCore, AgentCoreConfig, IllegalTransition
from corral.agent.core import commands as c
from corral.agent.core import events as e
from corral.agent.core.status_updates import Backoff
from corral.agent.core.types import (
    CommandSpec,
    Signal,
    SimulationSpec,
    Status,
    TaskReason,
    TaskSource,
    TaskSpec,
    TaskUsage,
)
from corral.agent.core.types import TaskState as S

SH = CommandSpec(value="true", shell=True)


def u(n: int) -> bytes:
    return n.to_bytes(16, "big")


def spec(task_id: str = "t1", **kw: object) -> TaskSpec:
    fields: dict[str, object] = {"framework_id": "f1", "command": SH}
    fields.update(kw)
    return TaskSpec(task_id=task_id, **fields)  # type: ignore[arg-type]


class Harness:
    """An AgentCore with counting uuids, so expected statuses can be written out."""

    def __init__(self, config: AgentCoreConfig | None = None, agent_id: str = "", **kw: object):
        self.n = 0
        cfg = config or AgentCoreConfig(
            default_grace_period=3.0, status_backoff=Backoff(initial=1.0, maximum=8.0)
        )
        self.core = AgentCore(self._uuid, agent_id=agent_id, config=cfg, **kw)  # type: ignore[arg-type]

    def _uuid(self) -> bytes:
        self.n += 1
        return u(self.n)

    def __call__(self, event: e.Event) -> list[c.Command]:
        return self.core.handle(event)

    def register(self, now: float = 0.0, agent_id: str = "a1") -> None:
        self(e.StreamOpened(now=now))
        self(e.Registered(now=now, agent_id=agent_id, heartbeat_interval=5.0))

    def running(self, task: TaskSpec, now: float = 0.0) -> None:
        self(e.LaunchTasks(now=now, framework_id="f1", tasks=(task,)))
        self(e.ProcessStarted(now=now, task_id=task.task_id, pid=100))


def status(task_id: str, state: S, uuid: int, now: float = 0.0, **kw: object) -> Status:
    fields: dict[str, object] = {"source": TaskSource.EXECUTOR, "timestamp": now}
    fields.update(kw)
    return Status(task_id, "f1", "a1", state, uuid=u(uuid), **fields)  # type: ignore[arg-type]


def sent_statuses(cmds: Sequence[c.Command]) -> list[Status]:
    return [s for cmd in cmds if isinstance(cmd, c.SendStatusUpdates) for s in cmd.statuses]


def sent(cmds: Sequence[c.Command]) -> list[tuple[str, S]]:
    return [
        (s.task_id, s.state)
        for cmd in cmds
        if isinstance(cmd, c.SendStatusUpdates)
        for s in cmd.statuses
    ]


def of(cmds: Sequence[c.Command], kind: type[c.Command]) -> list[c.Command]:
    return [cmd for cmd in cmds if isinstance(cmd, kind)]


# --- registration ---------------------------------------------------------------------


def test_first_registration_checkpoints_the_assigned_id_and_schedules_heartbeat() -> None:
    h = Harness()
    assert h(e.StreamOpened(now=0.0, stimulus_id="s1")) == [
        # It says when it would resend an unacknowledged status (its Backoff.initial).
        c.SendRegister(stimulus_id="s1", agent_id="", secret="", tasks=(), status_retry=1.0)
    ]
    registered = e.Registered(
        now=10.0, stimulus_id="s2", agent_id="a1", heartbeat_interval=2.0, secret="k1"
    )
    assert h(registered) == [
        c.CheckpointAgentId(stimulus_id="s2", agent_id="a1", secret="k1"),
        c.ScheduleTick(stimulus_id="s2", at=12.0),
    ]
    assert h(e.Tick(now=12.0)) == [c.SendHeartbeat(timestamp=12.0), c.ScheduleTick(at=14.0)]
    # The next stream presents the id with its secret.
    h(e.Disconnected(now=13.0))
    assert h(e.StreamOpened(now=14.0, stimulus_id="s3")) == [
        c.SendRegister(stimulus_id="s3", agent_id="a1", secret="k1", tasks=(), status_retry=1.0)
    ]


@pytest.mark.parametrize("interval", [0.0, -1.0, math.nan, math.inf])
def test_bad_heartbeat_interval_falls_back_to_default(interval: float) -> None:
    h = Harness(agent_id="a1")
    h(e.StreamOpened(now=0.0))
    cmds = h(e.Registered(now=0.0, agent_id="a1", heartbeat_interval=interval))
    assert cmds == [c.ScheduleTick(at=5.0)]  # same id: nothing to checkpoint


def test_a_busy_agent_sends_no_heartbeat_until_it_has_been_quiet_an_interval() -> None:
    h = Harness(agent_id="a1")
    h.register()  # heartbeat every 5 s, first due at 5
    h(e.LaunchTasks(now=3.0, framework_id="f1", tasks=(spec(),)))  # STARTING goes out at 3
    h(e.Acknowledged(now=3.1, acknowledgements=(("f1", "t1", u(1)),)))
    cmds = h(e.Tick(now=5.0))
    assert of(cmds, c.SendHeartbeat) == []  # the master heard from it 2 s ago
    assert cmds == [c.ScheduleTick(at=8.0)]
    assert h(e.Tick(now=8.0)) == [c.SendHeartbeat(timestamp=8.0), c.ScheduleTick(at=13.0)]


def test_the_first_heartbeat_after_registering_or_a_new_interval_comes_at_its_phase() -> None:
    phases = iter([0.25, 0.5, 0.75])
    h = Harness(agent_id="a1", phase=lambda: next(phases))
    h(e.StreamOpened(now=0.0))
    # Registered with an 8 s interval at phase 0.25: the first heartbeat at 2, then every 8.
    assert h(e.Registered(now=0.0, agent_id="a1", heartbeat_interval=8.0))[-1] == (
        c.ScheduleTick(at=2.0)
    )
    assert h(e.Tick(now=2.0)) == [c.SendHeartbeat(timestamp=2.0), c.ScheduleTick(at=10.0)]
    # A longer interval at phase 0.5: half of it after the last message (2), not all of it.
    assert h(e.HeartbeatIntervalChanged(now=3.0, heartbeat_interval=20.0)) == [
        c.ScheduleTick(at=12.0)
    ]
    assert h(e.Tick(now=12.0)) == [c.SendHeartbeat(timestamp=12.0), c.ScheduleTick(at=32.0)]
    # Re-registered at 40, phase 0.75, but a status went at 41: the phased heartbeat (46) is
    # skipped, and the next is an interval after that status.
    h(e.Disconnected(now=39.0))
    h(e.StreamOpened(now=40.0))
    assert h(e.Registered(now=40.0, agent_id="a1", heartbeat_interval=8.0))[-1] == (
        c.ScheduleTick(at=46.0)
    )
    h(e.LaunchTasks(now=41.0, framework_id="f1", tasks=(spec(),)))
    h(e.Acknowledged(now=41.1, acknowledgements=(("f1", "t1", u(1)),)))
    assert h(e.Tick(now=46.0)) == [c.ScheduleTick(at=49.0)]
    assert h(e.Tick(now=49.0)) == [c.SendHeartbeat(timestamp=49.0), c.ScheduleTick(at=57.0)]


def test_a_phase_out_of_range_falls_back_to_a_whole_interval() -> None:
    for bad in (0.0, -1.0, 1.5, float("nan")):
        h = Harness(agent_id="a1", phase=lambda b=bad: b)
        h(e.StreamOpened(now=0.0))
        assert h(e.Registered(now=0.0, agent_id="a1", heartbeat_interval=8.0))[-1] == (
            c.ScheduleTick(at=8.0)
        )


def test_the_master_can_change_the_heartbeat_interval() -> None:
    h = Harness(agent_id="a1")
    h.register()  # last contact at 0, heartbeat due at 5
    # Longer: counted from the last contact, so the next heartbeat is at 20, then every 20.
    assert h(e.HeartbeatIntervalChanged(now=1.0, heartbeat_interval=20.0)) == [
        c.ScheduleTick(at=20.0)
    ]
    assert h(e.Tick(now=20.0)) == [c.SendHeartbeat(timestamp=20.0), c.ScheduleTick(at=40.0)]
    # Shorter: already overdue counted from the last contact, so due at once.
    assert h(e.HeartbeatIntervalChanged(now=30.0, heartbeat_interval=4.0)) == [
        c.ScheduleTick(at=24.0)
    ]
    assert h(e.Tick(now=30.0)) == [c.SendHeartbeat(timestamp=30.0), c.ScheduleTick(at=34.0)]


@pytest.mark.parametrize("interval", [0.0, -1.0, math.nan, math.inf])
def test_a_bad_heartbeat_interval_change_is_ignored_with_a_warning(interval: float) -> None:
    h = Harness(agent_id="a1")
    h.register()
    cmds = h(e.HeartbeatIntervalChanged(now=1.0, heartbeat_interval=interval))
    assert [type(x) for x in cmds] == [c.LogWarning]
    assert h(e.Tick(now=5.0)) == [c.SendHeartbeat(timestamp=5.0), c.ScheduleTick(at=10.0)]


def test_reregistration_lists_tasks_with_latest_status_and_resends_pending() -> None:
    h = Harness()
    h.register()
    task = spec("t1", wire="the-pb")
    h.running(task)
    assert h(e.Disconnected(now=1.0)) == []
    # Statuses made while disconnected are kept, not sent.
    assert h(e.ProcessExited(now=2.0, task_id="t1", exit_code=0)) == []
    cmds = h(e.StreamOpened(now=3.0))
    finished = status(
        "t1",
        S.FINISHED,
        3,
        now=2.0,
        reason=TaskReason.COMMAND_EXITED,
        message="exited with code 0",
        exit_code=0,
    )
    assert cmds == [
        c.SendRegister(agent_id="a1", secret="", tasks=((task, finished),), status_retry=1.0)
    ]
    cmds = h(e.Registered(now=3.0, agent_id="a1", heartbeat_interval=5.0))
    assert sent(cmds) == [("t1", S.STARTING), ("t1", S.RUNNING), ("t1", S.FINISHED)]
    assert of(cmds, c.CheckpointAgentId) == []
    assert cmds[-1] == c.ScheduleTick(at=4.0)


# --- the life of a task ---------------------------------------------------------------


def test_launch_start_finish_commands() -> None:
    h = Harness()
    h.register()
    task = spec("t1")
    assert h(e.LaunchTasks(now=0.0, stimulus_id="L", framework_id="f1", tasks=(task,))) == [
        c.SendStatusUpdates(stimulus_id="L", statuses=(status("t1", S.STARTING, 1),)),
        c.StartProcess(stimulus_id="L", task=task),
        c.ScheduleTick(stimulus_id="L", at=1.0),
    ]
    assert h(e.ProcessStarted(now=0.5, task_id="t1", pid=42)) == [
        c.SendStatusUpdates(statuses=(status("t1", S.RUNNING, 2, now=0.5),)),
        c.ScheduleTick(at=1.5),  # a new status restarts the task's backoff
    ]
    assert h(e.ProcessExited(now=0.7, task_id="t1", exit_code=0)) == [
        c.SendStatusUpdates(
            statuses=(
                status(
                    "t1",
                    S.FINISHED,
                    3,
                    now=0.7,
                    reason=TaskReason.COMMAND_EXITED,
                    message="exited with code 0",
                    exit_code=0,
                ),
            )
        ),
        c.ScheduleTick(at=1.7),
    ]


def test_framework_id_comes_from_the_launch_when_the_task_has_none() -> None:
    h = Harness()
    h.register()
    cmds = h(e.LaunchTasks(now=0.0, framework_id="fw", tasks=(TaskSpec("t", "", command=SH),)))
    (send,) = of(cmds, c.SendStatusUpdates)
    assert isinstance(send, c.SendStatusUpdates) and send.statuses[0].framework_id == "fw"


@pytest.mark.parametrize(
    ("exit_code", "signal", "state", "message"),
    [
        (0, None, S.FINISHED, "exited with code 0"),
        (3, None, S.FAILED, "exited with code 3"),
        (127, None, S.FAILED, "exited with code 127"),
        (None, 9, S.FAILED, "terminated by signal 9"),
    ],
)
def test_exit_maps_to_terminal_state(
    exit_code: int | None, signal: int | None, state: S, message: str
) -> None:
    h = Harness()
    h.register()
    h.running(spec())
    cmds = h(e.ProcessExited(now=1.0, task_id="t1", exit_code=exit_code, signal=signal))
    (send,) = of(cmds, c.SendStatusUpdates)
    assert isinstance(send, c.SendStatusUpdates)
    (st,) = send.statuses
    assert (st.state, st.exit_code, st.message, st.reason) == (
        state,
        exit_code,
        message,
        TaskReason.COMMAND_EXITED,
    )


def test_launch_failure_is_failed_with_reason() -> None:
    h = Harness()
    h.register()
    h(e.LaunchTasks(now=0.0, framework_id="f1", tasks=(spec(),)))
    cmds = h(e.LaunchFailed(now=0.1, task_id="t1", message="no such file: nope"))
    assert sent(cmds) == [("t1", S.FAILED)]
    st = cmds[0].statuses[0]  # type: ignore[attr-defined]
    assert st.reason is TaskReason.COMMAND_LAUNCH_FAILED and st.message == "no such file: nope"


@pytest.mark.parametrize(
    ("task", "problem"),
    [
        (spec(command=None), "empty command"),
        (spec(command=CommandSpec(value="  ", shell=True)), "empty command"),
        (spec(command=CommandSpec(shell=False)), "no arguments"),
        (spec(kill_grace_period=-1.0), "kill_grace_period_seconds"),
        (spec(kill_grace_period=math.nan), "kill_grace_period_seconds"),
        (spec(simulation=SimulationSpec(duration_seconds=math.inf)), "duration_seconds"),
    ],
)
def test_invalid_task_ends_error_and_never_starts(task: TaskSpec, problem: str) -> None:
    h = Harness()
    h.register()
    cmds = h(e.LaunchTasks(now=0.0, framework_id="f1", tasks=(task,)))
    assert of(cmds, c.StartProcess) == []
    (send,) = of(cmds, c.SendStatusUpdates)
    (st,) = send.statuses  # type: ignore[attr-defined]
    assert (st.state, st.reason, st.source) == (S.ERROR, TaskReason.INVALID, TaskSource.AGENT)
    assert problem in st.message


def test_simulated_agent_needs_no_command() -> None:
    h = Harness(AgentCoreConfig(require_command=False))
    h.register()
    task = spec(command=None, simulation=SimulationSpec(2.0, 0))
    cmds = h(e.LaunchTasks(now=0.0, framework_id="f1", tasks=(task,)))
    assert of(cmds, c.StartProcess) == [c.StartProcess(task=task)]


def test_duplicate_launch_is_ignored_with_a_warning() -> None:
    h = Harness()
    h.register()
    h.running(spec())
    cmds = h(e.LaunchTasks(now=1.0, framework_id="f1", tasks=(spec(), spec("t2"))))
    assert of(cmds, c.LogWarning) == [
        c.LogWarning(message="duplicate launch ignored: task is RUNNING", task_id="t1")
    ]
    assert of(cmds, c.StartProcess) == [c.StartProcess(task=spec("t2"))]
    assert h.core.task_state("t1") is S.RUNNING


def test_exit_before_start_is_an_illegal_transition() -> None:
    h = Harness()
    h.register()
    h(e.LaunchTasks(now=0.0, framework_id="f1", tasks=(spec(),)))
    with pytest.raises(IllegalTransition, match="STARTING -> FINISHED"):
        h(e.ProcessExited(now=0.1, task_id="t1", exit_code=0))


def test_executor_report_for_unknown_task_is_logged() -> None:
    h = Harness()
    h.register()
    assert h(e.ProcessExited(now=0.0, task_id="ghost", exit_code=0)) == [
        c.LogWarning(message="exit reported for a task that is not running", task_id="ghost")
    ]


# --- kills ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kill_grace", "task_grace", "expected"),
    [(0.0, 0.0, 3.0), (0.0, 7.0, 7.0), (1.5, 7.0, 1.5), (math.nan, 7.0, 7.0)],
)
def test_kill_sends_term_then_kill_after_grace(
    kill_grace: float, task_grace: float, expected: float
) -> None:
    h = Harness()
    h.register()
    h.running(spec(kill_grace_period=task_grace))
    cmds = h(e.KillTask(now=10.0, stimulus_id="K", task_id="t1", grace_period=kill_grace))
    killing = status(
        "t1",
        S.KILLING,
        3,
        now=10.0,
        reason=TaskReason.KILLED_BY_FRAMEWORK,
        message="killed by the framework",
    )
    assert cmds == [
        c.SendStatusUpdates(stimulus_id="K", statuses=(killing,)),
        c.SignalGroup(stimulus_id="K", task_id="t1", framework_id="f1", signal=Signal.TERM),
        c.ScheduleGraceExpiry(stimulus_id="K", task_id="t1", framework_id="f1", at=10.0 + expected),
        c.ScheduleTick(stimulus_id="K", at=5.0),  # the heartbeat is due before the retry
    ]
    assert h(e.KillTask(now=10.5, task_id="t1")) == []  # a repeated kill changes nothing
    assert h(e.GraceExpired(now=10.0 + expected, task_id="t1")) == [
        c.SignalGroup(task_id="t1", framework_id="f1", signal=Signal.KILL)
    ]
    cmds = h(e.ProcessExited(now=20.0, task_id="t1", signal=9))
    (st,) = cmds[0].statuses  # type: ignore[attr-defined]
    assert st.state is S.KILLED and st.message == "killed by the framework; terminated by signal 9"
    assert h(e.GraceExpired(now=21.0, task_id="t1")) == []  # a stale timer is ignored


def test_task_that_exits_on_term_is_killed_even_with_exit_zero() -> None:
    h = Harness()
    h.register()
    h.running(spec())
    h(e.KillTask(now=1.0, task_id="t1"))
    cmds = h(e.ProcessExited(now=1.1, task_id="t1", exit_code=0))
    assert sent(cmds) == [("t1", S.KILLED)]


def test_kill_while_starting_waits_for_the_process_then_signals() -> None:
    h = Harness()
    h.register()
    h(e.LaunchTasks(now=0.0, framework_id="f1", tasks=(spec(),)))
    cmds = h(e.KillTask(now=0.1, task_id="t1", grace_period=2.0))
    assert sent(cmds) == [("t1", S.KILLING)]
    assert of(cmds, c.SignalGroup) == []
    cmds = h(e.ProcessStarted(now=0.2, task_id="t1", pid=7))
    assert sent(cmds) == []  # no RUNNING for a task being killed
    assert cmds[:2] == [
        c.SignalGroup(task_id="t1", framework_id="f1", signal=Signal.TERM),
        c.ScheduleGraceExpiry(task_id="t1", framework_id="f1", at=2.2),
    ]


def test_kill_while_starting_then_launch_failure_is_killed() -> None:
    h = Harness()
    h.register()
    h(e.LaunchTasks(now=0.0, framework_id="f1", tasks=(spec(),)))
    h(e.KillTask(now=0.1, task_id="t1"))
    assert sent(h(e.LaunchFailed(now=0.2, task_id="t1", message="x"))) == [("t1", S.KILLED)]


def test_kill_of_unknown_task_reports_killed_until_acknowledged() -> None:
    h = Harness()
    h.register()
    cmds = h(e.KillTask(now=1.0, task_id="ghost", framework_id="f9"))
    (st,) = cmds[0].statuses  # type: ignore[attr-defined]
    assert (st.task_id, st.framework_id, st.state, st.source) == (
        "ghost",
        "f9",
        S.KILLED,
        TaskSource.AGENT,
    )
    assert "not known to this agent" in st.message
    assert h.core.task_state("ghost") is S.KILLED
    h(e.Acknowledged(now=1.1, acknowledgements=(("f9", "ghost", st.uuid),)))
    assert h.core.task_state("ghost") is None


# --- at-least-once --------------------------------------------------------------------


def test_unacknowledged_statuses_are_resent_with_backoff_until_acked() -> None:
    h = Harness()
    h.register()
    h(e.LaunchTasks(now=0.0, framework_id="f1", tasks=(spec(),)))
    assert sent(h(e.Tick(now=0.5))) == []
    assert sent(h(e.Tick(now=1.0))) == [("t1", S.STARTING)]
    assert sent(h(e.Tick(now=2.9))) == []
    cmds = h(e.Tick(now=3.0))
    assert sent(cmds) == [("t1", S.STARTING)]
    assert cmds[-1] == c.ScheduleTick(at=5.0)  # the heartbeat comes before the retry at 7
    h(e.Acknowledged(now=3.5, acknowledgements=((("f1", "t1", u(1))),)))
    cmds = h(e.Tick(now=7.0))
    assert sent(cmds) == []
    assert h.core.task_state("t1") is S.STARTING  # acked but not terminal: still known


def test_terminal_task_is_forgotten_once_its_terminal_status_is_acked() -> None:
    h = Harness()
    h.register()
    h.running(spec())
    h(e.ProcessExited(now=1.0, task_id="t1", exit_code=0))
    h(e.Acknowledged(now=1.1, acknowledgements=(("f1", "t1", u(1)), ("f1", "t1", u(2)))))
    assert h.core.task_state("t1") is S.FINISHED
    assert len(h.core.updates) == 1
    h(e.Acknowledged(now=1.2, acknowledgements=(("f1", "t1", u(3)), ("f1", "t1", u(3)))))
    assert h.core.task_state("t1") is None
    assert len(h.core.updates) == 0
    assert sent(h(e.StreamOpened(now=2.0))) == []


def test_nothing_is_sent_or_scheduled_while_disconnected() -> None:
    h = Harness()
    h.register()
    h(e.Disconnected(now=0.0))
    cmds = h(e.LaunchTasks(now=1.0, framework_id="f1", tasks=(spec(),)))
    assert cmds == [c.StartProcess(task=spec())]
    assert h(e.Tick(now=100.0)) == []


# --- shutdown and eviction ------------------------------------------------------------


def test_shutdown_kills_everything_then_stops_after_the_last_exit() -> None:
    h = Harness()
    h.register()
    h.running(spec("t1"))
    h.running(spec("t2"))
    cmds = h(e.Shutdown(now=1.0, reason="master said so"))
    assert sent(cmds) == [("t1", S.KILLING), ("t2", S.KILLING)]
    assert of(cmds, c.SignalGroup) == [
        c.SignalGroup(task_id="t1", framework_id="f1", signal=Signal.TERM),
        c.SignalGroup(task_id="t2", framework_id="f1", signal=Signal.TERM),
    ]
    assert cmds[0].statuses[0].reason is TaskReason.AGENT_SHUTDOWN  # type: ignore[attr-defined]
    assert sent(h(e.LaunchTasks(now=1.1, framework_id="f1", tasks=(spec("t3"),)))) == [
        ("t3", S.DROPPED)
    ]
    assert of(h(e.ProcessExited(now=1.2, task_id="t1", signal=15)), c.Stop) == []
    cmds = h(e.ProcessExited(now=1.3, task_id="t2", signal=15))
    assert sent(cmds) == [("t2", S.KILLED)]
    assert of(cmds, c.Stop) == [c.Stop()]
    assert cmds.index(c.Stop()) > 0  # the statuses go out before the stop


def test_shutdown_with_no_tasks_stops_at_once() -> None:
    h = Harness()
    h.register()
    assert of(h(e.Shutdown(now=0.0, reason="SIGTERM")), c.Stop) == [c.Stop()]


def test_replay_gives_identical_commands() -> None:
    script: list[e.Event] = [
        e.StreamOpened(now=0.0),
        e.Registered(now=0.0, agent_id="a1", heartbeat_interval=1.0),
        e.LaunchTasks(now=0.1, framework_id="f1", tasks=(spec("t1"), spec("t2"))),
        e.ProcessStarted(now=0.2, task_id="t1", pid=1),
        e.KillTask(now=0.3, task_id="t1"),
        e.Tick(now=1.0),
        e.ProcessExited(now=1.5, task_id="t1", signal=15),
        e.Tick(now=5.0),
    ]
    runs = []
    for _ in range(2):
        h = Harness()
        runs.append([h(ev) for ev in script])
    assert runs[0] == runs[1]


def test_a_batch_of_events_sends_one_status_message_with_what_one_by_one_would() -> None:
    def two_running(h: Harness) -> None:
        h.register()
        h(e.LaunchTasks(now=0.0, framework_id="f1", tasks=(spec("t1"), spec("t2"))))
        h.core.handle_many([e.ProcessStarted(now=0.5, task_id=t, pid=1) for t in ("t1", "t2")])

    one_by_one, batched = Harness(), Harness()
    two_running(one_by_one)
    two_running(batched)
    exits = [e.ProcessExited(now=1.0, task_id=t, exit_code=0) for t in ("t1", "t2")]
    separate = [cmd for ev in exits for cmd in one_by_one(ev)]
    together = batched.core.handle_many(exits)
    assert of(together, c.SendStatusUpdates) == [
        c.SendStatusUpdates(
            statuses=tuple(s for cmd in of(separate, c.SendStatusUpdates) for s in cmd.statuses)
        )
    ]
    assert len(of(together, c.ScheduleTick)) <= 1
    assert batched.core.task_state("t1") == one_by_one.core.task_state("t1") == S.FINISHED


def test_statuses_made_before_a_registration_in_the_same_batch_go_out_once() -> None:
    h = Harness(agent_id="a1")
    h.register()
    h(e.LaunchTasks(now=0.0, framework_id="f1", tasks=(spec("t1"),)))
    cmds = h.core.handle_many(
        [
            e.Disconnected(now=1.0),
            e.ProcessStarted(now=1.0, task_id="t1", pid=7),  # RUNNING, kept while disconnected
            e.StreamOpened(now=2.0),
            e.Registered(now=2.0, agent_id="a1", heartbeat_interval=5.0),
        ]
    )
    assert sent(cmds) == [("t1", S.STARTING), ("t1", S.RUNNING)]  # the resend, nothing twice


# --- tasks keyed by (framework, task) --------------------------------------------------


def test_two_frameworks_tasks_of_one_id_are_two_tasks() -> None:
    # As Mesos keys an agent's tasks (issue #41): neither framework's id collides with the
    # other's, and events, signals, acknowledgements reach the one they name.
    h = Harness()
    h.register()
    a, b = spec("job", framework_id="fa"), spec("job", framework_id="fb")
    h(e.LaunchTasks(now=1.0, framework_id="fa", tasks=(a,)))
    cmds = h(e.LaunchTasks(now=1.0, framework_id="fb", tasks=(b,)))
    assert [t.task.framework_id for t in of(cmds, c.StartProcess)] == ["fb"]  # type: ignore[attr-defined]
    for fw in ("fa", "fb"):
        h(e.ProcessStarted(now=1.1, task_id="job", framework_id=fw, pid=1))
    assert sorted(h.core.task_keys()) == [("fa", "job"), ("fb", "job")]
    cmds = h(e.KillTask(now=2.0, task_id="job", framework_id="fb"))
    assert of(cmds, c.SignalGroup) == [
        c.SignalGroup(task_id="job", framework_id="fb", signal=Signal.TERM)
    ]
    cmds = h(e.ProcessExited(now=2.1, task_id="job", framework_id="fb", signal=15))
    [(killed)] = [s for cmd in of(cmds, c.SendStatusUpdates) for s in cmd.statuses]  # type: ignore[attr-defined]
    assert (killed.framework_id, killed.state) == ("fb", S.KILLED)
    assert h.core.task_state("job", "fa") is S.RUNNING
    # An event naming no framework (an older master) finds no task when two share the id...
    assert h.core.task_state("job") is None
    h(e.Acknowledged(now=3.0, acknowledgements=(("", "job", killed.uuid),)))
    assert h.core.task_state("job", "fb") is S.KILLED
    # ... and the framework's acknowledgement settles it; then the id is a's alone.
    h(e.Acknowledged(now=3.1, acknowledgements=(("fb", "job", killed.uuid),)))
    assert h.core.task_keys() == [("fa", "job")]
    assert h.core.task_state("job") is S.RUNNING


# --- custom executors (Mesos' executor API) ------------------------------------------------


def test_a_custom_executor_reports_its_task_states_itself() -> None:
    h = Harness()
    h.register()
    task = spec(executor_id="e1")
    h(e.LaunchTasks(now=1.0, framework_id="f1", tasks=(task,)))
    # The process is the executor: its existing does not make the task RUNNING.
    assert sent(h(e.ProcessStarted(now=1.0, task_id="t1", framework_id="f1", pid=7))) == []
    assert h.core.task_state("t1", "f1") is S.STARTING
    out = h(e.ExecutorUpdate(now=2.0, task_id="t1", framework_id="f1", state=S.RUNNING))
    assert sent(out) == [("t1", S.RUNNING)]
    out = h(e.ExecutorUpdate(now=2.5, task_id="t1", framework_id="f1", state=S.RUNNING))
    assert sent(out) == [("t1", S.RUNNING)]  # a repeated state is a new status, as on Mesos
    out = h(
        e.ExecutorUpdate(now=3.0, task_id="t1", framework_id="f1", state=S.FINISHED, message="ok")
    )
    (update,) = of(out, c.SendStatusUpdates)
    assert isinstance(update, c.SendStatusUpdates)
    (finished,) = update.statuses
    assert (finished.state, finished.source, finished.message) == (
        S.FINISHED,
        TaskSource.EXECUTOR,
        "ok",
    )
    # The executor ending after its task did is its normal end: no status, no warning; the
    # master is told the executor ended (Mesos' ExitedExecutorMessage).
    out = h(e.ProcessExited(now=4.0, task_id="t1", framework_id="f1", exit_code=0))
    assert out == [
        c.SendExecutorTerminated(
            stimulus_id=out[0].stimulus_id,
            framework_id="f1",
            executor_id="e1",
            status=0,
            message="executor 'e1' exited with code 0",
        )
    ]
    # Relayed until the master acknowledges it, as any status.
    h(e.Acknowledged(now=5.0, acknowledgements=(("f1", "t1", finished.uuid),)))
    assert h.core.task_state("t1", "f1") is None


def _executor_ended(out: list[c.Command]) -> list[tuple[str, str, int]]:
    return [
        (x.framework_id, x.executor_id, x.status)
        for x in out
        if isinstance(x, c.SendExecutorTerminated)
    ]


def test_an_executors_end_is_told_with_its_wait_status_even_after_its_task_is_forgotten() -> None:
    h = Harness()
    h.register()
    h.running(spec(executor_id="e1"))
    h.running(spec("t2", executor_id="e2"))
    # Killed by a signal before its task ended: the task fails, and the end is told after it.
    out = h(e.ProcessExited(now=1.0, task_id="t2", framework_id="f1", signal=9))
    assert _executor_ended(out) == [("f1", "e2", 9)]
    assert isinstance(out[0], c.SendStatusUpdates)  # the task's FAILED first
    # Its task finished and was acknowledged (forgotten); the executor then exits with code 3.
    out = h(e.ExecutorUpdate(now=2.0, task_id="t1", framework_id="f1", state=S.FINISHED))
    (finished,) = [s for x in of(out, c.SendStatusUpdates) for s in x.statuses]  # type: ignore[attr-defined]
    h(e.Acknowledged(now=3.0, acknowledgements=(("f1", "t1", finished.uuid),)))
    assert h.core.task_state("t1", "f1") is None
    out = h(e.ProcessExited(now=4.0, task_id="t1", framework_id="f1", exit_code=3))
    assert _executor_ended(out) == [("f1", "e1", 3 << 8)]
    assert not of(out, c.LogWarning)  # its normal end, as when the task is still known
    # Told once; a command task's process is not an executor.
    assert _executor_ended(h(e.ProcessExited(now=5.0, task_id="t1", exit_code=3))) == []
    h.running(spec("t3"))
    assert _executor_ended(h(e.ProcessExited(now=6.0, task_id="t3", exit_code=1))) == []


def test_an_executors_end_is_not_told_while_unregistered() -> None:
    h = Harness()
    h.register()
    h.running(spec(executor_id="e1"))
    h(e.Disconnected(now=1.0))
    assert _executor_ended(h(e.ProcessExited(now=2.0, task_id="t1", signal=9))) == []


def test_an_executor_that_dies_fails_its_task_executor_terminated() -> None:
    h = Harness()
    h.register()
    h.running(spec(executor_id="e1"))
    h(e.ExecutorUpdate(now=1.0, task_id="t1", framework_id="f1", state=S.RUNNING))
    (update,) = of(h(e.ProcessExited(now=2.0, task_id="t1", signal=9)), c.SendStatusUpdates)
    assert isinstance(update, c.SendStatusUpdates)
    (failed,) = update.statuses
    assert (failed.state, failed.reason, failed.source) == (
        S.FAILED,
        TaskReason.EXECUTOR_TERMINATED,
        TaskSource.AGENT,
    )
    assert "executor 'e1' terminated (signal 9)" in failed.message


def test_a_killed_custom_executor_task_ends_as_its_executor_says() -> None:
    h = Harness()
    h.register()
    h.running(spec(executor_id="e1"))
    out = h(e.KillTask(now=1.0, task_id="t1", framework_id="f1"))
    # The shell turns the TERM into a KILL event to the executor.
    assert of(out, c.SignalGroup) == [
        c.SignalGroup(task_id="t1", framework_id="f1", signal=Signal.TERM)
    ]
    out = h(e.ExecutorUpdate(now=2.0, task_id="t1", framework_id="f1", state=S.KILLED))
    (update,) = of(out, c.SendStatusUpdates)
    assert isinstance(update, c.SendStatusUpdates)
    assert [(s.state, s.reason) for s in update.statuses] == [
        (S.KILLED, TaskReason.KILLED_BY_FRAMEWORK)
    ]


def test_an_impossible_executor_update_is_ignored_with_a_warning() -> None:
    h = Harness()
    h.register()
    h.running(spec(executor_id="e1"))
    h(e.ExecutorUpdate(now=1.0, task_id="t1", framework_id="f1", state=S.FINISHED))
    out = h(e.ExecutorUpdate(now=2.0, task_id="t1", framework_id="f1", state=S.RUNNING))
    assert sent(out) == [] and of(out, c.LogWarning)
    # A command task's executor is Corral's own: no ExecutorUpdate for it.
    h.running(spec("t2"))
    out = h(e.ExecutorUpdate(now=3.0, task_id="t2", framework_id="f1", state=S.FINISHED))
    assert sent(out) == [] and of(out, c.LogWarning)


# --- one executor, many tasks --------------------------------------------------------------


def test_a_task_for_a_running_executor_is_handed_to_it_and_ends_with_its_process() -> None:
    h = Harness()
    h.register()
    first = spec("t1", executor_id="e1", mem_limit=100.0, cpus=1.0)
    h.running(first)
    out = h(e.LaunchTasks(now=1.0, framework_id="f1", tasks=(spec("t2", executor_id="e1"),)))
    assert not of(out, c.StartProcess)
    (attach,) = of(out, c.AttachToExecutor)
    assert isinstance(attach, c.AttachToExecutor)
    assert (attach.task.task_id, attach.executor_task_id) == ("t2", "t1")
    # t2 names no memory limit: together, the executor has none.
    assert (attach.cpus, attach.mem_limit) == (1.0, 0.0)
    # Another framework's executor of that id is another executor: started.
    out = h(
        e.LaunchTasks(
            now=1.0, framework_id="f2", tasks=(spec("t1", framework_id="f2", executor_id="e1"),)
        )
    )
    assert of(out, c.StartProcess) and not of(out, c.AttachToExecutor)
    h(e.ProcessStarted(now=1.1, task_id="t2", framework_id="f1"))
    for task_id in ("t1", "t2"):
        h(e.ExecutorUpdate(now=2.0, task_id=task_id, framework_id="f1", state=S.RUNNING))
    # A kill of the second is its own (the shell makes the TERM a KILL event for it).
    out = h(e.KillTask(now=3.0, task_id="t2", framework_id="f1"))
    assert of(out, c.SignalGroup) == [
        c.SignalGroup(task_id="t2", framework_id="f1", signal=Signal.TERM)
    ]
    # The process ends: both tasks end with it, t2 KILLED (it was being killed), t1 FAILED;
    # the master is told once.
    out = h(e.ProcessExited(now=4.0, task_id="t1", framework_id="f1", signal=9))
    assert {(s.task_id, s.state) for s in sent_statuses(out)} == {
        ("t1", S.FAILED),
        ("t2", S.KILLED),
    }
    assert _executor_ended(out) == [("f1", "e1", 9)]
    # A later task of that executor id starts a new executor.
    out = h(e.LaunchTasks(now=5.0, framework_id="f1", tasks=(spec("t3", executor_id="e1"),)))
    assert of(out, c.StartProcess) and not of(out, c.AttachToExecutor)


def test_an_executors_tasks_outlive_its_first_and_share_its_memory_limit() -> None:
    h = Harness()
    h.register()
    h.running(spec("t1", executor_id="e1", mem_limit=100.0))
    out = h(
        e.LaunchTasks(
            now=1.0, framework_id="f1", tasks=(spec("t2", executor_id="e1", mem_limit=50.0),)
        )
    )
    (attach,) = of(out, c.AttachToExecutor)
    assert isinstance(attach, c.AttachToExecutor) and attach.mem_limit == 150.0
    h(e.ProcessStarted(now=1.1, task_id="t2", framework_id="f1"))
    for task_id in ("t1", "t2"):
        h(e.ExecutorUpdate(now=2.0, task_id=task_id, framework_id="f1", state=S.RUNNING))
    # 120 MiB is past t1's own limit, not the executor's.
    out = h(e.UsageMeasured(now=3.0, tasks=(TaskUsage("t1", mem=120.0, framework_id="f1"),)))
    assert not of(out, c.SignalGroup)
    out = h(e.ExecutorUpdate(now=4.0, task_id="t1", framework_id="f1", state=S.FINISHED))
    (finished,) = sent_statuses(out)
    h(e.Acknowledged(now=5.0, acknowledgements=(("f1", "t1", finished.uuid),)))
    assert h.core.task_state("t1", "f1") is None
    # Its first task forgotten, the executor runs on with t2; its end fails t2.
    out = h(e.ProcessExited(now=6.0, task_id="t1", framework_id="f1", exit_code=1))
    assert [(s.task_id, s.state, s.reason) for s in sent_statuses(out)] == [
        ("t2", S.FAILED, TaskReason.EXECUTOR_TERMINATED)
    ]
    assert _executor_ended(out) == [("f1", "e1", 1 << 8)]


def test_a_task_handed_to_an_executor_that_never_started_fails_with_it() -> None:
    h = Harness()
    h.register()
    both = (spec("t1", executor_id="e1"), spec("t2", executor_id="e1"))
    out = h(e.LaunchTasks(now=1.0, framework_id="f1", tasks=both))
    assert len(of(out, c.StartProcess)) == 1 and len(of(out, c.AttachToExecutor)) == 1
    out = h(e.LaunchFailed(now=2.0, task_id="t1", framework_id="f1", message="no such file"))
    assert [(s.task_id, s.state, s.reason) for s in sent_statuses(out)] == [
        ("t1", S.FAILED, TaskReason.COMMAND_LAUNCH_FAILED),
        ("t2", S.FAILED, TaskReason.COMMAND_LAUNCH_FAILED),
    ]
    assert _executor_ended(out) == []  # it never ran
