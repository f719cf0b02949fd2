"""sdk.view: typed snapshots of statuses and offers, equal to the wire messages they come from."""

from __future__ import annotations

import typing

import pytest

from corral.frameworks import sdk
from corral.v1.common_pb2 import Range, Resources, Taint, TaintEffect


def test_state_and_reason_names_are_the_wire_enums_without_prefix() -> None:
    states = [n.removeprefix("TASK_STATE_") for n in sdk.TaskState.DESCRIPTOR.values_by_name]
    reasons = [n.removeprefix("TASK_REASON_") for n in sdk.TaskReason.DESCRIPTOR.values_by_name]
    assert list(typing.get_args(sdk.StateName)) == states
    assert list(typing.get_args(sdk.ReasonName)) == reasons


def test_a_status_view_names_its_state_and_reason_and_knows_an_unset_exit_code() -> None:
    failed = sdk.TaskStatus(
        task_id="t1",
        state=sdk.TaskState.TASK_STATE_FAILED,
        reason=sdk.TaskReason.TASK_REASON_COMMAND_EXITED,
        message="exit 3",
        agent_id="a1",
        framework_id="f1",
        timestamp=12.5,
        uuid=b"u",
        exit_code=3,
    )
    v = sdk.view(failed)
    assert (v.task_id, v.state, v.reason, v.exit_code) == ("t1", "FAILED", "COMMAND_EXITED", 3)
    assert (v.message, v.agent_id, v.framework_id, v.timestamp) == ("exit 3", "a1", "f1", 12.5)
    assert v.terminal and v.needs_ack and v.raw is failed

    preempted = sdk.view(
        sdk.TaskStatus(
            task_id="t2",
            state=sdk.TaskState.TASK_STATE_KILLED,
            reason=sdk.TaskReason.TASK_REASON_PREEMPTED,
        )
    )
    assert (preempted.state, preempted.reason, preempted.exit_code) == (
        "KILLED",
        "PREEMPTED",
        None,
    )
    assert not preempted.needs_ack

    # exit code 0 is set, not "unset": FINISHED tasks report it.
    finished = sdk.view(sdk.TaskStatus(state=sdk.TaskState.TASK_STATE_FINISHED, exit_code=0))
    assert finished.exit_code == 0
    running = sdk.view(sdk.TaskStatus(state=sdk.TaskState.TASK_STATE_RUNNING))
    assert (running.terminal, running.reason) == (False, "UNSPECIFIED")


def test_disruptions_are_the_cluster_s_ends_not_the_task_s() -> None:
    # Issue #40, defect 7: the one rule batch, gang and serving retry by.
    def ended(state: int, reason: int) -> sdk.TaskStatus:
        return sdk.TaskStatus(task_id="t", state=state, reason=reason)

    killed, failed = sdk.TaskState.TASK_STATE_KILLED, sdk.TaskState.TASK_STATE_FAILED
    r = sdk.TaskReason
    for reason in (
        r.TASK_REASON_PREEMPTED,
        r.TASK_REASON_EVICTED,
        r.TASK_REASON_AGENT_DRAINING,
        r.TASK_REASON_AGENT_SHUTDOWN,
        r.TASK_REASON_REVOCABLE_RESOURCES_RECLAIMED,
    ):
        assert sdk.is_disruption(ended(killed, reason)), r.Name(reason)
        assert sdk.view(ended(killed, reason)).disrupted
    for reason in (
        r.TASK_REASON_COMMAND_EXITED,
        r.TASK_REASON_MEMORY_LIMIT,
        r.TASK_REASON_KILLED_BY_OPERATOR,
        r.TASK_REASON_AGENT_UNREACHABLE,
        r.TASK_REASON_UNSPECIFIED,
    ):
        assert not sdk.is_disruption(ended(failed, reason)), r.Name(reason)
    # Only an end is one: a live task's status is not, whatever its reason.
    running = ended(sdk.TaskState.TASK_STATE_RUNNING, r.TASK_REASON_PREEMPTED)
    assert not sdk.is_disruption(running) and not sdk.view(running).disrupted


def test_an_offer_view_has_floats_port_ranges_attributes_and_taints() -> None:
    offer = sdk.Offer(
        id="o1",
        agent_id="a1",
        hostname="h1",
        resources=Resources(
            cpus=2.5,
            mem=1024,
            disk=10,
            gpus=1,
            ports=[Range(begin=31005, end=31006), Range(begin=31000, end=31001)],
        ),
        attributes={"zone": "a", "rack": "r1"},
        taints=[Taint(key="spot", value="true", effect=TaintEffect.TAINT_EFFECT_NO_SCHEDULE)],
        gang_id="g1",
    )
    v = sdk.view(offer)
    assert (v.id, v.agent_id, v.hostname, v.gang_id) == ("o1", "a1", "h1", "g1")
    assert (v.cpus, v.mem, v.disk, v.gpus) == (2.5, 1024.0, 10.0, 1.0)
    assert v.ports == ((31000, 31001), (31005, 31006))
    assert v.port_count == 4
    assert v.port_list() == [31000, 31001, 31005, 31006]
    assert dict(v.attributes) == {"zone": "a", "rack": "r1"}
    assert v.taints == ("spot=true:NoSchedule",)
    with pytest.raises(TypeError):
        v.attributes["zone"] = "b"  # type: ignore[index]  # read-only, like the view


def test_views_are_frozen_and_view_refuses_other_messages() -> None:
    v = sdk.view(sdk.TaskStatus(task_id="t"))
    with pytest.raises(AttributeError):
        v.task_id = "u"  # type: ignore[misc]
    with pytest.raises(TypeError, match="TaskStatus or an Offer"):
        sdk.view(sdk.TaskInfo())  # type: ignore[call-overload]
