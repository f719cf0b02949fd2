"""A framework preempting its own tasks (framework_calls.py rule 4): a KILL that says reason
PREEMPTED and for whom (the job service reclaiming a queue's quota) ends the task KILLED with
that reason and message, as the master's own preemption does, also when the framework is torn
down before its agent reports; anything else a kill says is refused and changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.framework_calls import MAX_KILL_MESSAGE
from corral.master.core.refusals import CallRejected, Refusal
from corral.master.core.types import Requester, Status, TaskReason, TaskState
from corral.master.wire.call_events import CallEvents
from corral.master.wire.convert import WireError
from corral.v1 import common_pb2, scheduler_pb2
from tests.unit.core_harness import Harness, of, status, task

WHY = "reclaimed by queue team-b (cohort ml): needs 4 cpus of its nominal quota"


def running(h: Harness, *task_ids: str) -> tuple[str, str]:
    aid, _ = h.add_agent()
    fid, _ = h.subscribe("job:a2")
    [offer] = h.offers_for(fid)
    h.accept(fid, [offer.offer_id], *(task(t) for t in task_ids))
    h.agent_updates(aid, *(status(t, fid, aid, TaskState.RUNNING) for t in task_ids))
    return aid, fid


def kill(h: Harness, fid: str, task_id: str, **why: Any) -> list[cmd.Command]:
    return h.handle(ev.Kill(**h.call_base(fid), task_id=task_id, **why))


def killed_by_agent(h: Harness, aid: str, fid: str, task_id: str) -> Status:
    """The agent's KILLED (it knows only that it killed it); the status the framework gets."""
    out = h.agent_updates(aid, status(task_id, fid, aid, TaskState.KILLED, uuid=b"k"))
    [update] = of(cmd.SendUpdates, out)
    [forwarded] = update.statuses
    return forwarded


def ended(h: Harness, fid: str, task_id: str) -> Status:
    done = h.core.completed.get((fid, task_id))
    assert done is not None, f"task {task_id} has not ended"
    return done.status


def test_a_kill_saying_preempted_ends_the_task_preempted_with_its_message() -> None:
    h = Harness()
    aid, fid = running(h, "t1")
    out = kill(h, fid, "t1", reason=TaskReason.PREEMPTED, message=WHY)
    [send] = of(cmd.SendKill, out)
    assert (send.agent_id, send.task_id) == (aid, "t1")
    [event] = of(cmd.ClusterEvent, out)
    assert (event.kind, event.reason, event.subject) == ("task_preempted", "Preempted", "t1")
    assert event.message == f"task of framework {fid} on agent {aid}: {WHY}"
    forwarded = killed_by_agent(h, aid, fid, "t1")
    assert (forwarded.state, forwarded.reason, forwarded.message) == (
        TaskState.KILLED,
        TaskReason.PREEMPTED,
        WHY,
    )
    assert (ended(h, fid, "t1").reason, ended(h, fid, "t1").message) == (TaskReason.PREEMPTED, WHY)


def test_a_plain_kill_says_nothing_and_no_message_has_a_default() -> None:
    h = Harness()
    aid, fid = running(h, "t1", "t2")
    out = kill(h, fid, "t1")
    assert of(cmd.ClusterEvent, out) == [] and len(of(cmd.SendKill, out)) == 1
    assert killed_by_agent(h, aid, fid, "t1").reason is not TaskReason.PREEMPTED
    kill(h, fid, "t2", reason=TaskReason.PREEMPTED)
    assert killed_by_agent(h, aid, fid, "t2").message == "preempted by its framework job:a2"


def test_torn_down_before_its_agent_reports_the_task_stays_preempted() -> None:
    # The job service kills a reclaimed job's tasks saying why, then tears its framework down
    # at once: the removal must not turn the cause into FRAMEWORK_REMOVED.
    h = Harness()
    _aid, fid = running(h, "t1", "t2")
    kill(h, fid, "t1", reason=TaskReason.PREEMPTED, message=WHY)
    out = h.handle(ev.Teardown(**h.call_base(fid)))
    assert {k.task_id for k in of(cmd.SendKill, out)} == {"t1", "t2"}
    assert (ended(h, fid, "t1").state, ended(h, fid, "t1").reason) == (
        TaskState.KILLED,
        TaskReason.PREEMPTED,
    )
    assert ended(h, fid, "t1").message == WHY
    assert ended(h, fid, "t2").reason is TaskReason.FRAMEWORK_REMOVED  # no cause of its own


def test_the_first_cause_stays_the_cause() -> None:
    h = Harness()
    aid, fid = running(h, "t1", "t2")
    kill(h, fid, "t1", reason=TaskReason.PREEMPTED, message=WHY)
    again = kill(h, fid, "t1", reason=TaskReason.PREEMPTED, message="another queue")
    assert of(cmd.ClusterEvent, again) == []  # said once
    assert killed_by_agent(h, aid, fid, "t1").message == WHY
    # An operator's kill first: the framework's preemption after it does not rename it.
    h.handle(
        ev.KillTasks(**h.base(), requester=Requester("10.0.0.7:1", "alice"), tasks=(("", "t2"),))
    )
    kill(h, fid, "t2", reason=TaskReason.PREEMPTED, message=WHY)
    assert killed_by_agent(h, aid, fid, "t2").reason is TaskReason.KILLED_BY_OPERATOR


def test_a_kill_of_a_task_whose_agent_is_away_keeps_its_cause_for_later() -> None:
    h = Harness()
    aid, fid = running(h, "t1")
    h.close_agent(aid)
    out = kill(h, fid, "t1", reason=TaskReason.PREEMPTED, message=WHY)
    assert of(cmd.SendKill, out) == []  # sent when it re-registers
    assert [e.kind for e in of(cmd.ClusterEvent, out)] == ["task_preempted"]
    assert h.core.frameworks[fid].tasks["t1"].killed_for == (TaskReason.PREEMPTED, WHY)


@pytest.mark.parametrize(
    ("why", "says"),
    [
        (
            {"reason": TaskReason.EVICTED},
            "kill reason EVICTED: a framework's kill may give reason ",
        ),
        ({"reason": TaskReason.KILLED_BY_OPERATOR, "message": WHY}, "reason PREEMPTED only"),
        ({"message": WHY}, "kill message given without a reason"),
        (
            {"reason": TaskReason.PREEMPTED, "message": "x" * (MAX_KILL_MESSAGE + 1)},
            f"more than the limit of {MAX_KILL_MESSAGE}",
        ),
    ],
)
def test_a_kill_saying_anything_else_is_refused_and_changes_nothing(
    why: dict[str, Any], says: str
) -> None:
    h = Harness()
    _aid, fid = running(h, "t1")
    with pytest.raises(CallRejected) as info:
        kill(h, fid, "t1", **why)
    assert info.value.code is Refusal.INVALID_ARGUMENT and says in info.value.message
    t1 = h.core.frameworks[fid].tasks["t1"]
    assert not t1.kill_requested and t1.killed_for is None


class _Stamps:
    clock = staticmethod(lambda: 1.0)

    def stimulus(self, kind: str) -> str:
        return f"{kind}-1"


def test_the_wire_carries_the_reason_and_refuses_unknown_ones() -> None:
    decode = CallEvents(_Stamps()).kill
    caller = scheduler_pb2.Caller(framework_id="f1", stream_id="s1")
    plain = decode(scheduler_pb2.KillRequest(caller=caller, task_id="t1"))
    assert isinstance(plain, ev.Kill) and plain.reason is None and plain.message == ""
    said = decode(
        scheduler_pb2.KillRequest(
            caller=caller, task_id="t1", reason=common_pb2.TASK_REASON_PREEMPTED, message=WHY
        )
    )
    assert isinstance(said, ev.Kill) and (said.reason, said.message) == (TaskReason.PREEMPTED, WHY)
    with pytest.raises(WireError, match="reason: unknown task reason 99"):
        decode(scheduler_pb2.KillRequest(caller=caller, task_id="t1", reason=99))  # type: ignore[arg-type]
