"""Conversions between the wire contract and the agent core's types."""

from __future__ import annotations

from enum import IntEnum

import pytest

from corral.agent import convert
from corral.agent.core import events as e
from corral.agent.core.commands import SendRegister
from corral.agent.core.types import (
    CommandSpec,
    SimulationSpec,
    Status,
    TaskReason,
    TaskSource,
    TaskState,
)
from corral.placement import parse_taints
from corral.resources import parse_resources
from corral.v1 import agent_pb2, common_pb2


@pytest.mark.parametrize(
    ("core_enum", "wire_enum"),
    [(TaskState, "TaskState"), (TaskReason, "TaskReason"), (TaskSource, "TaskSource")],
)
def test_core_enums_equal_the_wire_numbers(core_enum: type[IntEnum], wire_enum: str) -> None:
    descriptor = common_pb2.DESCRIPTOR.enum_types_by_name[wire_enum]
    prefix = descriptor.values[0].name.removesuffix("UNSPECIFIED")
    wire = {v.name.removeprefix(prefix): v.number for v in descriptor.values}
    if core_enum is TaskState:
        del wire["UNSPECIFIED"]  # no task is ever in it
    assert {m.name: int(m) for m in core_enum} == wire


def test_task_from_pb_keeps_everything_the_core_needs() -> None:
    info = common_pb2.TaskInfo(
        task_id="t",
        name="n",
        kill_grace_period_seconds=2.5,
        priority_class="high",
        command=common_pb2.CommandInfo(arguments=["echo", "hi"], environment={"A": "1"}),
        resources=common_pb2.Resources(mem=64),
        simulation=common_pb2.SimulationInfo(duration_seconds=1.5, exit_code=4),
    )
    spec = convert.task_from_pb(info, "fw")
    assert spec.framework_id == "fw"
    assert spec.command == CommandSpec(arguments=("echo", "hi"), environment={"A": "1"})
    assert spec.simulation == SimulationSpec(1.5, 4)
    assert (spec.kill_grace_period, spec.mem, spec.priority_class) == (2.5, 64.0, "high")
    assert convert.task_to_pb(spec) is info
    bare = convert.task_from_pb(common_pb2.TaskInfo(task_id="b", framework_id="own"), "fw")
    assert (bare.command, bare.simulation, bare.framework_id) == (None, None, "own")


def test_status_to_pb_sets_exit_code_only_when_known() -> None:
    st = Status(
        "t",
        "fw",
        "a",
        TaskState.FAILED,
        TaskReason.COMMAND_EXITED,
        "m",
        TaskSource.EXECUTOR,
        12.5,
        b"u" * 16,
        exit_code=3,
    )
    pb = convert.status_to_pb(st)
    assert (pb.state, pb.reason, pb.source, pb.exit_code, pb.uuid, pb.timestamp) == (
        common_pb2.TASK_STATE_FAILED,
        common_pb2.TASK_REASON_COMMAND_EXITED,
        common_pb2.TASK_SOURCE_EXECUTOR,
        3,
        b"u" * 16,
        12.5,
    )
    no_code = convert.status_to_pb(Status("t", "fw", "a", TaskState.RUNNING))
    assert not no_code.HasField("exit_code")


def test_register_carries_info_id_tasks_and_latest_statuses() -> None:
    info = convert.agent_info(
        "h",
        parse_resources("cpus:2;ports:[31000-31005]"),
        {"zone": "a"},
        parse_taints("gpu=yes:NoExecute"),
    )
    task = convert.task_from_pb(common_pb2.TaskInfo(task_id="t"), "fw")
    running = Status("t", "fw", "a1", TaskState.RUNNING, uuid=b"x" * 16)
    msg = convert.register_to_pb(
        SendRegister(agent_id="a1", secret="k", tasks=((task, running),), status_retry=2.5), info
    )
    reg = msg.register
    assert reg.secret == "k"
    assert reg.status_retry_seconds == 2.5
    assert (reg.info.id, reg.info.hostname, reg.info.resources.cpus) == ("a1", "h", 2.0)
    assert info.id == ""  # the template is not modified
    assert reg.info.taints[0].effect == common_pb2.TAINT_EFFECT_NO_EXECUTE
    assert [t.task_id for t in reg.tasks] == ["t"]
    assert [s.state for s in reg.task_statuses] == [common_pb2.TASK_STATE_RUNNING]


def test_a_reported_task_carries_its_frameworks_sealed_owner_as_it_was_launched() -> None:
    # The master's seal of the owner comes back unchanged (the agent never reads it), so a
    # master that forgot the framework learns whose it is (master/security/seals.py).
    launched = common_pb2.TaskInfo(
        task_id="t",
        framework_principal="team",
        framework_role="web",
        framework_seal=b"s" * 16,
        command=common_pb2.CommandInfo(value="x", secret_environment={"K": "v"}),
    )
    task = convert.task_from_pb(launched, "fw")
    running = Status("t", "fw", "a1", TaskState.RUNNING)
    info = convert.agent_info("h", parse_resources("cpus:2"), {}, ())
    [sent] = convert.register_to_pb(
        SendRegister(agent_id="a1", secret="k", tasks=((task, running),)), info
    ).register.tasks
    owner = (sent.framework_principal, sent.framework_role, sent.framework_seal)
    assert owner == ("team", "web", b"s" * 16)
    assert not sent.command.secret_environment


def test_master_messages_become_events() -> None:
    def events(**kw: object) -> list[e.Event]:
        return convert.events_from_pb(agent_pb2.MasterMessage(**kw), 5.0, "s")  # type: ignore[arg-type]

    assert events(registered=agent_pb2.Registered(agent_id="a", heartbeat_interval_seconds=2)) == [
        e.Registered(now=5.0, stimulus_id="s", agent_id="a", heartbeat_interval=2.0)
    ]
    assert events(heartbeat_interval=agent_pb2.HeartbeatInterval(seconds=20)) == [
        e.HeartbeatIntervalChanged(now=5.0, stimulus_id="s", heartbeat_interval=20.0)
    ]
    kills = agent_pb2.KillTasks(
        kills=[
            agent_pb2.KillTask(task_id="x", framework_id="f", kill_grace_period_seconds=1),
            agent_pb2.KillTask(task_id="y"),
        ]
    )
    assert [(k.task_id, k.grace_period) for k in events(kill_tasks=kills)] == [  # type: ignore[attr-defined]
        ("x", 1.0),
        ("y", 0.0),
    ]
    acks = agent_pb2.StatusAcknowledgements(
        acknowledgements=[agent_pb2.StatusAcknowledgement(task_id="t", uuid=b"1")]
    )
    assert events(acknowledgements=acks) == [
        e.Acknowledged(now=5.0, stimulus_id="s", acknowledgements=(("", "t", b"1"),))
    ]
    assert events(shutdown=agent_pb2.Shutdown()) == [
        e.Shutdown(now=5.0, stimulus_id="s", reason="requested by the master")
    ]
    (launch,) = events(
        launch_tasks=agent_pb2.LaunchTasks(
            framework_id="f", tasks=[common_pb2.TaskInfo(task_id="t")]
        )
    )
    assert isinstance(launch, e.LaunchTasks) and launch.tasks[0].framework_id == "f"
    assert events() == []
